package replicator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCatchUpExcluded measures what the rows of a table nobody
// replicates cost: BINLOG2CH_BENCH_ROWS (default 1M) rows of
// skip_field_test (binlog_field_test under a name tables.exclude drops),
// caught up over by a daemon (a child process) started from a checkpoint
// before them; as many of skip_old_test (the same created with
// mysql56_temporal_format=OFF: DATETIME, TIME and TIMESTAMP of before
// MySQL 5.6, a table whose rows binlog2ch does not decode itself, as
// MySQL's JSON would be); then as many rows of binlog_field_test_1, which
// it applies. Each start's CPU
// (user+sys, the child's rusage) less that of a start with nothing to
// read is the cost of its rows: reported per million rows, and each
// excluded table's against the included one's. BINLOG2CH_TEST_CPUPROFILE
// profiles skip_old_test's daemon. Run it with -benchtime 1x.
func BenchmarkCatchUpExcluded(b *testing.B) {
	rows := 1_000_000
	if v := os.Getenv("BINLOG2CH_BENCH_ROWS"); v != "" {
		rows, _ = strconv.Atoi(v)
	}
	for i := 0; i < b.N; i++ {
		benchCatchUpExcluded(b, rows)
	}
}

func benchCatchUpExcluded(b *testing.B, rows int) {
	b.StopTimer()
	h := newHarness(b, 1, "batch: {"+os.Getenv("BINLOG2CH_BENCH_BATCH")+"}\n")
	db := h.dbs[0]
	profile := os.Getenv("BINLOG2CH_TEST_CPUPROFILE")
	os.Unsetenv("BINLOG2CH_TEST_CPUPROFILE") // only the excluded run's daemon profiles
	defer os.Setenv("BINLOG2CH_TEST_CPUPROFILE", profile)

	// A start with nothing to read: start-up, the wait for the checkpoint
	// and shutdown, which the other two starts also pay.
	// The first start may set up what later ones find: the second is the
	// baseline.
	idle := min(h.catchUpRun("idle", nil), h.catchUpRun("idle", nil))
	h.fillFieldTestAs(db, "skip_field_test", rows, benchMaxLen)
	b.StartTimer()
	excluded := h.catchUpRun("excluded", nil)
	b.StopTimer()
	h.exec("SET GLOBAL mysql56_temporal_format = OFF")
	h.fillFieldTestAs(db, "skip_old_test", rows, benchMaxLen)
	h.exec("SET GLOBAL mysql56_temporal_format = ON")
	var env []string
	if profile != "" {
		env = append(env, "BINLOG2CH_TEST_CPUPROFILE="+profile)
	}
	excludedOld := h.catchUpRun("excluded-old", env)
	for _, t := range []string{"skip_field_test", "skip_old_test"} {
		if err := h.ch.Exec(context.Background(), "SELECT 1 FROM "+db+"."+t+" LIMIT 1"); err == nil {
			b.Fatalf("ClickHouse has %s, which tables.exclude drops", t)
		}
	}
	h.fillFieldTestAs(db, "binlog_field_test_1", rows, benchMaxLen)
	included := h.catchUpRun("included", nil)
	var n uint64
	if err := h.ch.QueryRow(context.Background(), fmt.Sprintf("SELECT count() FROM %s.binlog_field_test_1 FINAL", db)).Scan(&n); err != nil {
		b.Fatal(err)
	}
	if int(n) != rows {
		b.Fatalf("ClickHouse holds %d rows, want %d", n, rows)
	}
	perM := func(cpu time.Duration) float64 { return (cpu - idle).Seconds() / (float64(rows) / 1e6) }
	ex, exOld, in := perM(excluded), perM(excludedOld), perM(included)
	b.ReportMetric(ex, "excluded-cpu-s/Mrows")
	b.ReportMetric(exOld, "excluded-old-cpu-s/Mrows")
	b.ReportMetric(in, "included-cpu-s/Mrows")
	b.ReportMetric(ex/in, "excluded/included")
	b.ReportMetric(exOld/in, "excluded-old/included")
	b.Logf("%d rows each; daemon CPU: idle start %.2fs, excluded %.2fs, excluded with old temporal types %.2fs, included %.2fs; per million rows beyond the idle start: excluded %.3f CPU-s (ratio %.3f), with old temporal types %.3f (ratio %.3f), included %.3f",
		rows, idle.Seconds(), excluded.Seconds(), excludedOld.Seconds(), included.Seconds(), ex, ex/in, exOld, exOld/in, in)
}

// catchUpRun starts the daemon from its checkpoint, waits until the
// checkpoint reaches the binlog's current end, stops it and returns its
// CPU time (user+sys).
func (h *harness) catchUpRun(name string, env []string) time.Duration {
	h.t.Helper()
	logPath := filepath.Join(h.t.TempDir(), name+".log")
	start := time.Now()
	d := h.startDaemon(logPath, env...)
	// The checkpoint may be at the binlog's end before the daemon reads
	// it (the idle start): caught up counts once its stream is open.
	for !logHas(logPath, "binlog connection opened") {
		select {
		case <-d.done:
			data, _ := os.ReadFile(logPath)
			h.t.Fatalf("%s: the daemon exited:\n%s", name, tail(string(data), 4000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	h.waitCaughtUpProcess(d, logPath, 30*time.Minute)
	took := time.Since(start)
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		h.t.Fatalf("%s: the daemon did not exit within 60s of SIGTERM", name)
	}
	if !d.cmd.ProcessState.Success() {
		data, _ := os.ReadFile(logPath)
		h.t.Fatalf("%s: the daemon exited with %s:\n%s", name, d.cmd.ProcessState, tail(string(data), 4000))
	}
	ru := d.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	h.t.Logf("%s: caught up in %.2fs, %.2f CPU-s, peak RSS %.0f MiB", name, took.Seconds(), cpu.Seconds(), float64(ru.Maxrss)/1024)
	return cpu
}
