package replicator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/hostcost"
	"github.com/binlog2ch/binlog2ch/state"
)

// BenchmarkOnlineCopyLag: a 300k-row binlog_field_test table enters the
// set at a SIGHUP and
// is copied online by the daemon (a child process) while another table
// gets a row every 200 ms. It reports that table's lag, per row, from its
// commit to its arrival in ClickHouse (max and p99), the copy's rate, and
// the daemon's peak RSS. Run with -benchtime 1x (make bench does).
func BenchmarkOnlineCopyLag(b *testing.B) {
	for i := 0; i < b.N; i++ {
		onlineCopyLag(b)
	}
}

func onlineCopyLag(b *testing.B) {
	const rows = 300_000
	h := newHarness(b, 1, "")
	a := h.dbs[0]
	// Bifrost's 30-column benchmark table, out of the set until the reload.
	h.fillFieldTest(a, rows, benchMaxLen)
	h.exec("RENAME TABLE "+a+".binlog_field_test_1 TO "+a+".skip_big", "CREATE TABLE "+a+".t (id INT PRIMARY KEY, at DATETIME(6))")
	logPath := filepath.Join(b.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, time.Minute)

	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	sent := map[int]time.Time{}
	var lags []time.Duration
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // a row every 200 ms
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for id := 1; ; id++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if _, err := h.my.Exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d, NOW(6))", a, id)); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			sent[id] = time.Now()
			mu.Unlock()
		}
	}()
	go func() { // each row's arrival
		defer wg.Done()
		last := 0
		for ctx.Err() == nil {
			rs, err := h.ch.Query(context.Background(), fmt.Sprintf("SELECT id FROM `%s`.t WHERE id > %d ORDER BY id", a, last))
			if err != nil && strings.Contains(err.Error(), "doesn't exist") {
				time.Sleep(20 * time.Millisecond) // before the table's first row
				continue
			}
			if err != nil {
				b.Error(err)
				return
			}
			now := time.Now()
			for rs.Next() {
				var id int32
				if err := rs.Scan(&id); err != nil {
					b.Error(err)
				}
				mu.Lock()
				if at, ok := sent[int(id)]; ok {
					lags = append(lags, now.Sub(at))
				}
				mu.Unlock()
				last = max(last, int(id))
			}
			rs.Close()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second) // the lag before the copy

	data, err := os.ReadFile(h.path)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(h.path, []byte(strings.Replace(string(data), `exclude: ["*.skip_*"]`, "exclude: []", 1)), 0o600); err != nil {
		b.Fatal(err)
	}
	if h.cfg, err = config.Load(h.path); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		b.Fatal(err)
	}
	// Copied once the checkpoint has the new selection and no copy left.
	for {
		cp, err := state.LoadFile(h.cfg.StateDir)
		if err != nil {
			b.Fatal(err)
		}
		if cp != nil && cp.Selection != nil && len(cp.Selection.Exclude) == 0 && len(cp.Tables) == 0 {
			break
		}
		select {
		case <-d.done:
			data, _ := os.ReadFile(logPath)
			b.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatal("the online copy did not finish within 10 minutes")
		}
	}
	copySeconds := time.Since(start).Seconds()
	b.StopTimer()
	mu.Lock()
	during := 0
	for _, at := range sent {
		if at.After(start) && at.Before(start.Add(time.Duration(copySeconds*float64(time.Second)))) {
			during++
		}
	}
	mu.Unlock()
	time.Sleep(2 * time.Second) // the lag after it
	stop()
	wg.Wait()
	hwm := hostcost.PeakRSS(d.cmd.Process.Pid)
	slices.Sort(lags)
	if len(lags) == 0 {
		b.Fatal("no row of the written table arrived")
	}
	p99 := lags[(len(lags)*99)/100]
	b.ReportMetric(lags[len(lags)-1].Seconds(), "max_lag_s")
	b.ReportMetric(p99.Seconds(), "p99_lag_s")
	b.ReportMetric(float64(rows)/copySeconds, "copy_rows/s")
	b.ReportMetric(hwm, "peak_rss_MiB")
	b.Logf("online copy of %d rows in %.1f s; %d rows of the written table (%d during the copy), lag max %s p99 %s; daemon peak RSS %.0f MiB",
		rows, copySeconds, len(lags), during, lags[len(lags)-1].Round(time.Millisecond), p99.Round(time.Millisecond), hwm)
	h.verifyEqual("t", "skip_big")
}
