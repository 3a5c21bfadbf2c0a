package replicator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/hostcost"
)

// BenchmarkFullSync measures `fullsync`: BINLOG2CH_BENCH_ROWS (default 1M)
// rows of binlog_field_test (the catch-up benchmark's rows), copied by a
// child process timed from start to exit. It reports rows/min, the
// process's CPU seconds per million rows and its peak RSS. Run it with
// -benchtime 1x. BINLOG2CH_BENCH_FULLSYNC adds fullsync settings, e.g.
// "workers: 2", BINLOG2CH_BENCH_BATCH batch settings.
// BINLOG2CH_BENCH_MAXLEN caps strings and blobs (default 8, Bifrost-sized
// rows; 0: loadgen's default values, about 600 bytes of them a row).
func BenchmarkFullSync(b *testing.B) {
	rows := 1_000_000
	if v := os.Getenv("BINLOG2CH_BENCH_ROWS"); v != "" {
		rows, _ = strconv.Atoi(v)
	}
	for i := 0; i < b.N; i++ {
		benchFullSync(b, rows)
	}
}

func benchFullSync(b *testing.B, rows int) {
	b.StopTimer()
	h := newHarness(b, 1, "batch: {"+os.Getenv("BINLOG2CH_BENCH_BATCH")+"}\n")
	db := h.dbs[0]
	fillStart := time.Now()
	maxLen := benchMaxLen
	if v := os.Getenv("BINLOG2CH_BENCH_MAXLEN"); v != "" {
		maxLen, _ = strconv.Atoi(v)
	}
	h.fillFieldTest(db, rows, maxLen)
	b.Logf("filled %d rows in %.1fs", rows, time.Since(fillStart).Seconds())
	h.fullSyncConfig("fullsync: {"+os.Getenv("BINLOG2CH_BENCH_FULLSYNC")+"}\n", "")
	path := filepath.Join(filepath.Dir(h.path), "fullsync.yaml")
	logPath := filepath.Join(b.TempDir(), "fullsync.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	chCPU0, myCPU0 := hostcost.CPU(h.srv.ClickHouse.Pid()), hostcost.CPU(h.srv.MySQL.Pid())
	cmd := exec.Command(os.Args[0])
	// The garbage collector settings `binlog2ch fullsync` applies
	// (cmd/binlog2ch/fullsync.go), unless the environment has its own.
	cmd.Env = append([]string{"GOGC=400", "GOMEMLIMIT=256MiB"}, os.Environ()...)
	cmd.Env = append(cmd.Env, envFullSync+"="+path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	b.StartTimer()
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		data, _ := os.ReadFile(logPath)
		b.Fatalf("fullsync: %v\n%s", err, tail(string(data), 4000))
	}
	chCPU, myCPU := hostcost.CPU(h.srv.ClickHouse.Pid())-chCPU0, hostcost.CPU(h.srv.MySQL.Pid())-myCPU0
	var n uint64
	if err := h.ch.QueryRow(context.Background(), fmt.Sprintf("SELECT count() FROM %s.binlog_field_test_1 FINAL", db)).Scan(&n); err != nil {
		b.Fatal(err)
	}
	if int(n) != rows {
		b.Fatalf("ClickHouse holds %d rows, want %d", n, rows)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// Not ru.Maxrss: it counts this process's peak too (the child's, before
	// its exec); the child prints its own.
	logData, _ := os.ReadFile(logPath)
	peak := childPeakRSSMiB(b, string(logData))
	b.ReportMetric(float64(rows)/elapsed.Minutes(), "rows/min")
	b.ReportMetric(cpu.Seconds()/(float64(rows)/1e6), "cpu-s/Mrows")
	b.ReportMetric(peak, "peak-RSS-MiB")
	if data, err := os.ReadFile(logPath); err == nil {
		flushes := strings.Count(string(data), "msg=flushed")
		if i := strings.LastIndex(string(data), "waited_for_clickhouse="); i >= 0 {
			f := strings.Fields(string(data[i:]))
			b.Logf("%d batches; writer: %s %s", flushes, f[0], f[1])
		}
	}
	b.Logf("meanwhile ClickHouse used %.2f CPU-s and MariaDB %.2f CPU-s", chCPU.Seconds(), myCPU.Seconds())
	b.Logf("%d rows in %.2fs: %.2fM rows/min, %.2f CPU-s per million rows, peak RSS %.0f MiB",
		rows, elapsed.Seconds(), float64(rows)/elapsed.Minutes()/1e6, cpu.Seconds()/(float64(rows)/1e6), peak)
}
