package replicator

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/hostcost"
)

// benchMaxLen caps generated strings so rows are the size of Bifrost's
// insertDataTest rows (~140 binlog bytes), as in its published figures.
const benchMaxLen = 8

// BenchmarkCatchUp measures catch-up: BINLOG2CH_BENCH_ROWS (default 1M)
// rows of binlog_field_test already in the binlog, the daemon (a child
// process) started from a checkpoint before them, timed until ClickHouse
// holds them all (and, reported apart, until its checkpoint passes them). It reports rows/min, the daemon's CPU seconds per
// million rows and its peak RSS. Run it with -benchtime 1x.
// BINLOG2CH_BENCH_BATCH adds batch settings, e.g. "max_rows: 50000";
// BINLOG2CH_BENCH_COMPRESSION sets clickhouse.compression (lz4, zstd,
// none, auto; default auto, the daemon's). BINLOG2CH_BENCH_MAXLEN caps strings and blobs as
// it does for BenchmarkFullSync (unset: 8, Bifrost-sized rows; 0:
// loadgen's default values, a long tail of them (~2 KB of binlog a row),
// issue 33's varied rows); the binlog's bytes per row are reported beside.
func BenchmarkCatchUp(b *testing.B) {
	rows := 1_000_000
	if v := os.Getenv("BINLOG2CH_BENCH_ROWS"); v != "" {
		rows, _ = strconv.Atoi(v)
	}
	for i := 0; i < b.N; i++ {
		benchCatchUp(b, rows)
	}
}

func benchCatchUp(b *testing.B, rows int) {
	b.StopTimer()
	compression := os.Getenv("BINLOG2CH_BENCH_COMPRESSION")
	if compression == "" {
		compression = "auto"
	}
	srv := servertest.Need(b)
	h := newHarnessOn(b, srv, fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4242}
clickhouse: {addr: [%q], user: %q, password: %q, compression: %s}
`, srv.MySQL.Addr(), srv.MySQL.User, srv.MySQL.Password, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password, compression),
		1, "batch: {"+os.Getenv("BINLOG2CH_BENCH_BATCH")+"}\n")
	b.Logf("clickhouse.compression: %s", compression)
	db := h.dbs[0]
	before := h.binlogSize()
	maxLen := benchMaxLen
	if v := os.Getenv("BINLOG2CH_BENCH_MAXLEN"); v != "" {
		maxLen, _ = strconv.Atoi(v)
	}
	fillStart := time.Now()
	h.fillFieldTest(db, rows, maxLen)
	grew := h.binlogSize() - before
	binlogBytes := float64(grew) / float64(rows)
	b.Logf("filled %d rows in %.1fs; the binlog grew %d bytes (%.0f bytes/row)", rows, time.Since(fillStart).Seconds(), grew, binlogBytes)

	logPath := filepath.Join(b.TempDir(), "daemon.log")
	chCPU0, myCPU0 := hostcost.CPU(h.srv.ClickHouse.Pid()), hostcost.CPU(h.srv.MySQL.Pid())
	b.StartTimer()
	start := time.Now()
	d := h.startDaemon(logPath)
	// Throughput is measured to the moment ClickHouse holds every row; the
	// checkpoint follows within checkpoint.interval.
	count := fmt.Sprintf("SELECT count() FROM %s.binlog_field_test_1", db)
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var n uint64
		if err := h.ch.QueryRow(context.Background(), count).Scan(&n); err == nil && n >= uint64(rows) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("ClickHouse did not get every row within 30 minutes")
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	h.waitCaughtUpProcess(d, logPath, 5*time.Minute)
	// BINLOG2CH_BENCH_SMAPS and _KEEPLOG name files for the caught-up
	// daemon's /proc smaps (what its peak RSS is made of) and its log.
	if keep := os.Getenv("BINLOG2CH_BENCH_SMAPS"); keep != "" {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", d.cmd.Process.Pid))
		_ = os.WriteFile(keep, data, 0o644)
	}
	checkpointAfter := time.Since(start)
	chCPU, myCPU := hostcost.CPU(h.srv.ClickHouse.Pid())-chCPU0, hostcost.CPU(h.srv.MySQL.Pid())-myCPU0
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		b.Fatal("daemon did not exit within 60s of SIGTERM")
	}
	var n uint64
	if err := h.ch.QueryRow(context.Background(), fmt.Sprintf("SELECT count() FROM %s.binlog_field_test_1 FINAL", db)).Scan(&n); err != nil {
		b.Fatal(err)
	}
	if int(n) != rows {
		b.Fatalf("ClickHouse holds %d rows, want %d", n, rows)
	}
	ru := d.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b.ReportMetric(float64(rows)/elapsed.Minutes(), "rows/min")
	b.ReportMetric(cpu.Seconds()/(float64(rows)/1e6), "cpu-s/Mrows")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
	b.ReportMetric(binlogBytes, "binlog-B/row")
	if data, err := os.ReadFile(logPath); err == nil {
		if keep := os.Getenv("BINLOG2CH_BENCH_KEEPLOG"); keep != "" {
			_ = os.WriteFile(keep, data, 0o644)
		}
		flushes, total := 0, time.Duration(0)
		for _, line := range strings.Split(string(data), "\n") {
			if i := strings.Index(line, "msg=flushed"); i >= 0 {
				flushes++
				if j := strings.Index(line, "duration="); j >= 0 {
					d, _ := time.ParseDuration(strings.Fields(line[j+len("duration="):])[0])
					total += d
				}
			}
		}
		b.Logf("%d batches sent, %.2fs in all", flushes, total.Seconds())
		if i := strings.LastIndex(string(data), "waited_for_clickhouse="); i >= 0 {
			f := strings.Fields(string(data[i:]))
			b.Logf("writer: %s %s", f[0], f[1])
		}
	}
	b.Logf("meanwhile ClickHouse used %.2f CPU-s and MariaDB %.2f CPU-s", chCPU.Seconds(), myCPU.Seconds())
	var parts, maxLevel uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count(), toUInt64(max(level)) FROM system.parts WHERE database = ? AND table = 'binlog_field_test_1' AND active", db).Scan(&parts, &maxLevel); err == nil {
		b.Logf("ClickHouse holds the rows in %d active parts, merged up to level %d", parts, maxLevel)
	}
	b.Logf("checkpoint saved past the rows %.2fs after the start", checkpointAfter.Seconds())
	// Fresh memory is dear on some VMs (a first touch of a page costs
	// microseconds): the system time and the minor faults say how much.
	b.Logf("daemon: user %.2fs, system %.2fs, %d minor page faults", time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds(), ru.Minflt)
	b.Logf("%d rows in ClickHouse %.2fs after the start: %.2fM rows/min, %.2f CPU-s per million rows, peak RSS %.0f MiB",
		rows, elapsed.Seconds(), float64(rows)/elapsed.Minutes()/1e6, cpu.Seconds()/(float64(rows)/1e6), float64(ru.Maxrss)/1024)
}

// binlogSize is the size of the server's binlog files together (a
// position's difference misses a rotation).
func (h *harness) binlogSize() int64 {
	var total int64
	for _, l := range h.binaryLogs() {
		total += l.size
	}
	return total
}

// binaryLog is a line of SHOW BINARY LOGS.
type binaryLog struct {
	name string
	size int64
}

// binaryLogs lists the server's binlog files.
func (h *harness) binaryLogs() []binaryLog {
	h.t.Helper()
	rows, err := h.my.Query("SHOW BINARY LOGS")
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	var logs []binaryLog
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			h.t.Fatal(err)
		}
		n, _ := strconv.ParseInt(string(vals[1]), 10, 64)
		logs = append(logs, binaryLog{string(vals[0]), n})
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return logs
}
