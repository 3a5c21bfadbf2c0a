package replicator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFaultLargeValueMemory: a row holding a 64 MiB LONGBLOB, inserted and
// then updated in another column (the binlog then carries the value twice,
// before and after), arrives whole, and the daemon's peak RSS (a child
// process, from the kernel) grows by at most three times the value (the
// event's two images and the block's copy) over its peak before, plus
// 16 MiB for the buffers a writer uses to send (encoder, compression).
func TestFaultLargeValueMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 64 MiB value")
	}
	const size = 64 << 20
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("SET GLOBAL max_allowed_packet = 1073741824",
		"CREATE TABLE "+a+".big (id INT PRIMARY KEY, n INT NOT NULL, b LONGBLOB)",
		"INSERT INTO "+a+".big VALUES (1, 1, 'small')")
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, time.Minute)
	before := peakRSSMiB(t, d.cmd.Process.Pid)
	h.session(a, fmt.Sprintf("INSERT INTO %%s.big VALUES (2, 1, REPEAT('v', %d))", size))
	h.waitCaughtUpProcess(d, logPath, 2*time.Minute)
	afterInsert := peakRSSMiB(t, d.cmd.Process.Pid)
	h.session(a, "UPDATE %s.big SET n = n + 1 WHERE id = 2")
	h.waitCaughtUpProcess(d, logPath, 2*time.Minute)
	after := peakRSSMiB(t, d.cmd.Process.Pid)
	var n, l uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT toUInt64(n), length(b) FROM "+a+".big FINAL WHERE id = 2").Scan(&n, &l); err != nil {
		t.Fatal(err)
	}
	if n != 2 || l != size {
		t.Fatalf("ClickHouse holds n=%d and a %d-byte value, want 2 and %d", n, l, size)
	}
	t.Logf("peak RSS: %.0f MiB before, %.0f MiB after the insert, %.0f MiB after the update of a row with a %d MiB value", before, afterInsert, after, size>>20)
	if grow := after - before; grow > 3*size>>20+16 && !raceEnabled {
		t.Errorf("peak RSS grew by %.0f MiB, want at most %d MiB (3 times the value, plus 16)", grow, 3*size>>20+16)
	}
}

// TestFaultManyLargeValuesMemory: one transaction updates twenty rows that
// each hold a 16 MiB value, one UPDATE each (the binlog carries each row
// twice: 640 MiB of events). Events read ahead are bounded in bytes, so
// the daemon's peak RSS stays below the transaction's size (go-mysql's
// event cache held up to 1,024 events whatever their size); every row
// arrives. The timeouts only bound a hang.
func TestFaultManyLargeValuesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("640 MiB of binlog")
	}
	const size, rows = 16 << 20, 20
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("SET GLOBAL max_allowed_packet = 1073741824",
		"CREATE TABLE "+a+".big (id INT PRIMARY KEY, n INT NOT NULL, b LONGBLOB)")
	for i := 1; i <= rows; i++ {
		h.session(a, fmt.Sprintf("INSERT INTO %%s.big VALUES (%d, 1, REPEAT('v', %d))", i, size))
	}
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, 10*time.Minute)
	stmts := []string{"BEGIN"}
	for i := 1; i <= rows; i++ {
		stmts = append(stmts, fmt.Sprintf("UPDATE %%s.big SET n = n + 1 WHERE id = %d", i))
	}
	h.session(a, append(stmts, "COMMIT")...)
	h.waitCaughtUpProcess(d, logPath, 10*time.Minute)
	peak := peakRSSMiB(t, d.cmd.Process.Pid)
	var n, total uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT toUInt64(sum(n)), sum(length(b)) FROM "+a+".big FINAL WHERE _is_deleted = 0").Scan(&n, &total); err != nil {
		t.Fatal(err)
	}
	if n != 2*rows || total != rows*size {
		t.Fatalf("ClickHouse holds n summing to %d and %d bytes of values, want %d and %d", n, total, 2*rows, rows*size)
	}
	t.Logf("a transaction of %d MiB of row events replicated with the daemon's peak RSS at %.0f MiB", 2*rows*size>>20, peak)
	if peak > 640 && !raceEnabled {
		t.Errorf("peak RSS %.0f MiB, want under 640 MiB (the transaction's events)", peak)
	}
}

// TestFaultFullSyncLargeValuesMemory: fullsync (a child process) copies a
// table of forty 8 MiB values (320 MiB) with 16 MiB batches. A reader's
// batch holds such a row alone and the batches queued for a writer are
// bounded in number, so the copy's peak RSS (from the kernel) stays below
// the table's size; every value arrives whole. The timeout only bounds a
// hang.
func TestFaultFullSyncLargeValuesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("320 MiB of values")
	}
	const size, rows = 8 << 20, 40
	h := newHarness(t, 1, "batch: {max_bytes: 16777216}\n")
	a := h.dbs[0]
	h.exec("SET GLOBAL max_allowed_packet = 1073741824",
		"CREATE TABLE "+a+".big (id INT PRIMARY KEY, n INT NOT NULL, b LONGBLOB)")
	for i := 1; i <= rows; i++ {
		h.session(a, fmt.Sprintf("INSERT INTO %%s.big VALUES (%d, %d, CONCAT(REPEAT('v', %d), '%d'))", i, i, size-3, i%1000))
	}
	cfg := h.fullSyncConfig("", "")
	path := filepath.Join(filepath.Dir(h.path), "fullsync.yaml")
	if cfg.FullSync.Workers != 4 {
		t.Fatalf("%d workers: the bound below assumes the default 4", cfg.FullSync.Workers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	// The garbage collector settings of `binlog2ch fullsync`.
	cmd.Env = append(os.Environ(), "GOGC=400", "GOMEMLIMIT=256MiB", envFullSync+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fullsync: %v\n%s", err, tail(string(out), 4000))
	}
	peak := childPeakRSSMiB(t, string(out))
	var n, total uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count(), sum(length(b)) FROM "+a+".big FINAL").Scan(&n, &total); err != nil {
		t.Fatal(err)
	}
	if n != rows || total != rows*(size-3)+rows*2-9 {
		t.Fatalf("ClickHouse holds %d rows with %d bytes of values, want %d and %d", n, total, rows, rows*(size-3)+rows*2-9)
	}
	t.Logf("fullsync copied %d MiB of values with a peak RSS of %.0f MiB", rows*size>>20, peak)
	if peak > 256 && !raceEnabled {
		t.Errorf("peak RSS %.0f MiB, want under 256 MiB (the table holds %d MiB)", peak, rows*size>>20)
	}
}
