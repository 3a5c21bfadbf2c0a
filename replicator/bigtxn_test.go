package replicator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/hostcost"
)

// TestFaultMillionRowTransaction: one transaction inserting a million rows
// streams through in batches. Every row arrives, and the daemon (a child
// process, measured from the kernel's peak RSS) stays under 300 MiB: the
// bounded queues hold reading back instead of buffering the transaction.
func TestFaultMillionRowTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("a million rows")
	}
	h := newHarness(t, 1, "batch: {max_rows: 100000}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".big (id INT PRIMARY KEY, v BIGINT NOT NULL, s VARCHAR(64) NOT NULL, at DATETIME(3) NOT NULL)")
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	// One statement, one transaction: a million rows in one rows-event
	// stream between BEGIN and COMMIT.
	conn, err := h.my.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const rows = 1_000_000
	// The recursion limit is named differently on MariaDB and MySQL.
	for _, q := range []string{"SET SESSION max_recursive_iterations = 2000000", "SET SESSION cte_max_recursion_depth = 2000000"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil && !strings.Contains(err.Error(), "Unknown system variable") {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO %s.big WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			SELECT i, i * 7919, CONCAT('row ', i, ' ', REPEAT('x', i %% 40)), TIMESTAMP('2024-01-01') + INTERVAL i SECOND FROM n`, a, rows),
	} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	h.waitCaughtUpProcess(d, logPath, 5*time.Minute)
	rss := peakRSSMiB(t, d.cmd.Process.Pid)
	var n, sum uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count(), toUInt64(sum(v)) FROM "+a+".big FINAL WHERE _is_deleted = 0").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != rows || sum != 7919*rows*(rows+1)/2 {
		t.Fatalf("ClickHouse holds %d rows (sum %d), want %d", n, sum, rows)
	}
	t.Logf("a %d-row transaction replicated with the daemon's peak RSS at %.0f MiB", rows, rss)
	if rss >= 300 && !raceEnabled {
		t.Fatalf("peak RSS %.0f MiB, want under 300 MiB", rss)
	}
}

// peakRSSMiB is a live process's peak resident set (VmHWM).
func peakRSSMiB(t *testing.T, pid int) float64 {
	t.Helper()
	rss := hostcost.PeakRSS(pid)
	if rss == 0 {
		t.Fatalf("no VmHWM for process %d", pid)
	}
	return rss
}
