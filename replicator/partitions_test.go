package replicator

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// TestApplyPartitionsWithTheLayoutOfTheirTime: with
// replication.on_partition_maintenance: apply, a TRUNCATE PARTITION is
// applied with the partition's bounds as of its binlog position, never
// information_schema's of now: after a re-partition that reuses the
// names, and when a restart replays a statement written before one; a
// restart from a checkpoint that does not hold the layout stops at the
// statement with the cause and the way out, unless binlog2ch caught up
// with the server first.
func TestApplyPartitionsWithTheLayoutOfTheirTime(t *testing.T) {
	const (
		create = "CREATE TABLE %s.r (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN MAXVALUE)"
		// The same names, other bounds: p1 is [5, 25) after it, [10, 20)
		// before.
		repartition = "ALTER TABLE %s.r PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (5), PARTITION p1 VALUES LESS THAN (25), PARTITION p2 VALUES LESS THAN MAXVALUE)"
		truncate    = "ALTER TABLE %s.r TRUNCATE PARTITION p1"
	)
	var rows []string
	for id := 1; id <= 30; id++ {
		rows = append(rows, fmt.Sprintf("(%d, %d)", id, id))
	}
	insert := "INSERT INTO %s.r VALUES " + strings.Join(rows, ", ")
	setup := func(t *testing.T) (*harness, string, *running) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec(fmt.Sprintf(create, a), fmt.Sprintf(insert, a))
		h.waitCaughtUp(run, 30*time.Second)
		return h, a, run
	}
	// dropLayouts makes the checkpoint one saved without layouts (by an
	// older binlog2ch, a snapshot or a fullsync).
	dropLayouts := func(t *testing.T, h *harness) {
		t.Helper()
		cp, err := state.LoadFile(h.cfg.StateDir)
		if err != nil || cp == nil {
			t.Fatalf("checkpoint: %v %v", cp, err)
		}
		cp.Partitions = nil
		if err := state.SaveFile(h.cfg.StateDir, *cp); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("re-partition reusing names", func(t *testing.T) {
		h, a, run := setup(t)
		h.exec(fmt.Sprintf(repartition, a), fmt.Sprintf(truncate, a), "INSERT INTO "+a+".r VALUES (7, 7)")
		h.waitCaughtUp(run, 60*time.Second)
		h.assertEqual(a, "r", []string{"id", "v"})
	})
	t.Run("restart replays a statement older than the layout", func(t *testing.T) {
		h, a, run := setup(t)
		if err := run.stop(t); err != nil {
			t.Fatal(err)
		}
		cp, err := state.LoadFile(h.cfg.StateDir)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Partitions == nil || len(cp.Partitions.Layouts) != 1 || len(cp.Partitions.Layouts[0].Parts) != 3 {
			t.Fatalf("the checkpoint keeps the partition layouts %+v, want r's three partitions", cp.Partitions)
		}
		// Written while the daemon is stopped: the TRUNCATE with the old
		// layout, then the re-partition that information_schema shows.
		h.exec(fmt.Sprintf(truncate, a), fmt.Sprintf(repartition, a), "INSERT INTO "+a+".r VALUES (12, 12)")
		run = h.start()
		h.waitCaughtUp(run, 60*time.Second)
		h.assertEqual(a, "r", []string{"id", "v"})
	})
	t.Run("checkpoint without the layout stops", func(t *testing.T) {
		h, a, run := setup(t)
		if err := run.stop(t); err != nil {
			t.Fatal(err)
		}
		dropLayouts(t, h)
		h.exec(fmt.Sprintf(truncate, a), fmt.Sprintf(repartition, a))
		run = h.start()
		err := run.stopped(t, 60*time.Second, "the daemon applied a TRUNCATE PARTITION with a layout it could not know")
		wantError(t, err, a+".r", "TRUNCATE PARTITION p1", "partition layout at this binlog position is not known", "fullsync -recreate -checkpoint", "on_partition_maintenance: recopy")
		t.Logf("error: %v", err)
	})
	t.Run("checkpoint without the layout, caught up", func(t *testing.T) {
		h, a, run := setup(t)
		if err := run.stop(t); err != nil {
			t.Fatal(err)
		}
		dropLayouts(t, h)
		run = h.start()
		h.waitCaughtUp(run, 30*time.Second)
		// Caught up, information_schema's layout is the position's.
		h.exec(fmt.Sprintf(truncate, a))
		h.waitCaughtUp(run, 60*time.Second)
		h.assertEqual(a, "r", []string{"id", "v"})
	})
}

// TestPartitionLayoutsSavedByCopies: the initial snapshot and `fullsync
// -checkpoint` save the partition layouts as of their position, so a
// TRUNCATE PARTITION read right after them, before binlog2ch has caught
// up with the server, is applied by its bounds (on_partition_maintenance:
// apply) and the sides end equal under verify. Without the layouts it
// would stop: TestApplyPartitionsWithTheLayoutOfTheirTime's "checkpoint
// without the layout stops".
func TestPartitionLayoutsSavedByCopies(t *testing.T) {
	const (
		create   = "CREATE TABLE %s.r (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN MAXVALUE)"
		truncate = "ALTER TABLE %s.r TRUNCATE PARTITION p1"
	)
	var rows []string
	for id := 1; id <= 30; id++ {
		rows = append(rows, fmt.Sprintf("(%d, %d)", id, id))
	}
	insert := "INSERT INTO %s.r VALUES " + strings.Join(rows, ", ")
	layoutsSaved := func(t *testing.T, h *harness) {
		t.Helper()
		cp, err := state.LoadFile(h.cfg.StateDir)
		if err != nil || cp == nil {
			t.Fatalf("checkpoint: %v %v", cp, err)
		}
		if cp.Partitions == nil || len(cp.Partitions.Layouts) != 1 || len(cp.Partitions.Layouts[0].Parts) != 3 || len(cp.Partitions.Covers) != 1 {
			t.Fatalf("the checkpoint keeps the partition layouts %+v, want r's three partitions and the selection", cp.Partitions)
		}
	}
	t.Run("fullsync -checkpoint", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		h.exec(fmt.Sprintf(create, a), fmt.Sprintf(insert, a))
		if _, err := h.fullSync(h.cfg, io.Discard, FullSyncOptions{Recreate: true, SetCheckpoint: true}); err != nil {
			t.Fatal(err)
		}
		layoutsSaved(t, h)
		// The row after it: the daemon is not caught up at the TRUNCATE.
		h.exec(fmt.Sprintf(truncate, a), "INSERT INTO "+a+".r VALUES (15, 150)")
		run := h.start()
		h.waitCaughtUp(run, 60*time.Second)
		h.assertEqual(a, "r", []string{"id", "v"})
		h.verifyEqual("r")
		if !strings.Contains(run.logs.String(), "partition maintenance applied") {
			t.Errorf("the TRUNCATE PARTITION was not applied by bounds:\n%s", tail(run.logs.String(), 3000))
		}
	})
	t.Run("initial snapshot", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		h.exec(fmt.Sprintf(create, a), fmt.Sprintf(insert, a))
		h.noCheckpoint()
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		run := h.startWith(testHooks{beforeChunk: func(ctx context.Context, _ schema.TableName) {
			once.Do(func() { close(entered) })
			select {
			case <-release:
			case <-ctx.Done():
			}
		}})
		<-entered
		// Written while the snapshot copies: after its position.
		h.exec(fmt.Sprintf(truncate, a), "INSERT INTO "+a+".r VALUES (15, 150)")
		close(release)
		h.waitCaughtUp(run, 60*time.Second)
		h.assertEqual(a, "r", []string{"id", "v"})
		h.verifyEqual("r")
		if !strings.Contains(run.logs.String(), "partition maintenance applied") {
			t.Errorf("the TRUNCATE PARTITION was not applied by bounds:\n%s", tail(run.logs.String(), 3000))
		}
		if err := run.stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

// TestApplyPartitionMoves: with on_partition_maintenance: apply, a
// REORGANIZE PARTITION whose new partitions cover the old ones (RANGE to
// the same or a higher last bound, LIST with every old value) and a
// COALESCE PARTITION of a HASH table only move rows between partitions:
// applied as a change of layout, the layout followed (a TRUNCATE
// PARTITION of a new partition after them deletes its bounds' rows), the
// sides end equal under verify. A LIST reorganization that leaves out a
// value MariaDB held rows for deletes those rows without row events: the
// daemon stops with the cause.
func TestApplyPartitionMoves(t *testing.T) {
	t.Run("moves", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec(
			"CREATE TABLE "+a+".r (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN (30))",
			"CREATE TABLE "+a+".h (id INT PRIMARY KEY, v INT) PARTITION BY HASH (id) PARTITIONS 4",
			"CREATE TABLE "+a+".l (id INT, r INT, PRIMARY KEY (id, r)) PARTITION BY LIST (r) (PARTITION pa VALUES IN (1, 2), PARTITION pb VALUES IN (3, 4))")
		for id := 1; id < 30; id++ {
			h.exec(fmt.Sprintf("INSERT INTO %s.r VALUES (%d, %d)", a, id, id), fmt.Sprintf("INSERT INTO %s.h VALUES (%d, %d)", a, id, id),
				fmt.Sprintf("INSERT INTO %s.l VALUES (%d, %d)", a, id, id%4+1))
		}
		h.waitCaughtUp(run, 30*time.Second)
		h.exec(
			// The same range, split differently; then the last extended.
			"ALTER TABLE "+a+".r REORGANIZE PARTITION p1, p2 INTO (PARTITION p1 VALUES LESS THAN (15), PARTITION p2 VALUES LESS THAN (25), PARTITION p3 VALUES LESS THAN (30))",
			"ALTER TABLE "+a+".r REORGANIZE PARTITION p3 INTO (PARTITION p3 VALUES LESS THAN (40), PARTITION p4 VALUES LESS THAN MAXVALUE)",
			"INSERT INTO "+a+".r VALUES (45, 45)",
			"ALTER TABLE "+a+".h COALESCE PARTITION 2",
			"ALTER TABLE "+a+".l REORGANIZE PARTITION pa INTO (PARTITION pa1 VALUES IN (1), PARTITION pa2 VALUES IN (2, 5))",
			"INSERT INTO "+a+".l VALUES (50, 5)",
			// By the new layouts: [15, 25) and r = 2 or 5.
			"ALTER TABLE "+a+".r TRUNCATE PARTITION p2",
			"ALTER TABLE "+a+".l TRUNCATE PARTITION pa2")
		h.waitCaughtUp(run, 60*time.Second)
		for _, tb := range []string{"r", "h", "l"} {
			h.assertEqual(a, tb, []string{"id"})
		}
		h.verifyEqual("r", "h", "l")
		if n := counterOf(t, run.r.m.StatementsWithoutRows.WithLabelValues("apply")); n != 6 {
			t.Errorf("binlog2ch_statements_without_rows_total{action=apply} = %v, want 6", n)
		}
	})
	t.Run("list leaves out a value", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".l (id INT, r INT, PRIMARY KEY (id, r)) PARTITION BY LIST (r) (PARTITION pa VALUES IN (1, 2), PARTITION pb VALUES IN (3, 4))",
			"INSERT INTO "+a+".l VALUES (1, 1), (2, 2), (3, 3)")
		h.waitCaughtUp(run, 30*time.Second)
		q := "ALTER TABLE " + a + ".l REORGANIZE PARTITION pa INTO (PARTITION pa1 VALUES IN (1))"
		if _, err := h.my.Exec(q); err != nil {
			t.Fatalf("%s: %v (MariaDB refused it; the test expects it to drop the row with r = 2)", q, err)
		}
		var n int
		if err := h.my.QueryRow("SELECT COUNT(*) FROM " + a + ".l").Scan(&n); err != nil || n != 2 {
			t.Fatalf("MySQL's l holds %d rows after %s (%v), want 2: the row with r = 2 deleted", n, q, err)
		}
		err := run.stopped(t, 30*time.Second, "the daemon did not stop at a REORGANIZE that deleted a row")
		wantError(t, err, a+".l", "may have deleted rows without row events", "leave out 2", "fullsync -recreate -checkpoint", "on_partition_maintenance: recopy")
		t.Logf("error: %v", err)
	})
}
