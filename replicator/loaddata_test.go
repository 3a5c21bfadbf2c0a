package replicator

import (
	"context"
	"database/sql"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// loadSession is one MySQL session of the test's: its binlog_format set,
// LOAD DATA LOCAL INFILE fed from memory (go-sql-driver's reader handlers).
type loadSession struct {
	t    *testing.T
	conn *sql.Conn
}

func (h *harness) loadSession(t *testing.T, format string) *loadSession {
	t.Helper()
	conn, err := h.my.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &loadSession{t: t, conn: conn}
	s.exec("SET SESSION binlog_format = '" + format + "'")
	return s
}

func (s *loadSession) exec(q string) {
	s.t.Helper()
	if _, err := s.conn.ExecContext(context.Background(), q); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
}

// load runs LOAD DATA LOCAL INFILE of rows (CSV lines) into table.
func (s *loadSession) load(name, table, rows string) {
	s.t.Helper()
	mysql.RegisterReaderHandler(name, func() io.Reader { return strings.NewReader(rows) })
	defer mysql.DeregisterReaderHandler(name)
	s.exec("LOAD DATA LOCAL INFILE 'Reader::" + name + "' INTO TABLE " + table + " FIELDS TERMINATED BY ',' (id, v)")
}

// TestLoadDataWithoutRowEvents: LOAD DATA LOCAL INFILE in a session with
// binlog_format STATEMENT, which the binlog holds as BEGIN_LOAD_QUERY and
// EXECUTE_LOAD_QUERY events (the file, then the statement) and no row
// events, is statement DML: by default the daemon stops at it naming the
// table, the position, the statement and the way out (into a table not
// replicated it goes by); with replication.on_statement_dml: recopy the
// table is copied again and the sides end equal (verify), the table named
// with its database or by the session's. In a MIXED session MariaDB logs
// LOAD DATA as rows, which replicate.
func TestLoadDataWithoutRowEvents(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		h := newHarness(t, 1, "")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(10))", "CREATE TABLE "+a+".skip_t (id INT PRIMARY KEY, v VARCHAR(10))",
			"INSERT INTO "+a+".t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
		// MariaDB 10.11 logs LOAD DATA as rows in a MIXED session (it is
		// unsafe for statements; SHOW BINLOG EVENTS shows Write_rows): they
		// replicate.
		h.loadSession(t, "MIXED").load("mixed", a+".t", "7,g\n8,h\n")
		s := h.loadSession(t, "STATEMENT")
		s.load("skipped", a+".skip_t", "1,x\n2,y\n")
		h.waitCaughtUp(run, 30*time.Second)
		h.assertEqual(a, "t", []string{"id", "v"})
		s.load("stop", a+".t", "4,d\n5,e\n6,f\n")
		err := run.stopped(t, 30*time.Second, "the daemon did not stop at the LOAD DATA")
		wantError(t, err, "binlog ", a+".t:", "binlog_format STATEMENT or MIXED", "LOAD DATA", "fullsync -recreate -checkpoint")
		t.Logf("error: %v", err)
	})
	t.Run("recopy", func(t *testing.T) {
		h := newHarness(t, 1, "replication: {on_statement_dml: recopy}\n")
		a := h.dbs[0]
		run := h.start()
		h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(10))", "CREATE TABLE "+a+".u (id INT PRIMARY KEY, v VARCHAR(10))",
			"INSERT INTO "+a+".t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
		h.waitCaughtUp(run, 30*time.Second)
		s := h.loadSession(t, "STATEMENT")
		s.load("qualified", a+".t", "4,d\n5,e\n6,f\n")
		s.exec("USE " + a)
		s.load("unqualified", "u", "1,x\n2,y\n")
		m := h.loadSession(t, "MIXED")
		m.load("mixed", a+".t", "7,g\n8,h\n")
		h.exec("INSERT INTO " + a + ".t VALUES (9, 'i')")
		h.waitCopied(run, 60*time.Second)
		h.assertEqual(a, "t", []string{"id", "v"})
		h.assertEqual(a, "u", []string{"id", "v"})
		h.verifyEqual("t", "u")
		if n := counterOf(t, run.r.m.StatementsWithoutRows.WithLabelValues("recopy")); n != 2 {
			t.Errorf("binlog2ch_statements_without_rows_total{action=recopy} = %v, want 2 (the STATEMENT session's loads; the MIXED one is rows)", n)
		}
	})
}
