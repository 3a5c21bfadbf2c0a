package replicator

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestMariaDBDDLUnderstood: MariaDB's DDL that TiDB's parser refuses as
// written (RENAME COLUMN IF EXISTS, CHANGE COLUMN IF EXISTS, ALTER ONLINE,
// WAIT n, NOWAIT, an INVISIBLE column with a DEFAULT) is replicated with
// its effects: the renamed columns keep their values, the existing rows
// get the default. The sides end equal under verify, and a RENAME COLUMN
// IF EXISTS of a column that is not there renames nothing.
func TestMariaDBDDLUnderstood(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	if !h.mariaDB() {
		t.Skip("MariaDB's syntax")
	}
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, x INT, v INT)", "INSERT INTO "+a+".t VALUES (1, 10, 100), (2, 20, 200)")
	h.waitCaughtUp(run, 30*time.Second)
	for _, q := range []string{
		"ALTER TABLE %s.t RENAME COLUMN IF EXISTS nothere TO nothere2",
		"ALTER ONLINE TABLE %s.t ADD COLUMN o INT NOT NULL DEFAULT 3",
		"ALTER TABLE %s.t WAIT 5 ADD COLUMN w VARCHAR(5) DEFAULT 'w'",
		"ALTER TABLE %s.t NOWAIT ADD COLUMN n INT DEFAULT 9",
		"ALTER TABLE %s.t ADD COLUMN h INT DEFAULT 5 INVISIBLE",
	} {
		h.exec(strings.ReplaceAll(q, "%s", a))
	}
	h.exec("INSERT INTO " + a + ".t (id, x, v) VALUES (3, 30, 300)")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "t", []string{"id", "x", "v", "o", "w", "n", "h"})
	h.verifyEqual("t")
	if n := counterOf(t, run.r.m.DDL.WithLabelValues("not_understood")); n != 0 {
		t.Errorf("binlog2ch_ddl_total{result=not_understood} = %v, want 0", n)
	}

	// The renames: kept values where ClickHouse can rename a column
	// (20.4+); before, the writer's stop that says so.
	h.exec("ALTER TABLE "+a+".t RENAME COLUMN IF EXISTS x TO x2", "ALTER TABLE "+a+".t CHANGE COLUMN IF EXISTS v vv INT",
		"INSERT INTO "+a+".t (id, x2, vv) VALUES (4, 40, 400)")
	v, err := h.ch.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Version.Major < 20 || v.Version.Major == 20 && v.Version.Minor < 4 {
		err := run.stopped(t, 30*time.Second, "the daemon did not stop at a rename ClickHouse "+v.String()+" cannot do")
		wantError(t, err, a+".t", "renamed column x to x2", "cannot rename a column")
		return
	}
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "t", []string{"id", "x2", "vv", "o", "w", "n", "h"})
	h.verifyEqual("t")
	if logs := run.logs.String(); strings.Contains(logs, "not understood") {
		t.Errorf("a statement was not understood:\n%s", tail(logs, 3000))
	}
}

func TestDDLNotUnderstoodStops(t *testing.T) {
	for _, c := range []struct {
		name, stmt string
		want       []string
	}{
		{"system versioning", "ALTER TABLE %s ADD SYSTEM VERSIONING", []string{"system-versioned", "DROP SYSTEM VERSIONING", "tables.exclude"}},
		{"a default behind a table option the parser lacks", "ALTER TABLE %s ADD COLUMN d INT NOT NULL DEFAULT 4, ENCRYPTED=NO", []string{"cannot parse", "tables.exclude"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 1, "")
			a := h.dbs[0]
			if !h.mariaDB() {
				t.Skip("MariaDB's syntax")
			}
			run := h.start()
			h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".skip_t (id INT PRIMARY KEY, v INT)",
				"INSERT INTO "+a+".t VALUES (1, 1), (2, 2)")
			h.exec(strings.ReplaceAll(c.stmt, "%s", a+".skip_t"))
			h.waitCaughtUp(run, 30*time.Second)
			if n := counterOf(t, run.r.m.DDL.WithLabelValues("not_understood")); n != 1 {
				t.Errorf("binlog2ch_ddl_total{result=not_understood} = %v, want 1", n)
			}
			if logs := run.logs.String(); strings.Contains(logs, "level=WARN") {
				t.Errorf("a statement on a table not replicated was warned about:\n%s", tail(logs, 3000))
			}
			h.exec(strings.ReplaceAll(c.stmt, "%s", a+".t"))
			if c.name == "system versioning" {
				h.exec("DELETE FROM "+a+".t WHERE id = 1", "UPDATE "+a+".t SET v = 20 WHERE id = 2")
			}
			err := run.stopped(t, 30*time.Second, "the daemon did not stop")
			wantError(t, err, append(c.want, a+".t", "binlog ", "fullsync -recreate -checkpoint", strings.ReplaceAll(c.stmt, "%s", a+".t"))...)
			t.Logf("error: %v", err)
			if c.name == "system versioning" {
				h.exec("ALTER TABLE " + a + ".t DROP SYSTEM VERSIONING")
			}
			r := h.newReplicator(io.Discard)
			_, err = r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			run = h.start()
			h.exec("INSERT INTO " + a + ".t (id, v) VALUES (3, 3)")
			h.waitCaughtUp(run, 30*time.Second)
			h.verifyEqual("t")
		})
	}
}

func (h *harness) mariaDB() bool {
	h.t.Helper()
	var version string
	if err := h.my.QueryRow("SELECT VERSION()").Scan(&version); err != nil {
		h.t.Fatal(err)
	}
	return strings.Contains(strings.ToLower(version), "mariadb")
}
