package replicator

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/state"
)

// TestXATransactions: rows of an XA transaction reach ClickHouse at its XA
// COMMIT, never at XA PREPARE, and never after XA ROLLBACK; across a
// restart of the daemon and a binlog rotation while prepared, with
// one-phase commits too, and with the open ones in a metric. The sides are
// compared while transactions are prepared (MySQL's committed rows only)
// and at the end, by verify.
func TestXATransactions(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(run.logs.String(), 6000))
		}
	})
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
	h.waitCaughtUp(run, 30*time.Second)
	cols := []string{"id", "v"}

	// 'r' is rolled back and 'c' committed, each after a restart of the
	// daemon; both are prepared with rows on either side of them.
	xa := func(id string, stmts ...string) {
		t.Helper()
		h.session(a, append(append([]string{"XA START " + id}, stmts...), "XA END "+id, "XA PREPARE "+id)...)
	}
	xa("'r'", "INSERT INTO %s.t VALUES (10, 10)", "UPDATE %s.t SET v = 100 WHERE id = 1", "DELETE FROM %s.t WHERE id = 2")
	h.exec("INSERT INTO " + a + ".t VALUES (5, 5)")
	xa("'c','branch',7", "INSERT INTO %s.t VALUES (20, 20)", "UPDATE %s.t SET v = 300 WHERE id = 3", "DELETE FROM %s.t WHERE id = 4")
	h.exec("INSERT INTO " + a + ".t VALUES (6, 6)")
	waitFor(t, 30*time.Second, "row 6 in ClickHouse", func() bool { return slices.Contains(h.clickhouseRows(a, "t", cols), "6|6") })
	h.assertEqual(a, "t", cols) // no prepared row in ClickHouse
	if n := gaugeValue(t, run.r.m.XAPrepared); n != 2 {
		t.Errorf("binlog2ch_xa_prepared_transactions = %v, want 2", n)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	run = h.start()
	h.exec("XA ROLLBACK 'r'", "INSERT INTO "+a+".t VALUES (7, 7)", "FLUSH BINARY LOGS")
	waitFor(t, 30*time.Second, "row 7 in ClickHouse", func() bool { return slices.Contains(h.clickhouseRows(a, "t", cols), "7|7") })
	h.assertEqual(a, "t", cols)
	if n := gaugeValue(t, run.r.m.XAPrepared); n != 1 {
		t.Errorf("after one rollback, binlog2ch_xa_prepared_transactions = %v, want 1", n)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	run = h.start()
	h.exec("XA COMMIT 'c','branch',7")
	h.session(a, "XA START 'o'", "INSERT INTO %s.t VALUES (30, 30)", "UPDATE %s.t SET v = 500 WHERE id = 5", "XA END 'o'", "XA COMMIT 'o' ONE PHASE")
	h.waitCaughtUp(run, 30*time.Second) // the checkpoint passes everything again
	h.assertEqual(a, "t", cols)
	if n := gaugeValue(t, run.r.m.XAPrepared); n != 0 {
		t.Errorf("with none open, binlog2ch_xa_prepared_transactions = %v", n)
	}
	h.verifyEqual("t")
	if strings.Contains(run.logs.String(), "DDL not understood") {
		t.Errorf("XA statements taken for DDL:\n%s", tail(run.logs.String(), 3000))
	}
}

// TestXAPreparedBeforeStart: XA transactions prepared before the position
// the daemon starts from, committed or rolled back after it, end exact:
// first before the initial snapshot's position (their XA PREPAREs in an
// older binlog file, found through XA RECOVER at start), then before a
// checkpoint fullsync -checkpoint moved past them, one decided while the
// daemon was down (not in XA RECOVER, looked up at its COMMIT). Their
// UPDATE and DELETE of rows the copy holds win over the copy's versions;
// a transaction on a table not replicated costs nothing; a rollback
// applies nothing.
func TestXAPreparedBeforeStart(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	cols := []string{"id", "v"}
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (3, 3), (4, 4)",
		"CREATE TABLE "+a+".skip_t (id INT PRIMARY KEY)")
	h.session(a, "XA START 'early'", "INSERT INTO %s.t VALUES (2, 2)", "UPDATE %s.t SET v = 30 WHERE id = 3", "DELETE FROM %s.t WHERE id = 4", "XA END 'early'", "XA PREPARE 'early'")
	h.session(a, "XA START 'other','b',9", "INSERT INTO %s.skip_t VALUES (1)", "XA END 'other','b',9", "XA PREPARE 'other','b',9")
	h.session(a, "XA START 'undo'", "INSERT INTO %s.t VALUES (5, 5)", "UPDATE %s.t SET v = 10 WHERE id = 1", "XA END 'undo'", "XA PREPARE 'undo'")
	h.exec("FLUSH BINARY LOGS")
	// No checkpoint: the daemon copies the tables first, from a position
	// after the prepares.
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(run.logs.String(), 8000))
		}
	})
	h.waitCaughtUp(run, 30*time.Second)
	if n := strings.Count(run.logs.String(), "XA transaction prepared before the start position"); n != 3 {
		t.Errorf("%d XA transactions learnt at start, want 3:\n%s", n, tail(run.logs.String(), 4000))
	}
	h.exec("XA COMMIT 'early'", "XA COMMIT 'other','b',9", "XA ROLLBACK 'undo'", "INSERT INTO "+a+".t VALUES (6, 6)")
	waitFor(t, 30*time.Second, "row 6 in ClickHouse", func() bool { return slices.Contains(h.clickhouseRows(a, "t", cols), "6|6") })
	h.assertEqual(a, "t", cols)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	// A checkpoint after two prepares: fullsync -checkpoint's.
	h.session(a, "XA START 'late'", "UPDATE %s.t SET v = 60 WHERE id = 6", "INSERT INTO %s.t VALUES (7, 7)", "XA END 'late'", "XA PREPARE 'late'")
	h.session(a, "XA START 'down'", "DELETE FROM %s.t WHERE id = 1", "XA END 'down'", "XA PREPARE 'down'")
	r := h.newReplicator(io.Discard)
	_, err := r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.exec("XA COMMIT 'down'") // while the daemon is down: not in XA RECOVER at its start
	run = h.start()
	h.waitCaughtUp(run, 30*time.Second) // XA RECOVER read at its start
	h.exec("XA COMMIT 'late'", "INSERT INTO "+a+".t VALUES (8, 8)")
	waitFor(t, 30*time.Second, "row 8 in ClickHouse", func() bool { return slices.Contains(h.clickhouseRows(a, "t", cols), "8|8") })
	h.assertEqual(a, "t", cols)
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	// 'late' was found at start; 'down', decided before it, at its COMMIT.
	logs := run.logs.String()
	learnt := `prepared before the start position: its rows are read again from the binlog at its XA COMMIT" xid=`
	if !strings.Contains(logs, learnt+"'late'") || strings.Contains(logs, learnt+"'down'") ||
		strings.Count(logs, "XA COMMIT of an XA transaction prepared before the stream's start") != 2 {
		t.Errorf("XA transactions not found where expected:\n%s", tail(logs, 6000))
	}
}

// TestXAPreparePurged: an XA transaction prepared before the start whose
// XA PREPARE is in a purged binlog is an ERROR at start naming it, and its
// COMMIT stops the daemon with the id and the way out, which then makes
// the sides equal. On a private MariaDB: PURGE BINARY LOGS on the shared
// one would take binlogs from other packages' tests, and keeps a file
// another test's stream is reading (the PREPARE then still found).
func TestXAPreparePurged(t *testing.T) {
	h, _ := newPrivateHarness(t)
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1)")
	h.session(a, "XA START 'lost'", "INSERT INTO %s.t VALUES (2, 2)", "XA END 'lost'", "XA PREPARE 'lost'")
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	h.exec("FLUSH BINARY LOGS")
	r := h.newReplicator(io.Discard)
	cur, err := r.currentPosition(context.Background())
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.exec("PURGE BINARY LOGS TO '" + cur.File + "'")
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	if !strings.Contains(run.logs.String(), "cannot find in the binlog") || !strings.Contains(run.logs.String(), "'lost','',1") {
		t.Errorf("no ERROR at start naming 'lost':\n%s", tail(run.logs.String(), 4000))
	}
	h.exec("XA COMMIT 'lost'")
	err2 := run.stopped(t, 30*time.Second, "the daemon did not stop")
	wantError(t, err2, "XA COMMIT of XA transaction 'lost','',1", "binlog ", "fullsync -recreate -checkpoint")
	t.Logf("error: %v", err2)
	r = h.newReplicator(io.Discard)
	_, err = r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	run = h.start()
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}

func gaugeValue(t testing.TB, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// session runs statements (%s: db) on a connection of its own, then
// disconnects: a prepared XA transaction outlives it, and no pool hands
// the connection on.
func (h *harness) session(db string, stmts ...string) {
	h.t.Helper()
	my, err := sql.Open("mysql", h.srv.MySQL.DSN(""))
	if err != nil {
		h.t.Fatal(err)
	}
	defer my.Close()
	my.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := my.Exec(strings.ReplaceAll(q, "%s", db)); err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
	}
}
