package replicator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/control"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// waitCopied waits until the running daemon has no table in its copy
// state: every copy asked for is swapped in.
func (h *harness) waitCopied(run *running, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if s := run.r.running.Load(); s != nil && len(s.CopyState()) == 0 {
			h.waitCaughtUp(run, timeout)
			if len(s.CopyState()) == 0 {
				return
			}
		}
		select {
		case err := <-run.done:
			run.done <- err
			h.t.Fatalf("the daemon stopped during an online copy: %v\n%s", err, tail(run.logs.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("online copies not done within %s:\n%s", timeout, tail(run.logs.String(), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fill inserts n rows (id 1..n) into db.table (id INT PRIMARY KEY, v
// VARCHAR).
func (h *harness) fill(db, table string, n int) {
	h.t.Helper()
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'v%d')", i, i))
	}
	h.exec(fmt.Sprintf("INSERT INTO `%s`.`%s` VALUES %s", db, table, strings.Join(vals, ", ")))
}

// TestTableSelectedAtRestart: a table added to tables.include while the
// daemon was stopped holds all its rows after the restart, copied online
// (not only those written since), and the copy state says so.
func TestTableSelectedAtRestart(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".skip_b (id INT PRIMARY KEY, v VARCHAR(20))")
	h.fill(a, "t", 10)
	h.fill(a, "skip_b", 100)
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil || cp.Selection == nil || len(cp.Selection.Exclude) != 1 {
		t.Fatalf("checkpoint's selection: %+v, %v", cp, err)
	}
	h.cfg.Tables.Exclude = nil // skip_b is selected now
	run = h.start()
	h.exec("INSERT INTO " + a + ".skip_b VALUES (101, 'new')")
	h.waitCopied(run, time.Minute)
	h.verifyEqual("t", "skip_b")
	if h.chTableExists(a, "skip_b__b2c_shadow") {
		t.Error("the shadow table is left")
	}
	if !strings.Contains(run.logs.String(), "online copy swapped in") {
		t.Errorf("no online copy logged:\n%s", tail(run.logs.String(), 3000))
	}
}

// TestTablesComeAndGo: with the daemon running throughout, a table renamed
// into the set, one renamed between two replicated databases, a database
// dropped and created again, and columns added whose values for existing
// rows the binlog does not carry all end equal.
func TestTablesComeAndGo(t *testing.T) {
	h := newHarness(t, 2, "")
	a, b := h.dbs[0], h.dbs[1]
	other := servertest.Name("b2c_other")
	h.exec("CREATE DATABASE " + other)
	t.Cleanup(func() { _, _ = h.my.Exec("DROP DATABASE IF EXISTS " + other) })
	h.exec("CREATE TABLE "+other+".c (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE "+b+".z (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".g (id INT PRIMARY KEY, v VARCHAR(20))")
	h.fill(other, "c", 50)
	run := h.start()
	h.fill(a, "t", 30)
	h.fill(a, "g", 20)
	h.exec("INSERT INTO " + b + ".z VALUES (1, 'one'), (2, 'two')")
	h.waitCaughtUp(run, 30*time.Second)

	// Into the set: its 50 rows are copied.
	h.exec("RENAME TABLE "+other+".c TO "+a+".c", "INSERT INTO "+a+".c VALUES (51, 'new')")
	// Between two replicated databases: the table moves.
	h.exec("RENAME TABLE "+a+".t TO "+b+".t", "INSERT INTO "+b+".t VALUES (31, 'new')")
	// Values for the existing rows the binlog does not carry.
	h.exec("ALTER TABLE " + a + ".g ADD COLUMN ts DATETIME DEFAULT CURRENT_TIMESTAMP, ADD COLUMN d INT AS (id*2) STORED, ADD COLUMN u VARCHAR(40) DEFAULT (UUID())")
	h.exec("INSERT INTO " + a + ".g (id, v) VALUES (21, 'new')")
	h.waitCopied(run, time.Minute)
	h.verifyEqual("c", "t", "g")
	if h.chTableExists(a, "t") {
		t.Errorf("%s.t stays in ClickHouse after its rename to %s.t", a, b)
	}

	// A database dropped and created again starts clean.
	h.exec("DROP DATABASE "+b, "CREATE DATABASE "+b, "CREATE TABLE "+b+".z (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO "+b+".z VALUES (7, 'seven')")
	h.waitCopied(run, time.Minute)
	h.verifyEqual("z")
	if h.chTableExists(b, "t") {
		t.Errorf("%s.t stays in ClickHouse after DROP DATABASE", b)
	}
}

// TestReloadSelectsTable: a reload that selects another table copies it
// online while the daemon runs; one that deselects a table stops it.
func TestReloadSelectsTable(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 100}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".skip_n (id INT PRIMARY KEY, v VARCHAR(20))")
	h.fill(a, "skip_n", 1000)
	run := h.start()
	h.fill(a, "t", 10)
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.r.Reload(config.TablesConfig{Include: []string{a + ".*"}}); err != nil {
		t.Fatal(err)
	}
	h.exec("UPDATE " + a + ".skip_n SET v = 'changed' WHERE id <= 10")
	h.waitCopied(run, time.Minute)
	h.cfg.Tables.Exclude = nil // for verify
	h.verifyEqual("t", "skip_n")
	if err := run.r.Reload(config.TablesConfig{Include: []string{a + ".t"}}); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO " + a + ".skip_n VALUES (5000, 'after')")
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil || cp.Selection == nil || strings.Join(cp.Selection.Include, ",") != a+".t" {
		t.Fatalf("checkpoint's selection after the reload: %+v, %v", cp.Selection, err)
	}
	var n uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count() FROM `"+a+"`.skip_n WHERE id = 5000").Scan(&n); err != nil || n != 0 {
		t.Errorf("a row written after skip_n was deselected reached ClickHouse (%d, %v)", n, err)
	}
}

// TestFaultKillDuringOnlineCopy SIGKILLs the daemon (a child process) in
// the middle of an online copy, with the copy's confirmed ranges in the
// checkpoint and the table written meanwhile; the restarted daemon resumes
// the copy from them and the sides end equal.
func TestFaultKillDuringOnlineCopy(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 50, workers: 1}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".skip_n (id INT PRIMARY KEY, v VARCHAR(20))")
	h.fill(a, "skip_n", 2000)
	run := h.start()
	h.fill(a, "t", 10)
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	// skip_n enters the set while the daemon is stopped.
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.path, []byte(strings.Replace(string(data), `exclude: ["*.skip_*"]`, "exclude: []", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if h.cfg, err = config.Load(h.path); err != nil {
		t.Fatal(err)
	}

	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath, envPauseAfterChunks+"=6")
	// Killed once the checkpoint holds some of the copy's ranges.
	deadline := time.Now().Add(time.Minute)
	for {
		cp, err := state.LoadFile(h.cfg.StateDir)
		if err != nil {
			t.Fatal(err)
		}
		if e := cp.Tables[a+".skip_n"]; e != nil && strings.Contains(string(e.Progress), `"done"`) {
			break
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(logPath)
			t.Fatalf("no copy progress checkpointed within a minute:\n%s", tail(string(data), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.exec("UPDATE "+a+".skip_n SET v = 'changed' WHERE id % 7 = 0", "DELETE FROM "+a+".skip_n WHERE id % 11 = 0", "INSERT INTO "+a+".skip_n VALUES (3000, 'new')")
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.done
	run = h.start()
	h.waitCopied(run, 2*time.Minute)
	if !strings.Contains(run.logs.String(), "resuming the online copy") {
		t.Errorf("the copy was not resumed:\n%s", tail(run.logs.String(), 3000))
	}
	h.verifyEqual("t", "skip_n")
}

// TestResyncOnline: a table whose ClickHouse rows went wrong (changed
// there by hand) is copied again online by Resync while the daemon runs
// and the table is written; readers never find it empty.
func TestResyncOnline(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 100}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY, v VARCHAR(20))")
	run := h.start()
	h.fill(a, "t", 500)
	h.waitCaughtUp(run, 30*time.Second)
	if err := h.ch.Exec(context.Background(), "INSERT INTO `"+a+"`.t (id, v, _version) SELECT 9999, 'stray', 1"); err != nil {
		t.Fatal(err)
	}
	if err := run.r.Resync(context.Background(), []schema.TableName{{Database: a, Table: "t"}}); err != nil {
		t.Fatal(err)
	}
	h.exec("UPDATE " + a + ".t SET v = 'during' WHERE id <= 20")
	h.waitCopied(run, time.Minute)
	h.exec("INSERT INTO " + a + ".t VALUES (600, 'after')")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
	err := run.r.Resync(context.Background(), []schema.TableName{{Database: a, Table: "skip_x"}})
	wantError(t, err, "skip_x is not selected")
}

// TestResyncOffline: with no daemon running, a table whose ClickHouse rows
// went wrong is copied again into a shadow and swapped in; the next start
// goes on from the checkpoint and the sides stay equal.
func TestResyncOffline(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY, v VARCHAR(20))")
	run := h.start()
	h.fill(a, "t", 200)
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	if err := h.ch.Exec(context.Background(), "INSERT INTO `"+a+"`.t (id, v, _version) SELECT 9999, 'stray', 1"); err != nil {
		t.Fatal(err)
	}
	h.exec("UPDATE " + a + ".t SET v = 'offline' WHERE id <= 5")
	if err := ResyncOffline(context.Background(), h.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), []schema.TableName{{Database: a, Table: "t"}}); err != nil {
		t.Fatal(err)
	}
	h.verifyEqual("t")
	run = h.start()
	h.exec("INSERT INTO " + a + ".t VALUES (300, 'after')")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}

// TestFaultKillDuringResync SIGKILLs the daemon (a child process) in the
// middle of a copy `binlog2ch resync` asked for over the control channel;
// the restarted daemon resumes it and the sides end equal.
func TestFaultKillDuringResync(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 50, workers: 1}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY, v VARCHAR(20))")
	h.fill(a, "t", 1000)
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	// Only the resync's copy reads chunks: the daemon starts from the
	// harness's checkpoint, with no copy of its own.
	d := h.startDaemon(logPath, envPauseAfterChunks+"=6")
	h.waitCaughtUpProcess(d, logPath, time.Minute)
	if err := h.ch.Exec(context.Background(), "INSERT INTO `"+a+"`.t (id, v, _version) SELECT 9999, 'stray', 1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := control.Send(ctx, h.cfg.StateDir, control.Request{Op: "resync", Tables: []string{a + ".t"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resync answered: %+v", resp)
	deadline := time.Now().Add(time.Minute)
	for {
		cp, err := state.LoadFile(h.cfg.StateDir)
		if err != nil {
			t.Fatal(err)
		}
		if e := cp.Tables[a+".t"]; e != nil && e.Reason == state.ReasonResync && strings.Contains(string(e.Progress), `"done"`) {
			break
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(logPath)
			t.Fatalf("no resync progress checkpointed within a minute:\n%s", tail(string(data), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.exec("UPDATE "+a+".t SET v = 'changed' WHERE id % 7 = 0", "DELETE FROM "+a+".t WHERE id % 11 = 0")
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.done
	run := h.start()
	h.waitCopied(run, 2*time.Minute)
	h.verifyEqual("t")
}

// TestCascadeIntoTableBeingCopied: a foreign-key cascade (rows InnoDB
// deletes without row events, derived from ClickHouse's rows) reaches a
// table while it is copied online, after the copy read the rows it
// deletes: the copy starts over after it, and the sides end equal.
func TestCascadeIntoTableBeingCopied(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 20, workers: 1}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".parent (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE "+a+".skip_child (id INT PRIMARY KEY, parent_id INT, v VARCHAR(20), FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE)")
	h.fill(a, "parent", 10)
	var vals []string
	for i := 1; i <= 200; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'c%d')", i, (i-1)/20+1, i))
	}
	h.exec("INSERT INTO " + a + ".skip_child VALUES " + strings.Join(vals, ", "))
	// The first copy of skip_child holds before its second chunk, with the
	// first chunk (children of parent 1) read.
	held, release := make(chan struct{}), make(chan struct{})
	var chunks atomic.Int64
	run := h.startWith(testHooks{beforeChunk: func(ctx context.Context, table schema.TableName) {
		if table.Table == "skip_child" && chunks.Add(1) == 2 {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}})
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.r.Reload(config.TablesConfig{Include: []string{a + ".*"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatalf("the copy did not reach its second chunk:\n%s", tail(run.logs.String(), 3000))
	}
	h.exec("DELETE FROM " + a + ".parent WHERE id = 1") // cascades to children 1..20
	h.waitCaughtUp(run, 30*time.Second)
	close(release)
	h.waitCopied(run, time.Minute)
	h.cfg.Tables.Exclude = nil
	h.verifyEqual("parent", "skip_child")
	if !strings.Contains(run.logs.String(), "foreign-key cascade from") {
		t.Errorf("the copy did not start over at the cascade:\n%s", tail(run.logs.String(), 3000))
	}
}

// TestSelectedParentCopiesChildren: a parent table selected only later
// had its deletes cascade into a replicated child, unseen; selecting it
// copies the child too, and both end equal.
func TestSelectedParentCopiesChildren(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".skip_parent (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE "+a+".child (id INT PRIMARY KEY, parent_id INT, v VARCHAR(20), FOREIGN KEY (parent_id) REFERENCES skip_parent (id) ON DELETE CASCADE)")
	h.fill(a, "skip_parent", 5)
	run := h.start()
	h.exec("INSERT INTO " + a + ".child VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c')")
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("DELETE FROM " + a + ".skip_parent WHERE id = 1") // cascades to children 1 and 2, unseen
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.r.Reload(config.TablesConfig{Include: []string{a + ".*"}}); err != nil {
		t.Fatal(err)
	}
	h.waitCopied(run, time.Minute)
	h.cfg.Tables.Exclude = nil
	h.verifyEqual("skip_parent", "child")
}

// TestFullSyncForgetsCopies: a fullsync of tables run's copy state lists
// (a failed one here) takes them out of it: run then streams them rather
// than copying them again.
func TestFullSyncForgetsCopies(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".u (id INT PRIMARY KEY, v VARCHAR(20))")
	run := h.start()
	h.fill(a, "t", 10)
	h.fill(a, "u", 10)
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	cp.Tables = map[string]*state.TableCopy{
		a + ".t": {State: state.CopyFailed, Reason: state.ReasonSelected, Error: "by hand"},
		a + ".u": {State: state.CopyFailed, Reason: state.ReasonSelected, Error: "by hand"},
	}
	if err := state.SaveFile(h.cfg.StateDir, *cp); err != nil {
		t.Fatal(err)
	}
	r := h.newReplicator(io.Discard)
	_, err = r.FullSync(context.Background(), FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "t"}}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if cp, err = state.LoadFile(h.cfg.StateDir); err != nil {
		t.Fatal(err)
	}
	if cp.Tables[a+".t"] != nil || cp.Tables[a+".u"] == nil {
		t.Errorf("run's copy state after a fullsync of %s.t: %v", a, cp.Tables)
	}
}
