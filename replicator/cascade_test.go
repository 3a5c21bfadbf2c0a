package replicator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// cascadeTables are the test schema's tables and their columns.
var cascadeTables = map[string][]string{
	"parent":         {"id", "code", "name"},
	"child":          {"id", "parent_id", "note"},
	"grandchild":     {"id", "child_id", "v"},
	"nullable_child": {"id", "parent_id", "code"},
	"restricted":     {"id", "parent_id"},
	"composite":      {"id", "pid", "pcode", "v"},
	"keyed":          {"parent_id", "n", "v"},
	"keyed_child":    {"id", "parent_id", "n"},
	"tree":           {"id", "parent", "label"},
	"late_child":     {"id", "parent_id"},
}

// cascadeSchema creates the test schema in db: two-level CASCADE
// (parent → child → grandchild), ON UPDATE CASCADE, SET NULL on delete
// and on update (by id, and by a UNIQUE code), RESTRICT, a composite key
// (id, code), a child whose primary key holds the key (an update cascade
// changes its sorting key) with a grandchild through both columns, and a
// self-referencing tree.
func cascadeSchema(db string) []string {
	return []string{
		"CREATE TABLE " + db + ".parent (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL, name VARCHAR(20), UNIQUE KEY (code), UNIQUE KEY (id, code))",
		"CREATE TABLE " + db + ".child (id INT PRIMARY KEY, parent_id INT, note VARCHAR(20), CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE)",
		"CREATE TABLE " + db + ".grandchild (id BIGINT PRIMARY KEY, child_id INT, v INT, FOREIGN KEY (child_id) REFERENCES child (id) ON DELETE CASCADE)",
		"CREATE TABLE " + db + ".nullable_child (id INT PRIMARY KEY, parent_id INT NULL, code VARCHAR(10) NULL, " +
			"FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE SET NULL ON UPDATE SET NULL, FOREIGN KEY (code) REFERENCES parent (code) ON DELETE SET NULL ON UPDATE CASCADE)",
		"CREATE TABLE " + db + ".restricted (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE RESTRICT ON UPDATE RESTRICT)",
		"CREATE TABLE " + db + ".composite (id INT PRIMARY KEY, pid INT, pcode VARCHAR(10), v INT, FOREIGN KEY (pid, pcode) REFERENCES parent (id, code) ON DELETE CASCADE ON UPDATE CASCADE)",
		"CREATE TABLE " + db + ".keyed (parent_id INT, n INT, v VARCHAR(10), PRIMARY KEY (parent_id, n), FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE)",
		"CREATE TABLE " + db + ".keyed_child (id INT PRIMARY KEY, parent_id INT, n INT, FOREIGN KEY (parent_id, n) REFERENCES keyed (parent_id, n) ON DELETE CASCADE ON UPDATE CASCADE)",
		"CREATE TABLE " + db + ".tree (id INT PRIMARY KEY, parent INT NULL, label VARCHAR(10), FOREIGN KEY (parent) REFERENCES tree (id) ON DELETE CASCADE)",
	}
}

// cascadeRows fills parents 1..n with children, grandchildren and the
// other tables' rows, and a tree; ids derive from the parent's.
func cascadeRows(db string, from, to int) []string {
	var q []string
	for p := from; p <= to; p++ {
		q = append(q, fmt.Sprintf("INSERT INTO %s.parent VALUES (%d, 'c%d', 'p%d')", db, p, p, p))
		for c := 0; c < 3; c++ {
			cid := p*10 + c
			q = append(q, fmt.Sprintf("INSERT INTO %s.child VALUES (%d, %d, 'n%d')", db, cid, p, cid))
			q = append(q, fmt.Sprintf("INSERT INTO %s.grandchild VALUES (%d, %d, %d), (%d, %d, %d)", db, cid*10, cid, cid, cid*10+1, cid, cid))
		}
		q = append(q,
			fmt.Sprintf("INSERT INTO %s.nullable_child VALUES (%d, %d, 'c%d'), (%d, %d, NULL)", db, p*10, p, p, p*10+1, p),
			fmt.Sprintf("INSERT INTO %s.composite VALUES (%d, %d, 'c%d', 1)", db, p, p, p),
			fmt.Sprintf("INSERT INTO %s.keyed VALUES (%d, 1, 'a'), (%d, 2, 'b')", db, p, p),
			fmt.Sprintf("INSERT INTO %s.keyed_child VALUES (%d, %d, 1), (%d, %d, 2)", db, p*10, p, p*10+1, p))
	}
	return q
}

// cascadeWorkload runs the parent changes that cascade, and the ones
// that must not; mid is called between its two halves (nil: nothing).
func (h *harness) cascadeWorkload(db string, mid func()) {
	h.t.Helper()
	h.exec(
		// A two-level CASCADE delete; SET NULL by id and by code; the
		// composite and the keyed rows deleted with their children.
		"DELETE FROM "+db+".parent WHERE id = 1",
		// ON UPDATE CASCADE: child, composite, keyed (its sorting key
		// changes) and keyed_child through it; SET NULL on update by id,
		// CASCADE on update by code does nothing (code unchanged).
		"UPDATE "+db+".parent SET id = 1000 WHERE id = 2",
		// A code change: composite and nullable_child.code follow.
		"UPDATE "+db+".parent SET code = 'x3' WHERE id = 3",
		// A re-inserted parent key, and the key reused by an update.
		"DELETE FROM "+db+".parent WHERE id = 4",
		"INSERT INTO "+db+".parent VALUES (4, 'c4', 'again')",
		"INSERT INTO "+db+".child VALUES (4000, 4, 'new')",
		"UPDATE "+db+".parent SET id = 2 WHERE id = 1000",
		// Several parents in one event.
		"DELETE FROM "+db+".parent WHERE id IN (7, 8)",
		// A tree: deleting the root takes every level below.
		"INSERT INTO "+db+".tree VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 2, 'b'), (4, 3, 'c'), (5, 1, 'd'), (6, NULL, 'other'), (7, 6, 'x')",
		"DELETE FROM "+db+".tree WHERE id = 1",
	)
	// RESTRICT refuses; nothing changes.
	h.exec("INSERT INTO " + db + ".restricted VALUES (1, 9)")
	if _, err := h.my.Exec("DELETE FROM " + db + ".parent WHERE id = 9"); err == nil {
		h.t.Fatal("a RESTRICT key did not refuse the delete")
	}
	if mid != nil {
		mid()
	}
	// Cascades inside a larger transaction, around rows of the same
	// transaction; a parent deleted and inserted again in it.
	tx, err := h.my.Begin()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO " + db + ".child VALUES (5000, 5, 'in tx')",
		"INSERT INTO " + db + ".grandchild VALUES (50000, 5000, 1)",
		"UPDATE " + db + ".child SET note = 'touched' WHERE parent_id = 5",
		"DELETE FROM " + db + ".parent WHERE id = 5",
		"INSERT INTO " + db + ".parent VALUES (5, 'c5', 'back')",
		"INSERT INTO " + db + ".child VALUES (5001, 5, 'after')",
		"UPDATE " + db + ".parent SET id = 6000, code = 'x6' WHERE id = 6",
		"UPDATE " + db + ".child SET note = 'moved' WHERE parent_id = 6000",
		"INSERT INTO " + db + ".parent VALUES (6, 'c6', 'reused')",
	} {
		if _, err := tx.Exec(q); err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		h.t.Fatal(err)
	}
	// Parents deleted one by one, each its own transaction: derived in
	// runs, which an unrelated table's rows do not end and a child's row
	// does.
	for p := 20; p < 40; p++ {
		h.exec(fmt.Sprintf("DELETE FROM %s.parent WHERE id = %d", db, p))
		switch p {
		case 25:
			h.exec("INSERT INTO " + db + ".tree VALUES (100, NULL, 'unrelated')")
		case 30:
			h.exec("INSERT INTO " + db + ".child VALUES (9000, 35, 'involved')")
		}
	}
	// Keys that change: a new child table with a key, its key dropped (no
	// cascade after), RESTRICT replaced by CASCADE.
	h.exec(
		"CREATE TABLE "+db+".late_child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE)",
		"INSERT INTO "+db+".late_child VALUES (1, 10), (2, 11), (3, 12)",
		"DELETE FROM "+db+".parent WHERE id = 10",
		"ALTER TABLE "+db+".late_child DROP FOREIGN KEY late_child_ibfk_1",
		"DELETE FROM "+db+".parent WHERE id = 11",
		"ALTER TABLE "+db+".restricted DROP FOREIGN KEY restricted_ibfk_1, ADD CONSTRAINT r2 FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE",
		"DELETE FROM "+db+".parent WHERE id = 9",
	)
	// An XA transaction's cascade, applied at its XA COMMIT with the
	// versions of its XA PREPARE, after rows written since.
	h.t.Cleanup(func() { _, _ = h.my.Exec("XA ROLLBACK 'fk'") }) // a failed test leaves no locks to DROP DATABASE
	h.session(db, "XA START 'fk'", "DELETE FROM %s.parent WHERE id = 3", "XA END 'fk'", "XA PREPARE 'fk'")
	h.exec("INSERT INTO "+db+".child VALUES (7000, 6, 'between')", "UPDATE "+db+".grandchild SET v = v + 1 WHERE child_id = 60")
	// MariaDB lets go of a prepared transaction once the session that
	// prepared it is gone on its side, a moment after the client closed it.
	waitFor(h.t, 30*time.Second, "XA COMMIT 'fk' (the preparing session gone)", func() bool {
		_, err := h.my.Exec("XA COMMIT 'fk'")
		if err != nil && !strings.Contains(err.Error(), "XAER_NOTA") {
			h.t.Fatalf("XA COMMIT 'fk': %v", err)
		}
		return err == nil
	})
	// foreign_key_checks=0: InnoDB cascades nothing; the children stay.
	h.session(db, "SET SESSION foreign_key_checks = 0", "DELETE FROM %s.parent WHERE id = 12")
}

// assertCascadeTables compares every table of the schema, then verify.
func (h *harness) assertCascadeTables(db string) {
	h.t.Helper()
	var names []string
	for table, cols := range cascadeTables {
		h.assertEqual(db, table, cols)
		names = append(names, table)
	}
	h.verifyEqual(names...)
}

// counterSum adds a counter's series whose action label is action.
func counterSum(t testing.TB, c *prometheus.CounterVec, action string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	sum := 0.0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "action" && l.GetValue() == action {
				sum += d.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestCascades: the cascades InnoDB applies without row events reach
// ClickHouse, live: tables and keys created while the daemon runs (the
// keys from the binlog's DDL), two levels of CASCADE, ON UPDATE CASCADE,
// SET NULL on delete and on update, RESTRICT, a composite key, a key in
// the child's primary key, a tree, re-inserted and reused parent keys,
// cascades inside a larger transaction, keys added and dropped, and
// foreign_key_checks=0. Then a replay of the whole binlog from the first
// checkpoint gives the same tables.
func TestCascades(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	first, err := os.ReadFile(filepath.Join(h.cfg.StateDir, state.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	run := h.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(run.logs.String(), 8000))
		}
	})
	h.exec(cascadeSchema(a)...)
	h.exec(cascadeRows(a, 1, 40)...)
	start := time.Now()
	h.cascadeWorkload(a, nil)
	h.waitCaughtUp(run, 60*time.Second)
	t.Logf("workload replicated in %s; %d cascades derived (runs of deletes count once)", time.Since(start).Round(time.Millisecond), strings.Count(run.logs.String(), `msg="cascade derived"`))
	h.assertCascadeTables(a)
	// Only the XA transaction's cascade, older than rows written since.
	if n := strings.Count(run.logs.String(), "replay=true"); n != 1 {
		t.Errorf("%d live cascades read as a replay, want 1 (the XA transaction's)", n)
	}
	for _, action := range []string{cascade.ActionDelete, cascade.ActionSetNull, cascade.ActionUpdate} {
		if n := counterSum(t, run.r.m.CascadedRows, action); n == 0 {
			t.Errorf("binlog2ch_cascaded_rows_total{action=%q} = 0; want the cascades' rows counted", action)
		}
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	// The same binlog again, from the first checkpoint: every row and every
	// derived row is written again with the same version.
	if err := os.WriteFile(filepath.Join(h.cfg.StateDir, state.CheckpointFile), first, 0o600); err != nil {
		t.Fatal(err)
	}
	run = h.start()
	h.waitCaughtUp(run, 60*time.Second)
	h.assertCascadeTables(a)
	if !strings.Contains(run.logs.String(), "replay=true") {
		t.Errorf("the replay's cascades did not read as a replay")
	}
}

// TestCascadesAfterSnapshot: tables, keys and rows there before the
// daemon's first start (the keys from information_schema, the rows from
// the initial snapshot), then the same workload.
func TestCascadesAfterSnapshot(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(cascadeSchema(a)...)
	h.exec(cascadeRows(a, 1, 40)...)
	// A replicated child of a parent that is not (tables skip_* are not).
	h.exec("CREATE TABLE "+a+".skip_parent (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".orphan_child (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES skip_parent (id) ON DELETE CASCADE)")
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(run.logs.String(), 8000))
		}
	})
	h.waitCaughtUp(run, 60*time.Second)
	if !strings.Contains(run.logs.String(), "cascading foreign key:") {
		t.Errorf("no start report of the cascading keys")
	}
	if !strings.Contains(run.logs.String(), "cascading foreign key to a table that is not replicated: binlog2ch reads that table's events") ||
		!strings.Contains(run.logs.String(), "orphan_child") {
		t.Errorf("no report of the replicated child of a parent that is not replicated")
	}
	if strings.Contains(run.logs.String(), "level=WARN") && strings.Contains(run.logs.String(), "component=foreign_keys") {
		t.Errorf("a WARN from the foreign keys' report: what cannot be derived stops at the event instead")
	}
	h.cascadeWorkload(a, nil)
	h.waitCaughtUp(run, 60*time.Second)
	h.assertCascadeTables(a)
}

// envPauseInCascade makes a child daemon stop for good in a cascade:
// "insert:N" after the Nth table's derived rows are written (the event's
// other tables not yet), "after:N" once the Nth cascade is written whole
// and before its parent event goes to its writer. Either way the
// checkpoint is before the event's transaction, and the test kills the
// daemon there.
const envPauseInCascade = "BINLOG2CH_TEST_PAUSE_IN_CASCADE"

func pauseInCascade(r *Replicator, v string, log *slog.Logger) error {
	kind, num, _ := strings.Cut(v, ":")
	n, err := strconv.Atoi(num)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", envPauseInCascade, v, err)
	}
	var seen atomic.Int64
	pause := func(schema.TableName) {
		if seen.Add(1) == int64(n) {
			log.Info("test pause in a cascade", "where", kind)
			select {} // until the test kills the process
		}
	}
	switch kind {
	case "insert":
		r.cascadeRunner.SetTestHook(pause)
	case "after":
		r.hooks.afterCascade = pause
	default:
		return fmt.Errorf("%s=%s: want insert:N or after:N", envPauseInCascade, v)
	}
	return nil
}

// TestFaultCascadeKilled SIGKILLs the daemon in the middle of cascades:
// once after some of an event's child tables got their derived rows and
// others not, once after a whole cascade was written but before the
// checkpoint passed its event. Each restart replays from the checkpoint;
// the tables end equal, exactly.
func TestFaultCascadeKilled(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(cascadeSchema(a)...)
	h.exec(cascadeRows(a, 1, 40)...)
	h.cascadeWorkload(a, nil)
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	var logs []string
	kill := func(env string) {
		t.Helper()
		if err := os.WriteFile(logPath, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		d := h.startDaemon(logPath, envPauseInCascade+"="+env)
		waitFor(t, 60*time.Second, "the daemon paused in a cascade ("+env+")", func() bool {
			data, _ := os.ReadFile(logPath)
			select {
			case <-d.done:
				t.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
			default:
			}
			return strings.Contains(string(data), "test pause in a cascade")
		})
		if err := d.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-d.done
		data, _ := os.ReadFile(logPath)
		logs = append(logs, string(data))
	}
	// The first parent event (DELETE of parent 1) derives rows for six
	// tables: stop after two of them.
	kill("insert:2")
	kill("after:3")
	// The second run replays the first event, half written: as a replay.
	if !strings.Contains(logs[1], "replay=true") {
		t.Errorf("the cascade written in part was not read as a replay")
	}
	defer func() {
		if t.Failed() {
			for i, l := range logs {
				t.Logf("run %d:\n%s", i+1, tail(l, 3000))
			}
		}
	}()
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	h.assertCascadeTables(a)
}

// TestForeignKeyModelMatchesServer follows DDL through the key model as
// the router does (parsed from the statement, not read back) and compares
// it with the keys MariaDB reports afterwards: names InnoDB generates,
// column and table renames, a key dropped by its generated name, a
// column's REFERENCES.
func TestForeignKeyModelMatchesServer(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	r := h.newReplicator(io.Discard)
	defer r.Close()
	ctx := context.Background()
	model, err := r.loadForeignKeys(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := parser.New()
	for _, q := range []string{
		"CREATE TABLE p (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL UNIQUE, UNIQUE KEY (id, code))",
		"CREATE TABLE c (id INT PRIMARY KEY, a INT REFERENCES p (id) ON DELETE CASCADE, b INT, FOREIGN KEY (b) REFERENCES p (id) ON UPDATE CASCADE, " +
			"x VARCHAR(10) REFERENCES p (code) ON DELETE SET NULL, CONSTRAINT named FOREIGN KEY idx (a, x) REFERENCES p (id, code), FOREIGN KEY ixname (b) REFERENCES p (id))",
		"ALTER TABLE c DROP FOREIGN KEY c_ibfk_2, ADD FOREIGN KEY (b) REFERENCES p (id) ON DELETE SET NULL",
		"ALTER TABLE c CHANGE COLUMN a aa INT",
		"ALTER TABLE p RENAME COLUMN code TO label",
		"RENAME TABLE c TO c2",
		"ALTER TABLE c2 DROP FOREIGN KEY c2_ibfk_1",
		"CREATE TABLE g (id INT PRIMARY KEY, c_id INT, FOREIGN KEY (c_id) REFERENCES c2 (id) ON DELETE CASCADE)",
		"CREATE TABLE IF NOT EXISTS g (id INT PRIMARY KEY)",
		"ALTER TABLE g RENAME TO g2, ADD COLUMN z INT, ADD FOREIGN KEY (z) REFERENCES p (id)",
		"DROP TABLE g2",
	} {
		if _, err := h.my.Exec("USE " + a); err != nil {
			t.Fatal(err)
		}
		conn, err := h.my.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "USE "+a); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		conn.Close()
		effects, ok := ddl.Parse(p, a, q)
		if !ok {
			t.Fatalf("%s: not parsed", q)
		}
		if _, unknown := model.ApplyDDL(effects); len(unknown) > 0 {
			t.Errorf("%s: the model did not know %v", q, unknown)
		}
	}
	now, err := r.loadForeignKeys(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mine := func(x schema.TableName) bool { return x.Database == a }
	got, want := model.State(mine), now.State(mine)
	if fmt.Sprint(got.Keys) != fmt.Sprint(want.Keys) {
		t.Errorf("keys followed from the DDL:\n%v\ninformation_schema's:\n%v", got.Keys, want.Keys)
	}
}

// TestCascadeKeysOfTheCheckpoint: a restart replays the binlog with the
// keys of the checkpoint's position, not information_schema's of now. A
// parent deleted while the child had no key (its children stay in MySQL),
// then a key added (with foreign_key_checks=0, over the orphans), then
// another parent deleted (its children go): replayed with today's keys,
// the first delete would take its children too.
func TestCascadeKeysOfTheCheckpoint(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".parent (id INT PRIMARY KEY)", "CREATE TABLE "+a+".child (id INT PRIMARY KEY, parent_id INT, KEY (parent_id))",
		"INSERT INTO "+a+".parent VALUES (1), (2), (3)", "INSERT INTO "+a+".child VALUES (10, 1), (11, 1), (20, 2), (30, 3)")
	run := h.start()
	h.waitCaughtUp(run, 60*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	h.exec("DELETE FROM " + a + ".parent WHERE id = 1")
	h.session(a, "SET SESSION foreign_key_checks = 0", "ALTER TABLE %s.child ADD CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE")
	h.exec("DELETE FROM " + a + ".parent WHERE id = 2")
	run = h.start()
	h.waitCaughtUp(run, 60*time.Second)
	h.assertEqual(a, "child", []string{"id", "parent_id"})
	h.verifyEqual("parent", "child")
}
