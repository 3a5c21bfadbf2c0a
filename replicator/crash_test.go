package replicator

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// envDaemon makes the test binary run the daemon on the given config
// instead of the tests, so a test can SIGKILL a real process.
const envDaemon = "BINLOG2CH_TEST_DAEMON_CONFIG"

func daemonMain(path string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg, err := LoadConfig(path)
	if err != nil {
		log.Error("config", "error", err)
		return 2
	}
	if prof := os.Getenv("BINLOG2CH_TEST_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	r, err := New(ctx, cfg, log)
	if err != nil {
		log.Error("start", "error", err)
		return 1
	}
	defer r.Close()
	if err := r.Run(ctx); err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// daemon is the daemon running in a child process.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited; cmd.ProcessState is then set
}

// startDaemon runs the daemon in a child process, logging to a file.
func (h *harness) startDaemon(logPath string) *daemon {
	h.t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envDaemon+"="+h.path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(d.done) }()
	return d
}

// TestKillAndRestart SIGKILLs the daemon at random moments while a mixed
// workload (inserts, updates, key changes, deletes, an ALTER) streams in,
// restarts it, and ends with ClickHouse equal to MySQL.
func TestKillAndRestart(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(
		"CREATE TABLE "+a+".k1 (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40))",
		"CREATE TABLE "+a+".k2 (id BIGINT UNSIGNED PRIMARY KEY, amount DECIMAL(12,2), at DATETIME(3))",
	)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var workErr error
	var altered atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		rnd := rand.New(rand.NewPCG(1, 2))
		conn, err := h.my.Conn(context.Background())
		if err != nil {
			workErr = err
			return
		}
		defer conn.Close()
		next := 0
		for i := 0; !stop.Load(); i++ {
			stmts := []string{"BEGIN"}
			for j := 0; j < 1+rnd.IntN(20); j++ {
				id := rnd.IntN(next + 1)
				switch p := rnd.IntN(10); {
				case p < 5:
					next++
					stmts = append(stmts, fmt.Sprintf("INSERT INTO %s.k1 (id, v, s) VALUES (%d, %d, 'ins %d')", a, next, rnd.IntN(1000), i))
					stmts = append(stmts, fmt.Sprintf("INSERT INTO %s.k2 VALUES (%d, %d.%02d, NOW(3))", a, next, rnd.IntN(100000), rnd.IntN(100)))
				case p < 7:
					stmts = append(stmts, fmt.Sprintf("UPDATE %s.k1 SET v = v + 1, s = 'upd %d' WHERE id = %d", a, i, id))
				case p < 8:
					stmts = append(stmts, fmt.Sprintf("UPDATE IGNORE %s.k1 SET id = id + 1000000 WHERE id = %d", a, id))
				default:
					stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.k2 WHERE id = %d", a, id))
				}
			}
			stmts = append(stmts, "COMMIT")
			for _, q := range stmts {
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					workErr = fmt.Errorf("%s: %w", q, err)
					return
				}
			}
			if i == 300 {
				if _, err := conn.ExecContext(context.Background(), "ALTER TABLE "+a+".k1 ADD COLUMN added INT NOT NULL DEFAULT 42 AFTER id"); err != nil {
					workErr = err
					return
				}
				altered.Store(true)
			}
			time.Sleep(time.Millisecond)
		}
	}()

	logPath := filepath.Join(t.TempDir(), "daemon.log")
	rnd := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 6; round++ {
		d := h.startDaemon(logPath)
		time.Sleep(time.Duration(300+rnd.IntN(1500)) * time.Millisecond)
		if err := d.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-d.done
	}
	stop.Store(true)
	wg.Wait()
	if workErr != nil {
		t.Fatal(workErr)
	}
	if !altered.Load() {
		t.Log("the workload ended before its ALTER TABLE")
	}
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	cols := []string{"id", "v", "s"}
	if altered.Load() {
		cols = append(cols, "added")
	}
	var n1, n2 int
	_ = h.my.QueryRow("SELECT (SELECT COUNT(*) FROM "+a+".k1), (SELECT COUNT(*) FROM "+a+".k2)").Scan(&n1, &n2)
	data, _ := os.ReadFile(logPath)
	t.Logf("k1 %d rows, k2 %d rows; daemon started %d times", n1, n2, strings.Count(string(data), "msg=connected"))
	h.assertEqual(a, "k1", cols)
	h.assertEqual(a, "k2", []string{"id", "amount", "at"})
	if t.Failed() {
		data, _ := os.ReadFile(logPath)
		t.Logf("daemon log (tail):\n%s", tail(string(data), 6000))
	}
}

func (h *harness) waitCaughtUpProcess(d *daemon, logPath string, timeout time.Duration) {
	h.t.Helper()
	defer func() {
		if h.t.Failed() {
			data, _ := os.ReadFile(logPath)
			h.t.Logf("daemon log (tail):\n%s", tail(string(data), 6000))
		}
	}()
	h.waitCaughtUpOr(nil, d.done, timeout)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
