package replicator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes (logs).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMixedWorkload: inserts, updates (of the key too), deletes and DDL in
// mixed transactions over several tables and two databases end with
// ClickHouse equal to MySQL; filtered tables never arrive; tables created
// later that match the filter do.
func TestMixedWorkload(t *testing.T) {
	h := newHarness(t, 2, "")
	a, b := h.dbs[0], h.dbs[1]
	run := h.start()
	h.exec(
		"CREATE TABLE "+a+".t1 (id INT PRIMARY KEY, v VARCHAR(20), n INT NULL, d DECIMAL(10,2), ts DATETIME)",
		"CREATE TABLE "+a+".t2 (k1 INT NOT NULL, k2 VARCHAR(10) NOT NULL, val BIGINT UNSIGNED, PRIMARY KEY (k1, k2))",
		"CREATE TABLE "+b+".t3 (id BIGINT PRIMARY KEY, s TEXT, e ENUM('x','y','z'))",
		"CREATE TABLE "+a+".skip_me (id INT PRIMARY KEY)",
		"INSERT INTO "+a+".skip_me VALUES (1)",
	)
	tx := func(stmts ...string) {
		t.Helper()
		conn, err := h.my.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range append(append([]string{"BEGIN"}, stmts...), "COMMIT") {
			if _, err := conn.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	for i := 0; i < 20; i++ {
		tx(
			"INSERT INTO "+a+".t1 VALUES ("+itoa(i)+", 'v"+itoa(i)+"', NULL, "+itoa(i)+".25, '2024-01-02 03:04:05')",
			"INSERT INTO "+a+".t2 VALUES ("+itoa(i%5)+", 'k"+itoa(i)+"', 18446744073709551615)",
			"INSERT INTO "+b+".t3 VALUES ("+itoa(i)+", REPEAT('s', "+itoa(i)+"), 'y')",
		)
	}
	tx(
		"UPDATE "+a+".t1 SET v = 'updated', n = 7 WHERE id < 5",
		"UPDATE "+a+".t1 SET id = id + 100 WHERE id BETWEEN 5 AND 7", // key change
		"DELETE FROM "+a+".t2 WHERE k1 = 3",
		"UPDATE "+a+".t2 SET k2 = CONCAT(k2, 'x') WHERE k1 = 1", // composite key change
		"DELETE FROM "+b+".t3 WHERE id % 3 = 0",
	)
	// DDL, then rows using the new shape.
	h.exec(
		"ALTER TABLE "+a+".t1 ADD COLUMN extra VARCHAR(5) DEFAULT 'dflt' AFTER id",
		"UPDATE "+a+".t1 SET extra = 'new' WHERE id = 1",
		"INSERT INTO "+a+".t1 (id, extra, v) VALUES (500, 'x', 'after alter')",
		"ALTER TABLE "+a+".t1 DROP COLUMN n",
		"ALTER TABLE "+a+".t1 MODIFY COLUMN d DECIMAL(12,3)",
		"INSERT INTO "+a+".t1 (id, v, d) VALUES (501, 'modified', 1.125)",
		"TRUNCATE TABLE "+b+".t3",
		"INSERT INTO "+b+".t3 VALUES (1000, 'after truncate', 'z')",
		"CREATE TABLE "+b+".later (id INT PRIMARY KEY, v INT)",
		"INSERT INTO "+b+".later VALUES (1, 1), (2, 2)",
		"CREATE TABLE "+b+".doomed (id INT PRIMARY KEY)",
		"INSERT INTO "+b+".doomed VALUES (1)",
		"RENAME TABLE "+b+".later TO "+b+".renamed",
		"INSERT INTO "+b+".renamed VALUES (3, 3)",
	)
	h.waitCaughtUp(run, 60*time.Second)
	if !h.chTableExists(b, "doomed") {
		t.Fatalf("%s.doomed was not created", b)
	}
	h.exec("DROP TABLE " + b + ".doomed")
	h.waitCaughtUp(run, 60*time.Second)

	h.assertEqual(a, "t1", []string{"id", "extra", "v", "d", "ts"})
	h.assertEqual(a, "t2", []string{"k1", "k2", "val"})
	h.assertEqual(b, "t3", []string{"id", "s", "e"})
	h.assertEqual(b, "renamed", []string{"id", "v"})
	if h.chTableExists(a, "skip_me") {
		t.Errorf("excluded table %s.skip_me reached ClickHouse", a)
	}
	if h.chTableExists(b, "doomed") {
		t.Errorf("%s.doomed still exists after DROP TABLE", b)
	}
	if h.chTableExists(b, "later") {
		t.Errorf("%s.later still exists after RENAME TABLE", b)
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("clean shutdown returned %v; logs:\n%s", err, run.logs.String())
	}
}

// TestSchemaHistoryReplay: rows written before ALTER TABLE ... ADD COLUMN
// AFTER, replicated only after the ALTER, land in the right columns.
func TestSchemaHistoryReplay(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(
		"CREATE TABLE "+a+".h (id INT PRIMARY KEY, b VARCHAR(10), c INT)",
		"INSERT INTO "+a+".h VALUES (1, 'one', 10), (2, 'two', 20)",
		"ALTER TABLE "+a+".h ADD COLUMN x VARCHAR(10) DEFAULT 'X' AFTER id",
		"INSERT INTO "+a+".h VALUES (3, 'x3', 'three', 30)",
		"UPDATE "+a+".h SET c = c + 1 WHERE id = 1",
		"ALTER TABLE "+a+".h DROP COLUMN b",
		"INSERT INTO "+a+".h VALUES (4, 'x4', 40)",
	)
	run := h.start() // only now: every event above is replayed against today's schema
	h.waitCaughtUp(run, 60*time.Second)
	h.assertEqual(a, "h", []string{"id", "x", "c"})
}

// TestCleanShutdownSavesCheckpoint: a clean stop saves the position and a
// restart continues from it.
func TestCleanShutdownSavesCheckpoint(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".s (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".s VALUES (1, 1), (2, 2)")
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.logs.String(), "stopped") {
		t.Errorf("no clean stop logged:\n%s", run.logs.String())
	}
	// Restarting replays nothing wrong and picks up new rows.
	h.exec("INSERT INTO " + a + ".s VALUES (3, 3)")
	run = h.start()
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "s", []string{"id", "v"})
}

func itoa(i int) string {
	return strconv.Itoa(i)
}

// TestColumnRename: a renamed column keeps its data where ClickHouse can
// rename columns; where it cannot (before 20.4), replication stops with an
// error that says what to do, instead of dropping the column's data.
func TestColumnRename(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec(
		"CREATE TABLE "+a+".r (id INT PRIMARY KEY, old_name VARCHAR(10))",
		"INSERT INTO "+a+".r VALUES (1, 'kept')",
	)
	h.waitCaughtUp(run, 30*time.Second)
	h.exec(
		"ALTER TABLE "+a+".r CHANGE COLUMN old_name new_name VARCHAR(10)",
		"INSERT INTO "+a+".r VALUES (2, 'new')",
	)
	r := h.newReplicator(io.Discard)
	canRename := r.sink.Caps().RenameColumn
	r.Close()
	if canRename {
		h.waitCaughtUp(run, 30*time.Second)
		h.assertEqual(a, "r", []string{"id", "new_name"})
		return
	}
	select {
	case err := <-run.done:
		run.cancel = nil
		if err == nil || !strings.Contains(err.Error(), "cannot rename a column") || !strings.Contains(err.Error(), "old_name to new_name") {
			t.Fatalf("want a rename error, got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("replication did not stop on an impossible rename; logs:\n%s", run.logs.String())
	}
	// Nothing was dropped.
	var n uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count() FROM "+a+".r WHERE old_name = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("old_name data: %d rows, %v", n, err)
	}
}

// TestFaultMySQLRestart: the source goes away mid-stream (killed, as in a
// crash, while the daemon reads a 20000-row insert: the reader is held at
// the insert's third rows event until the kill); the daemon reconnects at
// the last transaction boundary it read and ends with an exact match
// (verify).
func TestFaultMySQLRestart(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.MySQL.External {
		t.Skip("needs a private MariaDB it can kill")
	}
	a := h.dbs[0]
	var events atomic.Int64
	held, release := make(chan struct{}), make(chan struct{})
	run := h.startWith(testHooks{rowsEvent: func(table schema.TableName) {
		// The first event is the two-row insert; the 20000 rows come in
		// about 20 more.
		if table.Table == "m" && events.Add(1) == 4 {
			close(held)
			<-release
		}
	}})
	h.exec("CREATE TABLE "+a+".m (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".m VALUES (1, 1), (2, 2)")
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("INSERT INTO " + a + ".m SELECT seq, seq FROM " + a + ".seq_1000_to_20999")
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatalf("the reader never reached the insert's third rows event; logs:\n%s", run.logs.String())
	}
	if err := h.srv.MySQL.Kill(); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, 60*time.Second, "the reader's reconnect", func() bool {
		return strings.Contains(run.logs.String(), "binlog stream failed; reconnecting")
	})
	if err := h.srv.MySQL.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.my.SetMaxIdleConns(0) // drop connections to the killed server
	h.my.SetMaxIdleConns(2)
	for i := 3; i < 100; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.m VALUES (%d, %d)", a, i, i), fmt.Sprintf("UPDATE %s.m SET v = v * 2 WHERE id = %d", a, i-1))
	}
	h.waitCaughtUp(run, 90*time.Second)
	h.assertEqual(a, "m", []string{"id", "v"})
	h.verifyEqual("m")
	if logs := run.logs.String(); !strings.Contains(logs, "binlog stream failed; reconnecting") || !strings.Contains(logs, `level=INFO msg="binlog stream reconnected"`) {
		t.Errorf("no reconnect logged")
	}
}

// TestManyTypesReplicated runs many column types through the daemon (table
// maps, the binlog decoder, the writers), NULLs and updates included.
func TestManyTypesReplicated(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec(
		"CREATE TABLE "+a+".ty (id BIGINT UNSIGNED PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, mi MEDIUMINT, mu MEDIUMINT UNSIGNED, "+
			"d DECIMAL(20,6), bt BIT(10), y YEAR, dt DATE, dtm DATETIME, ts TIMESTAMP NULL, tm TIME(2), c CHAR(3), bin BINARY(3), "+
			"vb VARBINARY(5), tx TEXT, e ENUM('x','y,z'), s SET('p','q'), j JSON, g GEOMETRY)",
		"INSERT INTO "+a+".ty VALUES (18446744073709551615, -128, 255, -8388608, 16777215, -12345678901234.123456, b'1010101010', 2155, "+
			"'2024-02-29', '2024-02-29 12:34:56', '2038-01-19 03:14:07', '-838:59:58.99', 'é', 'a', X'00FF00', 'text', 'y,z', 'p,q', "+
			"'{\"a\": [1, 2]}', ST_GeomFromText('POINT(1 2)'))",
		"INSERT INTO "+a+".ty (id) VALUES (1), (2)",
		"UPDATE "+a+".ty SET ti = 5, bin = 'xyz', s = 'q', tm = '12:00:00' WHERE id = 1",
		"DELETE FROM "+a+".ty WHERE id = 2",
	)
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "ty", []string{"id", "ti", "tu", "mi", "mu", "d", "y", "dt", "dtm", "ts", "tm", "c", "tx", "e", "s", "j"})
	// Bytes are compared in hex: MySQL's CAST to CHAR rewrites invalid UTF-8.
	for _, col := range []string{"bin", "vb"} {
		var my, ch string
		if err := h.my.QueryRow("SELECT GROUP_CONCAT(IFNULL(HEX(" + col + "), 'NULL') ORDER BY id) FROM " + a + ".ty").Scan(&my); err != nil {
			t.Fatal(err)
		}
		if err := h.ch.QueryRow(context.Background(), "SELECT arrayStringConcat(groupArray(ifNull(hex("+col+"), 'NULL')), ',') FROM (SELECT * FROM "+a+".ty FINAL WHERE _is_deleted = 0 ORDER BY id)").Scan(&ch); err != nil {
			t.Fatal(err)
		}
		if my != ch {
			t.Errorf("%s: MySQL %s, ClickHouse %s", col, my, ch)
		}
	}
	// BIT and GEOMETRY print differently on the two sides; compare numbers.
	var bit uint64
	var geo string
	if err := h.ch.QueryRow(context.Background(), "SELECT bt, g FROM "+a+".ty FINAL WHERE id = 18446744073709551615").Scan(&bit, &geo); err != nil {
		t.Fatal(err)
	}
	var wantGeo string
	if err := h.my.QueryRow("SELECT HEX(g) FROM " + a + ".ty WHERE id = 18446744073709551615").Scan(&wantGeo); err != nil {
		t.Fatal(err)
	}
	if bit != 0b1010101010 || geo != wantGeo {
		t.Errorf("bit %b geometry %s, want 1010101010 and %s", bit, geo, wantGeo)
	}
}

// TestTypeOverrideReplicated: per-table column type overrides reach
// ClickHouse and the values still match.
func TestTypeOverrideReplicated(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.cfg.Tables.Overrides = map[string]config.TableOverride{a + ".ov": {Columns: map[string]string{"v": "Int64", "d": "Decimal(12, 4)", "e": "String"}}}
	run := h.start()
	h.exec("CREATE TABLE "+a+".ov (id INT PRIMARY KEY, v INT, d DECIMAL(5,2), e ENUM('a','b'))",
		"INSERT INTO "+a+".ov VALUES (1, -7, -123.45, 'b'), (2, NULL, NULL, NULL)")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "ov", []string{"id", "v", "e"})
	var typ, d string
	if err := h.ch.QueryRow(context.Background(), "SELECT toTypeName(v), toString(d) FROM "+a+".ov FINAL WHERE id = 1").Scan(&typ, &d); err != nil {
		t.Fatal(err)
	}
	if typ != "Nullable(Int64)" || d != "-123.4500" {
		t.Errorf("v is %s and d %s, want Nullable(Int64) and -123.4500", typ, d)
	}
}

// TestNameReusedAfterDropAndRename: a table dropped (or renamed away) and
// at once recreated under the same name, while the old writer still has a
// backlog: the new table's writer waits for the old one, so neither the
// DROP nor the RENAME hits the new table's rows.
func TestNameReusedAfterDropAndRename(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".u (id INT PRIMARY KEY, v INT)")
	run := h.start()
	big := func(table string) string {
		return fmt.Sprintf("INSERT INTO %s.%s WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 900) SELECT i, i FROM n", a, table)
	}
	h.exec(big("t"), big("u"),
		"DROP TABLE "+a+".t",
		"CREATE TABLE "+a+".t (id INT PRIMARY KEY, w VARCHAR(10))",
		"INSERT INTO "+a+".t VALUES (1, 'new'), (2, 'new')",
		"RENAME TABLE "+a+".u TO "+a+".u2",
		"CREATE TABLE "+a+".u (id INT PRIMARY KEY, v INT)",
		"INSERT INTO "+a+".u VALUES (7, 7)",
	)
	h.waitCaughtUp(run, 60*time.Second)
	h.assertEqual(a, "t", []string{"id", "w"})
	h.assertEqual(a, "u", []string{"id", "v"})
	h.assertEqual(a, "u2", []string{"id", "v"})
}

// TestCaughtUpAfterRotation: a binlog rotation as the last thing written
// (FLUSH BINARY LOGS, or a file full after a large transaction) lets the
// checkpoint reach the new file's end: its header events come between
// transactions. It stayed at the file's position 4 before, behind the
// server's position for as long as nothing else was written.
func TestCaughtUpAfterRotation(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY)", "INSERT INTO "+a+".t VALUES (1)")
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("FLUSH BINARY LOGS")
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("INSERT INTO " + a + ".t VALUES (2)")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}
