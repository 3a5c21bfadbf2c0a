package replicator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// envDaemon makes the test binary run the daemon on the given config
// instead of the tests, so a test can SIGKILL a real process.
const envDaemon = "BINLOG2CH_TEST_DAEMON_CONFIG"

func daemonMain(path string) int {
	return childMain(path, "run", func(ctx context.Context, r *Replicator) error { return r.Run(ctx) })
}

// childMain is a child process's main: it loads the config, profiles when
// BINLOG2CH_TEST_CPUPROFILE names a file, connects, and runs work until
// SIGTERM/SIGINT. Exit codes as the binary's: 2 config, 1 failure.
func childMain(path, what string, work func(context.Context, *Replicator) error) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg, err := config.Load(path)
	if err != nil {
		log.Error("config", "error", err)
		return 2
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent) // as the binary's run does
	}
	if prof := os.Getenv("BINLOG2CH_TEST_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if prof := os.Getenv("BINLOG2CH_TEST_HEAPPROFILE"); prof != "" {
		defer heapAtPeak(prof)()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	r, err := New(ctx, cfg, log)
	if err != nil {
		log.Error("start", "error", err)
		return 1
	}
	defer r.Close()
	if err := pauseAfterRows(r, log); err != nil {
		log.Error("pause", "error", err)
		return 2
	}
	if v := os.Getenv(envPauseAtCutOver); v != "" {
		r.hooks.migrationStatement = func(st source.Statement, t schema.TableName) {
			if t.Table != v || !slices.ContainsFunc(st.Effects, func(ef ddl.Effect) bool { return ef.Kind == ddl.RenameTable }) {
				return
			}
			log.Info("test pause at the cut-over: holding the reader", "table", t.String(), "statement", st.Text)
			select {} // until the test kills the process
		}
	}
	if v := os.Getenv(envPauseAtDrop); v != "" {
		r.sink.OnDrop(func(db, table string) {
			if table != v {
				return
			}
			log.Info("test pause at the drop: holding the writer", "table", db+"."+table)
			select {} // until the test kills the process
		})
	}
	if v := os.Getenv(envPauseInCascade); v != "" {
		if err := pauseInCascade(r, v, log); err != nil {
			log.Error("pause", "error", err)
			return 2
		}
	}
	if v := os.Getenv(envPauseAfterChunks); v != "" {
		if err := pauseAfterChunks(r, v); err != nil {
			log.Error("pause", "error", err)
			return 2
		}
	}
	// SIGHUP reloads the table selection, as binlog2ch run does.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			next, err := config.Load(path)
			if err == nil {
				err = r.Reload(next.Tables)
			}
			if err != nil {
				log.Error("reload", "error", err)
			}
		}
	}()
	if err := work(ctx, r); err != nil {
		log.Error(what, "error", err)
		return 1
	}
	return 0
}

// heapAtPeak writes the heap profile of the largest live heap seen (checked
// every 10 ms, after each GC) to path when the returned func runs: what the
// peak RSS is made of, which the heap at exit does not tell.
func heapAtPeak(path string) func() {
	var best []byte
	var peak uint64
	var lastGC uint32
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.NumGC == lastGC {
				continue
			}
			lastGC = ms.NumGC
			if ms.HeapAlloc > peak {
				peak = ms.HeapAlloc
				var buf bytes.Buffer
				if pprof.Lookup("heap").WriteTo(&buf, 0) == nil {
					best = buf.Bytes()
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		_ = os.WriteFile(path, best, 0o644)
	}
}

// envPauseAfterRows=N makes a child's binlog reader stop for good before
// the N+1st rows event of a replicated table: the writers flush what they
// hold, the checkpoint stays before the transaction, and the test kills
// it there.
const envPauseAfterRows = "BINLOG2CH_TEST_PAUSE_AFTER_ROWS"

// envPauseAtDrop=T makes a child's writer of table T stop for good when it
// drops T's ClickHouse table, between the registry and the DROP.
const envPauseAtDrop = "BINLOG2CH_TEST_PAUSE_AT_DROP"

// envPauseAfterChunks=N makes a child's snapshot readers stop for good
// before the N+1st chunk, so a test kills it mid-copy however fast the
// machine copies.
const envPauseAfterChunks = "BINLOG2CH_TEST_PAUSE_AFTER_CHUNKS"

func pauseAfterChunks(r *Replicator, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", envPauseAfterChunks, err)
	}
	var read atomic.Int64
	r.hooks.beforeChunk = func(context.Context, schema.TableName) {
		if read.Add(1) > n {
			select {} // until the test kills the process
		}
	}
	return nil
}

// daemon is the daemon running in a child process.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited; cmd.ProcessState is then set
}

// killAndRestart SIGKILLs d, starts the daemon again on the same log
// (stopped with SIGTERM after the test) and waits until it has caught up.
func (h *harness) killAndRestart(d *daemon, logPath string) *daemon {
	h.t.Helper()
	if err := d.cmd.Process.Kill(); err != nil {
		h.t.Fatal(err)
	}
	<-d.done
	d = h.startDaemon(logPath)
	h.t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	})
	h.waitCaughtUpProcess(d, logPath, 60*time.Second)
	return d
}

// startDaemon runs the daemon in a child process, logging to a file.
func (h *harness) startDaemon(logPath string, env ...string) *daemon {
	h.t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), envDaemon+"="+h.path), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(d.done) }()
	return d
}

// waitCheckpointPast waits until the daemon's checkpoint is past prev and
// returns it.
func (h *harness) waitCheckpointPast(d *daemon, logPath string, prev source.Position, timeout time.Duration) source.Position {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		cp, err := state.Read(context.Background(), h.cfg, h.ch)
		if err != nil {
			h.t.Fatal(err)
		}
		if cp != nil && prev.Before(cp.Position) {
			return cp.Position
		}
		select {
		case <-d.done:
			data, _ := os.ReadFile(logPath)
			h.t.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the checkpoint did not pass %s within %s", prev, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFaultKillAndRestart SIGKILLs the daemon (a child process) at random
// moments after each start's first checkpoint, ten times, while a mixed workload streams in (inserts, updates,
// key changes, deletes, ADD COLUMN ... AFTER, MODIFY COLUMN, a table
// created, written and dropped), restarting it each time; at the end
// verify finds ClickHouse equal to MySQL.
func TestFaultKillAndRestart(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	w := h.startWorkload(a, 1, time.Millisecond)
	defer w.finish()

	logPath := filepath.Join(t.TempDir(), "daemon.log")
	rnd := rand.New(rand.NewPCG(3, 4))
	started := time.Now()
	var last source.Position
	for round := 0; round < 10; round++ {
		d := h.startDaemon(logPath)
		// Killed once it has checkpointed past the last round's
		// checkpoint, so every kill hits a daemon at work however slowly
		// it starts, then somewhere within the next few batches.
		last = h.waitCheckpointPast(d, logPath, last, 60*time.Second)
		time.Sleep(time.Duration(rnd.IntN(500)) * time.Millisecond)
		if err := d.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the SIGKILLed daemon did not exit within 10s")
		}
	}
	// Past all of the workload's DDL, so every kill above may have hit it.
	w.waitIters(300, 60*time.Second)
	w.finish()
	t.Logf("10 kills in %s; the workload ran %d transactions", time.Since(started).Round(time.Millisecond), w.iters.Load())
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	data, _ := os.ReadFile(logPath)
	t.Logf("the daemon connected %d times in 11 starts", strings.Count(string(data), "msg=connected"))
	h.assertWorkload(a)
	if t.Failed() {
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

// TestFaultKilledAtDrop: the daemon is SIGKILLed while its writer drops a
// table the MySQL DROP TABLE dropped, after the checkpoint's last save
// before it. The restarted daemon reads the binlog again from before the
// DROP, the table's last rows included, and ends with the table gone and
// the others equal to MySQL (it stopped with "no longer exists, though
// binlog2ch created it" when the DROP went before the registry forgot the
// table, and the kill came between the two).
func TestFaultKilledAtDrop(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".k1 (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".k3 (id INT PRIMARY KEY, s VARCHAR(20))",
		"INSERT INTO "+a+".k1 VALUES (1, 1), (2, 2)", "INSERT INTO "+a+".k3 VALUES (1, 'one'), (2, 'two')")
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath, envPauseAtDrop+"=k3")
	h.waitCaughtUpProcess(d, logPath, 60*time.Second)
	h.exec("UPDATE "+a+".k3 SET s = 'upd'", "INSERT INTO "+a+".k1 VALUES (3, 3)", "DROP TABLE "+a+".k3", "INSERT INTO "+a+".k1 VALUES (4, 4)")
	waitLogCount(t, d, logPath, "test pause at the drop", 1, 60*time.Second)
	h.killAndRestart(d, logPath)
	h.verifyEqual("k1")
	if h.chTableExists(a, "k3") {
		t.Errorf("%s.k3 still exists in ClickHouse after DROP TABLE", a)
	}
}
