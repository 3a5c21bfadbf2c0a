package replicator

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestFaultRowsWithoutRowEvents: statements that change a replicated
// table's rows without row events stop the daemon with the table, the
// position, the cause and the way out; never a silent divergence. A
// statement-logged INSERT (SET SESSION binlog_format = STATEMENT),
// partition maintenance (TRUNCATE PARTITION), and partial row images
// (SET SESSION binlog_row_image NOBLOB, MINIMAL). The same statements on a
// table that is not replicated go by, and the way out the error names
// makes the two sides equal again.
func TestFaultRowsWithoutRowEvents(t *testing.T) {
	for _, c := range []struct {
		name, setup, session, stmt string
		want                       []string
	}{
		{
			name:    "statement binlog_format",
			session: "SET SESSION binlog_format = 'STATEMENT'",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT)",
			stmt:    "INSERT INTO %s.t (id, v) VALUES (2, 2)",
			want:    []string{".t:", "binlog_format STATEMENT or MIXED", "INSERT INTO", "fullsync -recreate -checkpoint"},
		},
		{
			name:    "truncate partition",
			session: "SET SESSION binlog_format = 'STATEMENT'",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
			stmt:    "ALTER TABLE %s.t TRUNCATE PARTITION p0",
			want:    []string{".t:", "partition maintenance", "TRUNCATE PARTITION", "fullsync -recreate -checkpoint"},
		},
		{
			name:    "statement INSERT ... RETURNING, which the parser cannot read",
			session: "SET SESSION binlog_format = 'STATEMENT'",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT)",
			stmt:    "INSERT INTO %s.t (id, v) VALUES (2, 2) RETURNING id",
			want:    []string{".t:", "binlog_format STATEMENT or MIXED", "RETURNING", "fullsync -recreate -checkpoint"},
		},
		{
			name:    "MariaDB's CONVERT PARTITION",
			session: "SET SESSION binlog_format = 'ROW'",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
			stmt:    "ALTER TABLE %s.t CONVERT PARTITION p0 TO TABLE %s.t_p0",
			want:    []string{".t:", "partition maintenance", "CONVERT PARTITION", "fullsync -recreate -checkpoint"},
		},
		{
			name:    "noblob row image",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT, b BLOB)",
			session: "SET SESSION binlog_row_image = 'NOBLOB'",
			stmt:    "UPDATE %s.t SET v = v + 1",
			want:    []string{".t:", "missing b)", "binlog_row_image NOBLOB or MINIMAL", "fullsync -recreate -checkpoint"},
		},
		{
			name:    "minimal row image",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT NOT NULL DEFAULT 7, w INT)",
			session: "SET SESSION binlog_row_image = 'MINIMAL'",
			stmt:    "INSERT INTO %s.t (id) VALUES (2)",
			want:    []string{".t:", "binlog_row_image NOBLOB or MINIMAL", "fullsync -recreate -checkpoint"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 1, "")
			a := h.dbs[0]
			run := h.start()
			h.exec(strings.ReplaceAll(c.setup, "%s", a), strings.ReplaceAll(strings.ReplaceAll(c.setup, "%s.t", "%s.skip_t"), "%s", a),
				"INSERT INTO "+a+".t (id, v) VALUES (1, 1)")
			conn, err := h.my.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			session := func(q string) {
				t.Helper()
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			session(c.session)
			// Not replicated: no stop.
			session(strings.ReplaceAll(c.stmt, "%s.t", a+".skip_t"))
			h.waitCaughtUp(run, 30*time.Second)
			h.assertEqual(a, "t", []string{"id", "v"})
			session(strings.ReplaceAll(c.stmt, "%s", a))
			var err2 error
			select {
			case err2 = <-run.done:
				run.cancel = nil
			case <-time.After(30 * time.Second):
				t.Fatalf("the daemon did not stop; logs:\n%s", tail(run.logs.String(), 4000))
			}
			for _, want := range append(c.want, a+".t", "binlog ") {
				if err2 == nil || !strings.Contains(err2.Error(), want) {
					t.Fatalf("got %v; want an error with %q", err2, want)
				}
			}
			t.Logf("error: %v", err2)
			// The way out the message gives, which a restart alone is not:
			// it would stop at the same statement.
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

// TestCreateOrReplaceTable: MariaDB's CREATE OR REPLACE TABLE, which TiDB's
// parser cannot read, drops the old table's rows: ClickHouse's go too, and
// the new table's rows arrive.
func TestCreateOrReplaceTable(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 2)")
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("CREATE OR REPLACE TABLE "+a+".t (id INT PRIMARY KEY, w VARCHAR(5))", "INSERT INTO "+a+".t VALUES (3, 'c')")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "t", []string{"id", "w"})
	h.verifyEqual("t")
}
