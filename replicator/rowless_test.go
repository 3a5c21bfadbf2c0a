package replicator

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
			want:    []string{".t:", "missing b in the after image", "binlog_row_image NOBLOB or MINIMAL", "fullsync -recreate -checkpoint"},
		},
		{
			name:    "minimal row image",
			setup:   "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT NOT NULL DEFAULT 7, w INT)",
			session: "SET SESSION binlog_row_image = 'MINIMAL'",
			stmt:    "INSERT INTO %s.t (id) VALUES (2)",
			want:    []string{".t:", "missing v, w in the after image", "binlog_row_image NOBLOB or MINIMAL", "fullsync -recreate -checkpoint"},
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
			err2 := run.stopped(t, 30*time.Second, "the daemon did not stop")
			wantError(t, err2, append(c.want, a+".t", "binlog ")...)
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

// TestRowsWithoutEventsPolicies: with replication.on_statement_dml and
// on_partition_maintenance set to recopy, statement-logged DML and
// partition maintenance make the daemon copy the table again and go on,
// ending equal (verify); with keep, ClickHouse keeps the rows a DROP
// PARTITION removed in MySQL, on purpose. Each is counted.
func TestRowsWithoutEventsPolicies(t *testing.T) {
	t.Run("recopy", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_statement_dml: recopy, on_partition_maintenance: recopy}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 2), (3, 3)",
			"CREATE TABLE "+a+".p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
			"INSERT INTO "+a+".p VALUES (1, 1), (5, 5), (11, 11), (12, 12)")
		h.waitCaughtUp(run, 30*time.Second)
		h.session(a, "SET SESSION binlog_format = 'STATEMENT'", "INSERT INTO %s.t VALUES (4, 4)", "UPDATE %s.t SET v = v * 10 WHERE id <= 2", "DELETE FROM %s.t WHERE id = 3")
		h.exec("ALTER TABLE "+a+".p TRUNCATE PARTITION p0", "INSERT INTO "+a+".t VALUES (5, 5)", "INSERT INTO "+a+".p VALUES (2, 2)")
		h.waitCopied(run, 60*time.Second) // the copies go on beside the stream
		h.assertEqual(a, "t", []string{"id", "v"})
		h.assertEqual(a, "p", []string{"id", "v"})
		h.verifyEqual("t", "p")
		if n := counterOf(t, run.r.m.StatementsWithoutRows.WithLabelValues("recopy")); n != 4 {
			t.Errorf("binlog2ch_statements_without_rows_total{action=recopy} = %v, want 4 (three statements, one partition truncate)", n)
		}
	})
	t.Run("keep", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: keep}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
			"INSERT INTO "+a+".p VALUES (1, 1), (5, 5), (11, 11)")
		h.waitCaughtUp(run, 30*time.Second)
		h.exec("ALTER TABLE "+a+".p DROP PARTITION p0", "INSERT INTO "+a+".p VALUES (12, 12)")
		h.waitCaughtUp(run, 30*time.Second)
		if got := strings.Join(h.clickhouseRows(a, "p", []string{"id", "v"}), " "); got != "11|11 12|12 1|1 5|5" {
			t.Errorf("ClickHouse holds %q; want the dropped partition's rows kept beside MySQL's", got)
		}
		if n := counterOf(t, run.r.m.StatementsWithoutRows.WithLabelValues("keep")); n != 1 {
			t.Errorf("binlog2ch_statements_without_rows_total{action=keep} = %v, want 1", n)
		}
	})
	t.Run("unknown policy", func(t *testing.T) {
		_, err := config.Parse([]byte(strings.Replace(string(mustRead(t, "../deploy/binlog2ch.example.yaml")), "on_statement_dml: stop", "on_statement_dml: keep", 1)), "x.yaml",
			func(string) (string, bool) { return "x", true })
		if err == nil || !strings.Contains(err.Error(), "replication.on_statement_dml: want stop or recopy") {
			t.Errorf("on_statement_dml: keep: %v", err)
		}
	})
}

func counterOf(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestApplyPartitionMaintenance: with replication.on_partition_maintenance:
// apply, TRUNCATE and DROP PARTITION delete the partitions' rows in
// ClickHouse by their bounds (RANGE on a column, on a DATE with RANGE
// COLUMNS, on TO_DAYS() and YEAR() of a date, and LIST), also a partition
// that took over a dropped one's range; the sides end equal (verify). A
// HASH partition has no bounds: the daemon stops, naming recopy.
func TestApplyPartitionMaintenance(t *testing.T) {
	t.Run("bounds", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec(
			"CREATE TABLE "+a+".r (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN MAXVALUE)",
			"CREATE TABLE "+a+".rc (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE COLUMNS(d) (PARTITION y23 VALUES LESS THAN ('2024-01-01'), PARTITION y24 VALUES LESS THAN ('2025-01-01'), PARTITION later VALUES LESS THAN (MAXVALUE))",
			"CREATE TABLE "+a+".td (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) (PARTITION old VALUES LESS THAN (TO_DAYS('2024-06-01')), PARTITION cur VALUES LESS THAN MAXVALUE)",
			"CREATE TABLE "+a+".yr (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE (YEAR(d)) (PARTITION y23 VALUES LESS THAN (2024), PARTITION y24 VALUES LESS THAN (2025), PARTITION rest VALUES LESS THAN MAXVALUE)",
			"CREATE TABLE "+a+".l (id INT, r INT, PRIMARY KEY (id, r)) PARTITION BY LIST (r) (PARTITION pa VALUES IN (1, 2), PARTITION pb VALUES IN (3, 4))",
			// No key: the partitioning column may be NULL, and MySQL keeps
			// those rows in the first RANGE partition.
			"CREATE TABLE "+a+".rn (id INT NOT NULL, k INT NULL) PARTITION BY RANGE (k) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
			"INSERT INTO "+a+".rn VALUES (1, NULL), (2, 5), (3, 15)",
			"INSERT INTO "+a+".r VALUES (1, 1), (9, 9), (10, 10), (19, 19), (25, 25)",
			"INSERT INTO "+a+".rc VALUES (1, '2023-12-31'), (2, '2024-01-01'), (3, '2024-12-31'), (4, '2025-01-01')",
			"INSERT INTO "+a+".td VALUES (1, '2024-05-31'), (2, '2024-06-01'), (3, '2023-01-01')",
			"INSERT INTO "+a+".yr VALUES (1, '2023-06-01'), (2, '2024-06-01'), (3, '2025-06-01')",
			"INSERT INTO "+a+".l VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
		h.waitCaughtUp(run, 30*time.Second)
		h.exec(
			"ALTER TABLE "+a+".r DROP PARTITION p0", "INSERT INTO "+a+".r VALUES (5, 5)", // into p1 now
			"ALTER TABLE "+a+".r TRUNCATE PARTITION p1", "INSERT INTO "+a+".r VALUES (11, 11)",
			"ALTER TABLE "+a+".rc DROP PARTITION y23, y24",
			"ALTER TABLE "+a+".td TRUNCATE PARTITION old",
			"ALTER TABLE "+a+".yr DROP PARTITION y24",
			"ALTER TABLE "+a+".l TRUNCATE PARTITION pa",
			"ALTER TABLE "+a+".rn TRUNCATE PARTITION p0")
		h.waitCaughtUp(run, 60*time.Second)
		for _, tb := range []string{"r", "rc", "td", "yr", "l"} {
			h.assertEqual(a, tb, []string{"id"})
		}
		h.verifyEqual("r", "rc", "td", "yr", "l")
		// rn has no key (a changelog table): its rows of p0, the NULL one
		// included, are gone, the other stays.
		var ids []int32
		rows, err := h.ch.Query(context.Background(), "SELECT id FROM `"+a+"`.rn ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int32
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if fmt.Sprint(ids) != "[3]" {
			t.Errorf("rn in ClickHouse after TRUNCATE PARTITION p0 holds ids %v, want [3] (the NULL row is p0's in MySQL)", ids)
		}
		if n := counterOf(t, run.r.m.StatementsWithoutRows.WithLabelValues("apply")); n != 7 {
			t.Errorf("binlog2ch_statements_without_rows_total{action=apply} = %v, want 7", n)
		}
	})
	t.Run("hash", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_partition_maintenance: apply}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".h (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2", "INSERT INTO "+a+".h VALUES (1), (2)")
		h.waitCaughtUp(run, 30*time.Second)
		h.exec("ALTER TABLE " + a + ".h TRUNCATE PARTITION p0")
		err := run.stopped(t, 30*time.Second, "the daemon did not stop")
		wantError(t, err, a+".h", "HASH partitioning has no bounds", "on_partition_maintenance: recopy")
		t.Logf("error: %v", err)
	})
}

// TestAlterIgnoreDeletesDuplicates: MariaDB's ALTER IGNORE TABLE ... ADD
// UNIQUE deletes the rows that duplicate the new key and logs no rows: the
// daemon stops by default, naming the cause, and with
// replication.on_statement_dml: recopy copies the table again and ends
// equal.
func TestAlterIgnoreDeletesDuplicates(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		h := newHarness(t, 1, "")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 1), (3, 2)")
		h.waitCaughtUp(run, 30*time.Second)
		h.exec("ALTER IGNORE TABLE " + a + ".t ADD UNIQUE KEY uv (v)")
		err := run.stopped(t, 30*time.Second, "the daemon did not stop at ALTER IGNORE")
		wantError(t, err, a+".t", "ALTER IGNORE TABLE adding a unique key deletes the rows that duplicate it", "on_statement_dml: recopy")
	})
	t.Run("recopy", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_statement_dml: recopy}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 1), (3, 2)")
		h.waitCaughtUp(run, 30*time.Second)
		h.exec("ALTER IGNORE TABLE "+a+".t ADD UNIQUE KEY uv (v)", "INSERT INTO "+a+".t VALUES (4, 4)")
		h.waitCopied(run, time.Minute)
		h.verifyEqual("t")
	})
}
