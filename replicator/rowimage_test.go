package replicator

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// rowImageTables are the tables of the partial-image tests: columns of
// the types whose placeholders differ (a NOT NULL decimal, an ENUM, a
// TEXT), and a foreign key that cascades on delete from the parent's
// primary key.
func rowImageTables(a string) []string {
	return []string{
		"CREATE TABLE " + a + ".t (id INT PRIMARY KEY, v INT NOT NULL, w VARCHAR(10), d DECIMAL(6,2) NOT NULL, e ENUM('x','y') NOT NULL, b TEXT)",
		"INSERT INTO " + a + ".t VALUES (1, 1, 'a', 1.50, 'x', 'one'), (2, 2, 'b', 2.50, 'y', 'two'), (3, 3, NULL, 3.50, 'x', NULL), (4, 4, 'd', 4.50, 'y', 'four')",
		"CREATE TABLE " + a + ".parent (id INT PRIMARY KEY, n INT)",
		"CREATE TABLE " + a + ".child (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE)",
		"INSERT INTO " + a + ".parent VALUES (1, 1), (2, 2)",
		"INSERT INTO " + a + ".child VALUES (1, 1), (2, 1), (3, 2)",
	}
}

// TestPartialRowImagesApplied: sessions with binlog_row_image MINIMAL and
// NOBLOB write rows events without every column; those that hold every
// value ClickHouse needs are applied and the sides end equal (verify):
// INSERTs naming every column, UPDATEs assigning every column the before
// image lacks (the others come from the before image), a key change,
// DELETEs whose before image holds the key (placeholders for the rest,
// NOT NULL decimal and ENUM included), a cascade from a parent's primary
// key.
func TestPartialRowImagesApplied(t *testing.T) {
	for _, c := range []struct{ image, update, keyChange string }{
		// MINIMAL: the before image is the key; the after image what was
		// assigned.
		{"MINIMAL", "UPDATE %s.t SET v = v + 10, w = 'm', d = 9.25, e = 'y', b = 'm' WHERE id = 1",
			"UPDATE %s.t SET id = 12, v = 20, w = NULL, d = 0.75, e = 'x', b = 'moved' WHERE id = 2"},
		// NOBLOB: the before image is every column but the TEXT; the after
		// image adds what was assigned.
		{"NOBLOB", "UPDATE %s.t SET v = v + 10, w = 'n', b = 'n' WHERE id = 1",
			"UPDATE %s.t SET id = 12, v = 20, b = b WHERE id = 2"},
	} {
		t.Run(c.image, func(t *testing.T) {
			h := newHarness(t, 1, "")
			a := h.dbs[0]
			run := h.start()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("logs:\n%s", tail(run.logs.String(), 6000))
				}
			})
			h.exec(rowImageTables(a)...)
			h.waitCaughtUp(run, 30*time.Second)
			h.session(a, "SET SESSION binlog_row_image = '"+c.image+"'",
				"INSERT INTO %s.t (id, v, w, d, e, b) VALUES (5, 5, 'e', 5.50, 'y', 'five')",
				c.update,
				c.keyChange,
				"DELETE FROM %s.t WHERE id = 3",
				"DELETE FROM %s.t WHERE id IN (4, 5)",
				"DELETE FROM %s.parent WHERE id = 1")
			h.exec("INSERT INTO " + a + ".t VALUES (6, 6, 'f', 6.50, 'x', 'six')")
			h.waitCaughtUp(run, 60*time.Second)
			h.assertEqual(a, "t", []string{"id", "v", "w", "d", "e", "b"})
			h.assertEqual(a, "child", []string{"id", "pid"})
			h.verifyEqual("t", "parent", "child")
		})
	}
}

// TestPartialRowImagesStop: where a partial image lacks a value ClickHouse
// needs, the daemon stops at the event, naming the table, the columns, the
// cause and the way out, which makes the sides equal again: an UPDATE
// under NOBLOB that leaves the TEXT column out of both images, one under
// MINIMAL that assigns only some columns, a DELETE under MINIMAL of a
// table partitioned in ClickHouse by a column outside the key, an INSERT
// under MINIMAL that leaves a column to its default, and a DELETE under
// MINIMAL from a parent whose cascading key references a unique key that
// is not the primary key.
func TestPartialRowImagesStop(t *testing.T) {
	for _, c := range []struct {
		name, image, stmt, table string
		override                 *config.TableOverride
		want                     []string
	}{
		{name: "noblob update without the text", image: "NOBLOB", table: "t",
			stmt: "UPDATE %s.t SET v = v + 1 WHERE id = 1",
			want: []string{"an UPDATE", "missing b in the after image", "its value is only in ClickHouse"}},
		{name: "minimal update of some columns", image: "MINIMAL", table: "t",
			stmt: "UPDATE %s.t SET v = v + 1 WHERE id = 1",
			want: []string{"an UPDATE", "missing w, d, e, b in the after image"}},
		{name: "minimal delete, partitioned by a column outside the key", image: "MINIMAL", table: "t",
			override: &config.TableOverride{PartitionBy: "e"},
			stmt:     "DELETE FROM %s.t WHERE id = 1",
			want:     []string{"a DELETE", "missing e in the before image", "partition expression (e)"}},
		{name: "minimal insert with a default", image: "MINIMAL", table: "t",
			stmt: "INSERT INTO %s.t (id, v, d, e) VALUES (9, 9, 9.00, 'x')",
			want: []string{"an INSERT", "missing w, b in the after image", "default"}},
		{name: "minimal delete, cascade from a unique key", image: "MINIMAL", table: "uparent",
			stmt: "DELETE FROM %s.uparent WHERE id = 1",
			want: []string{"a DELETE", "missing code in the before image", "the cascade of foreign key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 1, "")
			a := h.dbs[0]
			if c.override != nil {
				h.cfg.Tables.Overrides = map[string]config.TableOverride{a + "." + c.table: *c.override}
			}
			run := h.start()
			h.exec(rowImageTables(a)...)
			h.exec("CREATE TABLE "+a+".uparent (id INT PRIMARY KEY, code INT NOT NULL, UNIQUE KEY (code))",
				"CREATE TABLE "+a+".uchild (id INT PRIMARY KEY, pcode INT, FOREIGN KEY (pcode) REFERENCES uparent (code) ON DELETE CASCADE)",
				"INSERT INTO "+a+".uparent VALUES (1, 10), (2, 20)", "INSERT INTO "+a+".uchild VALUES (1, 10), (2, 20)")
			h.waitCaughtUp(run, 30*time.Second)
			h.session(a, "SET SESSION binlog_row_image = '"+c.image+"'", c.stmt)
			err := run.stopped(t, 30*time.Second, "the daemon did not stop")
			wantError(t, err, append(c.want, a+"."+c.table+":", "binlog ", "binlog_row_image NOBLOB or MINIMAL", "fullsync -recreate -checkpoint")...)
			t.Logf("error: %v", err)
			if strings.Count(err.Error(), "fullsync") != 1 {
				t.Errorf("the way out is given %d times, want once", strings.Count(err.Error(), "fullsync"))
			}
			// The way out the message gives (a restart alone stops at the
			// same event).
			r := h.newReplicator(io.Discard)
			_, err = r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			run = h.start()
			h.exec("INSERT INTO " + a + ".t VALUES (7, 7, 'g', 7.50, 'x', 'seven')")
			h.waitCaughtUp(run, 30*time.Second)
			h.verifyEqual("t", "parent", "child", "uparent", "uchild")
		})
	}
}

// TestPartialRowImageSkipsTable: with replication.on_table_error:
// skip_table, a partial image that lacks a value the table needs fails
// that table alone (its cause is a session's binlog_row_image, about its
// rows); the other tables go on, and a resync copies it back.
func TestPartialRowImageSkipsTable(t *testing.T) {
	h := newHarness(t, 1, "replication: {on_table_error: skip_table}\n")
	a := h.dbs[0]
	run := h.start()
	h.exec(rowImageTables(a)...)
	h.waitCaughtUp(run, 30*time.Second)
	h.session(a, "SET SESSION binlog_row_image = 'NOBLOB'", "UPDATE "+a+".t SET v = v + 1 WHERE id = 1")
	e := h.waitFailed(run, a+".t")
	if !strings.Contains(e.Error, "binlog_row_image NOBLOB or MINIMAL") {
		t.Errorf("the failed entry's error: %q", e.Error)
	}
	h.exec("INSERT INTO " + a + ".parent VALUES (3, 3)")
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.r.Resync(context.Background(), []schema.TableName{{Database: a, Table: "t"}}); err != nil {
		t.Fatal(err)
	}
	h.waitCopied(run, time.Minute)
	h.verifyEqual("t", "parent", "child")
}
