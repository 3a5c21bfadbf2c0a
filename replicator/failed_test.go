package replicator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// waitFailed waits until the running daemon has table marked failed in
// its copy state, and returns the entry.
func (h *harness) waitFailed(run *running, table string) *state.TableCopy {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if s := run.r.running.Load(); s != nil {
			if e := s.CopyState()[table]; e != nil && e.State == state.CopyFailed {
				return e
			}
		}
		select {
		case err := <-run.done:
			run.done <- err
			h.t.Fatalf("the daemon stopped: %v\n%s", err, tail(run.logs.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s not marked failed within a minute:\n%s", table, tail(run.logs.String(), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verifyOnly is verifyEqual over tables want of db alone: another table's
// ClickHouse table, left behind or failed, is then neither compared nor
// reported as extra.
func (h *harness) verifyOnly(db string, want ...string) {
	h.t.Helper()
	patterns := make([]string, len(want))
	for i, t := range want {
		patterns[i] = db + "." + t
	}
	h.verifyMatching(patterns, want...)
}

// TestSkipFailedTable: with replication.on_table_error: skip_table, a
// table whose ClickHouse table was changed by hand (a column retyped: its
// writer gets a TargetChangedError) is marked failed and its events are
// skipped, while the other table streams on, ends equal, and the
// checkpoint passes the skipped events; the metrics count it. Fixed by
// hand, a Resync copies it online and it streams again; failed once more,
// a restart copies it (copyAtStart). Without the option the same change
// stops the daemon: TestFaultClickHouseChangedWhileRunning ("column
// retyped").
func TestSkipFailedTable(t *testing.T) {
	h := newHarness(t, 1, "replication: {on_table_error: skip_table}\nfullsync: {chunk_rows: 50}\n")
	a := h.dbs[0]
	ctx := context.Background()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT, note VARCHAR(20))",
		"CREATE TABLE "+a+".u (id INT PRIMARY KEY, v VARCHAR(20))")
	run := h.start()
	h.exec("INSERT INTO "+a+".t VALUES (1, 'one', 10, 'n1'), (2, 'two', 20, 'n2')", "INSERT INTO "+a+".u VALUES (1, 'one')")
	h.waitCaughtUp(run, 30*time.Second)
	retype := "ALTER TABLE `" + a + "`.t MODIFY COLUMN qty Nullable(String)"
	fix := "ALTER TABLE `" + a + "`.t MODIFY COLUMN qty Nullable(Int32)"

	// t fails; u goes on, and so does the checkpoint.
	if err := h.ch.Exec(ctx, retype); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO " + a + ".t VALUES (3, 'three', 30, 'n3')")
	e := h.waitFailed(run, a+".t")
	if !strings.Contains(e.Error, "has column qty as Nullable(String)") {
		t.Errorf("the failed entry's error: %q", e.Error)
	}
	h.exec("INSERT INTO "+a+".u VALUES (2, 'two')", "UPDATE "+a+".t SET note = 'skipped' WHERE id = 1", "INSERT INTO "+a+".t VALUES (4, 'four', 40, 'n4')",
		"UPDATE "+a+".u SET v = 'changed' WHERE id = 1")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyOnly(a, "u")
	if _, final := h.chCounts(a, "t"); final != 2 {
		t.Errorf("ClickHouse's %s.t holds %d rows; want the 2 of before it failed (its events skipped)", a, final)
	}
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if e := cp.Tables[a+".t"]; e == nil || e.State != state.CopyFailed || e.Error == "" {
		t.Errorf("the checkpoint's copy state for %s.t: %+v", a, e)
	}
	addr := run.r.MetricsAddr()
	// Caught up, no writer holds rows: the failed one gave back its
	// share of the buffer budget too.
	if n := scrape(t, addr, "binlog2ch_batch_buffer_bytes "); n != 0 {
		t.Errorf("binlog2ch_batch_buffer_bytes = %v with every row written; the failed writer's bytes are still counted", n)
	}
	if n := scrape(t, addr, "binlog2ch_tables_failed "); n != 1 {
		t.Errorf("binlog2ch_tables_failed = %v, want 1", n)
	}
	if n := scrape(t, addr, "binlog2ch_tables_failed_total "); n != 1 {
		t.Errorf("binlog2ch_tables_failed_total = %v, want 1", n)
	}
	logs := run.logs.String()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "marked failed") || !strings.Contains(logs, "binlog2ch resync -config FILE -tables "+a+".t") {
		t.Errorf("the failure was not logged with what to do:\n%s", tail(logs, 3000))
	}

	// Fixed by hand and resynced: copied online, streaming again.
	if err := h.ch.Exec(ctx, fix); err != nil {
		t.Fatal(err)
	}
	if err := run.r.Resync(ctx, []schema.TableName{{Database: a, Table: "t"}}); err != nil {
		t.Fatal(err)
	}
	h.exec("UPDATE "+a+".t SET qty = 41 WHERE id = 4", "INSERT INTO "+a+".t VALUES (5, 'five', 50, 'n5')")
	h.waitCopied(run, time.Minute)
	h.exec("INSERT INTO " + a + ".t VALUES (6, 'six', 60, 'n6')")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t", "u")
	if n := scrape(t, addr, "binlog2ch_tables_failed "); n != 0 {
		t.Errorf("binlog2ch_tables_failed = %v after the resync, want 0", n)
	}

	// Failed again, then a restart: the start copies it.
	if err := h.ch.Exec(ctx, retype); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO " + a + ".t VALUES (7, 'seven', 70, 'n7')")
	h.waitFailed(run, a+".t")
	h.exec("DELETE FROM "+a+".t WHERE id = 2", "INSERT INTO "+a+".u VALUES (3, 'three')")
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	if cp, err := state.LoadFile(h.cfg.StateDir); err != nil || cp.Tables[a+".t"] == nil || cp.Tables[a+".t"].State != state.CopyFailed {
		t.Fatalf("the checkpoint after the stop: %+v, %v", cp, err)
	}
	if err := h.ch.Exec(ctx, fix); err != nil {
		t.Fatal(err)
	}
	h.exec("UPDATE " + a + ".t SET note = 'while stopped' WHERE id = 3")
	run = h.start()
	h.exec("INSERT INTO " + a + ".t VALUES (8, 'eight', 80, 'n8')")
	h.waitCopied(run, time.Minute)
	h.verifyEqual("t", "u")
	if logs := run.logs.String(); !strings.Contains(logs, "copying a table marked failed before") || !strings.Contains(logs, "reason=failed") {
		t.Errorf("the restart did not copy the failed table:\n%s", tail(logs, 3000))
	}
}
