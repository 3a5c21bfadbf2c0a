package replicator

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
)

// TestCascadeUpdateDuringFullSyncCheckpoint: ON UPDATE CASCADEs that ran
// while `fullsync -checkpoint` copied the child table, one releasing a key
// value the next moves another row into, show in the copy already; run,
// starting from the copy's position, would move the wrong child with the
// first (ClickHouse ending different with no error). The checkpoint keeps
// where the copy ended, as the initial snapshot's does, and run stops at
// the event with the cause and the way out.
func TestCascadeUpdateDuringFullSyncCheckpoint(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(
		"CREATE TABLE "+a+".parent (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON UPDATE CASCADE)",
		"INSERT INTO "+a+".parent VALUES (1), (9)",
		"INSERT INTO "+a+".child VALUES (10, 1), (20, 9)",
	)
	var during sync.Once
	r := h.newReplicator(io.Discard)
	r.hooks = testHooks{beforeChunk: func(_ context.Context, t schema.TableName) {
		if t.Table == "child" {
			// After the copy's position, before it reads the child: 10
			// moves from 1 to 5, then 20 from 9 into the released 1.
			during.Do(func() {
				h.exec("UPDATE "+a+".parent SET id = 5 WHERE id = 1", "UPDATE "+a+".parent SET id = 1 WHERE id = 9")
			})
		}
	}}
	_, err := r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	run := h.start()
	err = run.stopped(t, 90*time.Second, "run did not stop at the ON UPDATE CASCADE of the fullsync's time")
	wantError(t, err, "ON UPDATE CASCADE", "fullsync -checkpoint", a+".child", "fullsync -recreate -checkpoint")
	t.Logf("error: %v", err)
}

// TestCascadeUpdateDuringFullSync: the same ON UPDATE CASCADEs while a
// `fullsync -tables` without -checkpoint copies the child, run's
// checkpoint staying behind the copy's position. Run replays the binlog
// from its checkpoint: an ON UPDATE CASCADE from before the copy's
// position loses to the copy's rows and is applied; one from inside the
// copy's window, which the copy may show already, stops run with the
// cause and the way out (without the window kept, run moved the wrong
// child with no error).
func TestCascadeUpdateDuringFullSync(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(
		"CREATE TABLE "+a+".parent (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON UPDATE CASCADE)",
		"INSERT INTO "+a+".parent VALUES (1), (9), (30)",
		"INSERT INTO "+a+".child VALUES (10, 1), (20, 9), (40, 30)",
	)
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	// Before the copy's position: run applies it, and the copy's rows win.
	h.exec("UPDATE " + a + ".parent SET id = 31 WHERE id = 30")
	var during sync.Once
	r := h.newReplicator(io.Discard)
	r.hooks = testHooks{beforeChunk: func(_ context.Context, t schema.TableName) {
		if t.Table == "child" {
			during.Do(func() {
				h.exec("UPDATE "+a+".parent SET id = 5 WHERE id = 1", "UPDATE "+a+".parent SET id = 1 WHERE id = 9")
			})
		}
	}}
	_, err := r.FullSync(context.Background(), FullSyncOptions{Recreate: true, Tables: []schema.TableName{{Database: a, Table: "child"}}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	run = h.start()
	err = run.stopped(t, 90*time.Second, "run did not stop at the ON UPDATE CASCADE of the fullsync's time")
	wantError(t, err, "ON UPDATE CASCADE", "while `binlog2ch fullsync` copied "+a+".child", "fullsync -recreate -tables "+a+".child")
	if strings.Contains(err.Error(), "UPDATE "+a+".parent SET id = 31") {
		t.Errorf("stopped at the update before the copy: %v", err)
	}
	t.Logf("error: %v", err)
	// The way out it gives.
	r = h.newReplicator(io.Discard)
	_, err = r.FullSync(context.Background(), FullSyncOptions{Recreate: true, Tables: []schema.TableName{{Database: a, Table: "child"}}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	run = h.start()
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("parent", "child")
}
