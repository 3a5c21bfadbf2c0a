package replicator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// Cascades ClickHouse cannot end equal to MySQL by deriving them stop at
// the event; those it can are derived: text keys matched by collation,
// an ON UPDATE CASCADE of the initial snapshot's time across a restart,
// parents and middle tables not replicated.

// textKeyCollation: a key on a text column under collation coll. The
// parent's 'zz9' (no child differs from it but by bytes) cascades; then
// its 'abc', whose children rows hold 'abc' and keys MySQL's collation
// makes equal to it (others), stops replication at that event.
func textKeyCollation(t *testing.T, coll string, others ...string) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(run.logs.String(), 6000))
		}
	})
	h.exec(
		"CREATE TABLE "+a+".parent (code VARCHAR(10) COLLATE "+coll+" PRIMARY KEY, n INT)",
		"CREATE TABLE "+a+".child (id INT PRIMARY KEY, pcode VARCHAR(10) COLLATE "+coll+", FOREIGN KEY (pcode) REFERENCES parent (code) ON DELETE CASCADE)",
		"INSERT INTO "+a+".parent VALUES ('abc', 1), ('zz9', 2)",
		"INSERT INTO "+a+".child VALUES (1, 'abc'), (9, 'zz9')",
	)
	for i, k := range others {
		h.exec(fmt.Sprintf("INSERT INTO %s.child VALUES (%d, '%s')", a, i+2, k))
	}
	h.exec("DELETE FROM " + a + ".parent WHERE code = 'zz9'")
	h.waitCaughtUp(run, 60*time.Second)
	h.assertEqual(a, "child", []string{"id", "pcode"})
	h.verifyEqual("parent", "child")

	h.exec("DELETE FROM " + a + ".parent WHERE code = 'abc'")
	var n int
	if err := h.my.QueryRow("SELECT count(*) FROM " + a + ".child").Scan(&n); err != nil || n != 0 {
		t.Fatalf("MySQL kept %d children of 'abc' (%v); the test wants InnoDB to cascade to every one", n, err)
	}
	err := run.stopped(t, 60*time.Second, "the daemon did not stop at the cascade matched by collation")
	wantError(t, err, "foreign-key cascade", a+".child", coll, "fullsync -recreate -checkpoint")
}

// TestCascadeTextKeyCaseInsensitive: under utf8mb4_general_ci InnoDB
// cascades to 'ABC' and 'abc ' for a parent 'abc'; ClickHouse's byte match
// would keep them.
func TestCascadeTextKeyCaseInsensitive(t *testing.T) {
	textKeyCollation(t, "utf8mb4_general_ci", "ABC", "abc ")
}

// TestCascadeTextKeyPadSpace: under utf8mb4_bin (PAD SPACE) 'abc ' is
// 'abc'.
func TestCascadeTextKeyPadSpace(t *testing.T) {
	textKeyCollation(t, "utf8mb4_bin", "abc ")
}

// TestCascadeUpdateDuringSnapshotAfterRestart: an ON UPDATE CASCADE that
// ran while the initial snapshot copied the tables stops replication at
// the event, also when the daemon restarted between the copy and the
// event (the copy's end kept in the checkpoint).
func TestCascadeUpdateDuringSnapshotAfterRestart(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(
		"CREATE TABLE "+a+".parent (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON UPDATE CASCADE)",
		"INSERT INTO "+a+".parent VALUES (1), (2)",
		"INSERT INTO "+a+".child VALUES (10, 1), (20, 2)",
	)
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	var during, reach sync.Once
	reached, release := make(chan struct{}), make(chan struct{})
	run := h.startWith(testHooks{
		beforeChunk: func(context.Context, schema.TableName) {
			during.Do(func() { h.exec("UPDATE " + a + ".parent SET id = 100 WHERE id = 1") })
		},
		rowsEvent: func(t schema.TableName) {
			if t.Table == "parent" {
				reach.Do(func() { close(reached); <-release })
			}
		},
	})
	select {
	case <-reached:
	case err := <-run.done:
		t.Fatalf("the daemon stopped before the update's event: %v\n%s", err, tail(run.logs.String(), 4000))
	case <-time.After(90 * time.Second):
		t.Fatalf("the update's event was not read; logs:\n%s", tail(run.logs.String(), 4000))
	}
	// Stopped before the event goes on: the checkpoint is the copy's.
	run.cancel()
	close(release)
	_ = run.stopped(t, 60*time.Second, "the first run did not stop")
	data, err := os.ReadFile(filepath.Join(h.cfg.StateDir, state.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "copy_end_version") {
		t.Errorf("the checkpoint does not keep where the copy ended:\n%s", data)
	}

	run = h.start()
	err = run.stopped(t, 90*time.Second, "the restarted daemon did not stop at the ON UPDATE CASCADE of the copy's time")
	wantError(t, err, "ON UPDATE CASCADE", "initial snapshot", a+".child", "fullsync -recreate -checkpoint")
}

// TestCascadeThroughUnreplicated: a replicated child of a parent that is
// not replicated gets its cascades (the parent's events are read for
// them); a cascade through a table not replicated into a replicated one
// stops replication at the event, naming the table to replicate.
func TestCascadeThroughUnreplicated(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(run.logs.String(), 6000))
		}
	})
	h.exec(
		"CREATE TABLE "+a+".skip_parent (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".orphan_child (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES skip_parent (id) ON DELETE CASCADE ON UPDATE CASCADE)",
		"CREATE TABLE "+a+".top (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".skip_mid (id INT PRIMARY KEY, top_id INT, FOREIGN KEY (top_id) REFERENCES top (id) ON DELETE CASCADE)",
		"CREATE TABLE "+a+".leaf (id INT PRIMARY KEY, mid_id INT, FOREIGN KEY (mid_id) REFERENCES skip_mid (id) ON DELETE CASCADE)",
		"INSERT INTO "+a+".skip_parent VALUES (1), (2), (3)",
		"INSERT INTO "+a+".orphan_child VALUES (10, 1), (11, 1), (20, 2), (30, 3)",
		"INSERT INTO "+a+".top VALUES (1)",
		"INSERT INTO "+a+".skip_mid VALUES (5, 1)",
		"INSERT INTO "+a+".leaf VALUES (50, 5)",
		"DELETE FROM "+a+".skip_parent WHERE id = 1",
		"UPDATE "+a+".skip_parent SET id = 200 WHERE id = 2",
	)
	h.waitCaughtUp(run, 60*time.Second)
	h.assertEqual(a, "orphan_child", []string{"id", "p"})
	h.verifyEqual("orphan_child", "top", "leaf")

	h.exec("DELETE FROM " + a + ".top WHERE id = 1")
	err := run.stopped(t, 60*time.Second, "the daemon did not stop at the cascade through skip_mid")
	wantError(t, err, a+".skip_mid, which is not replicated", a+".leaf", "Replicate "+a+".skip_mid too")
}
