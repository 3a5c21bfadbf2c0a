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

// TestXAPreparedBeforeStart: an XA transaction prepared before the
// position the daemon's initial snapshot took and committed after it
// stops the daemon at the XA COMMIT with the id and the way out, which
// then makes the sides equal.
func TestXAPreparedBeforeStart(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1)")
	h.session(a, "XA START 'early'", "INSERT INTO %s.t VALUES (2, 2)", "XA END 'early'", "XA PREPARE 'early'")
	// No checkpoint: the daemon copies the tables first, from a position
	// after the prepare.
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("XA COMMIT 'early'")
	err2 := run.stopped(t, 30*time.Second, "the daemon did not stop")
	wantError(t, err2, "XA COMMIT of XA transaction 'early','',1", "binlog ", "fullsync -recreate -checkpoint")
	t.Logf("error: %v", err2)
	r := h.newReplicator(io.Discard)
	_, err := r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true})
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
