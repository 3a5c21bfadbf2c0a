package replicator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/state"
)

// noCheckpoint removes the harness's checkpoint: the next start is a
// first start, with an initial snapshot.
func (h *harness) noCheckpoint() {
	h.t.Helper()
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		h.t.Fatal(err)
	}
}

// TestVersionedTableRefused: a table already system-versioned when it
// enters the replicated set stops the daemon with the cause and the ways
// out, as ALTER TABLE ... ADD SYSTEM VERSIONING read from the binlog does
// (TestDDLNotUnderstoodStops): at the initial snapshot, and at a restart
// whose tables.include selects one. Excluded, the daemon replicates the
// rest and ends equal.
func TestVersionedTableRefused(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	if !h.mariaDB() {
		t.Skip("MariaDB's system versioning")
	}
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".h (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING",
		"INSERT INTO "+a+".t VALUES (1, 1)", "INSERT INTO "+a+".h VALUES (1, 1), (2, 2)", "DELETE FROM "+a+".h WHERE id = 1")
	h.noCheckpoint()
	wants := []string{"system-versioned", "DROP SYSTEM VERSIONING", "tables.exclude", "fullsync -recreate -checkpoint", "binlog "}

	// The initial snapshot: refused before it copies anything.
	_, err := h.runExpectingError(time.Minute)
	wantError(t, err, append(wants, a+".h", "initial snapshot")...)
	t.Logf("error: %v", err)
	if h.chTableExists(a, "t") {
		t.Error("the snapshot copied tables before refusing the versioned one")
	}

	// Excluded: the rest replicates. One more versioned table, not
	// selected yet (tables.exclude's *.skip_*).
	h.cfg.Tables.Exclude = []string{"*.skip_*", a + ".h"}
	run := h.start()
	h.exec("CREATE TABLE "+a+".skip_w (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING", "INSERT INTO "+a+".skip_w VALUES (1, 1)",
		"UPDATE "+a+".skip_w SET v = 2", "INSERT INTO "+a+".t VALUES (2, 2)")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	// Selected at a restart: refused before the stream reads on.
	h.cfg.Tables.Exclude = []string{a + ".h"}
	_, err = h.runExpectingError(time.Minute)
	wantError(t, err, append(wants, a+".skip_w", "at start")...)
	if h.chTableExists(a, "skip_w") {
		t.Error("the versioned table selected at the restart reached ClickHouse")
	}
}

// TestVersionedTableSkipped: with replication.on_table_error: skip_table,
// a system-versioned table is marked failed alone, at the initial
// snapshot and when it is renamed into the set (an online copy), its
// events skipped; the other tables end equal.
func TestVersionedTableSkipped(t *testing.T) {
	h := newHarness(t, 1, "replication: {on_table_error: skip_table}\n")
	a := h.dbs[0]
	if !h.mariaDB() {
		t.Skip("MariaDB's system versioning")
	}
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".h (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING",
		"CREATE TABLE "+a+".skip_r (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING",
		"INSERT INTO "+a+".t VALUES (1, 1)", "INSERT INTO "+a+".h VALUES (1, 1), (2, 2)", "INSERT INTO "+a+".skip_r VALUES (1, 1)")
	h.noCheckpoint()
	run := h.start()
	e := h.waitFailed(run, a+".h")
	if !strings.Contains(e.Error, "system-versioned") || !strings.Contains(e.Error, "DROP SYSTEM VERSIONING") {
		t.Errorf("the failed entry's error: %q", e.Error)
	}
	h.exec("DELETE FROM "+a+".h WHERE id = 1", "UPDATE "+a+".h SET v = 20", "INSERT INTO "+a+".t VALUES (2, 2)")
	h.exec("RENAME TABLE " + a + ".skip_r TO " + a + ".r")
	h.waitFailed(run, a+".r")
	h.exec("UPDATE "+a+".r SET v = 10", "INSERT INTO "+a+".t VALUES (3, 3)")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyOnly(a, "t")
	for _, table := range []string{"h", "r"} {
		if h.chTableExists(a, table) {
			if _, final := h.chCounts(a, table); final != 0 {
				t.Errorf("ClickHouse's %s.%s holds %d rows; a versioned table's rows must not reach it", a, table, final)
			}
		}
	}
	if logs := run.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "marked failed") {
		t.Errorf("the versioned tables were not logged as failed:\n%s", tail(logs, 3000))
	}
}
