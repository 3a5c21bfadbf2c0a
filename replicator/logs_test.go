package replicator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestLibraryLogsOnStart runs the daemon as in production (JSON, INFO) with
// a ZooKeeper lease, through a start, some rows and a clean stop, and keeps
// a DEBUG log of the same run beside it. The INFO log has none of the
// libraries' chatter: no go-mysql config dump ("!ERROR:json: unsupported
// type"), no ZooKeeper connection lines, no clickhouse-go warning about
// the server's age. The DEBUG log shows each library's messages arrive,
// with their component, and still no config dump.
func TestLibraryLogsOnStart(t *testing.T) {
	servertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	zk, err := localserver.StartZooKeeper(ctx)
	cancel()
	if err != nil {
		t.Fatalf("ZooKeeper did not start: %v", err)
	}
	t.Cleanup(func() { _ = zk.Stop() })
	h := newHarness(t, 1, fmt.Sprintf("state: {name: %s, lease: zookeeper, zookeeper: [%q], session_timeout: 3s}\n", servertest.Name("logs"), zk.Addr()))
	a := h.dbs[0]
	info, debug := &syncBuffer{}, &syncBuffer{}
	log := slog.New(slog.NewMultiHandler(
		slog.NewJSONHandler(info, &slog.HandlerOptions{Level: slog.LevelInfo}),
		slog.NewJSONHandler(debug, &slog.HandlerOptions{Level: slog.LevelDebug})))
	run := h.startLogged(debug, log, testHooks{})
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO "+a+".t VALUES (1, 'a'), (2, 'b')")
	h.waitCaughtUp(run, 60*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, tail(debug.String(), 4000))
	}
	h.assertEqual(a, "t", []string{"id", "v"})

	for name, out := range map[string]string{"INFO": info.String(), "DEBUG": debug.String()} {
		if strings.Contains(out, "!ERROR") || strings.Contains(out, `"config"`) {
			t.Errorf("%s log has a config dump or a value slog could not render:\n%s", name, tail(out, 4000))
		}
	}
	has := func(lines []map[string]any, component any, msg, level string) bool {
		for _, l := range lines {
			if l["component"] == component && strings.HasPrefix(l["msg"].(string), msg) && l["level"] == level {
				return true
			}
		}
		return false
	}
	lines := logLines(t, info.String())
	for _, l := range lines {
		switch {
		case l["component"] != nil:
			t.Errorf("INFO log has a library's line: %v", l)
		case l["level"] != "INFO":
			t.Errorf("INFO log of a clean run has a %s: %v", l["level"], l)
		}
	}
	for _, want := range []string{"holding the lease", "connected", "stopped"} {
		if !has(lines, nil, want, "INFO") {
			t.Errorf("INFO log has no %q:\n%s", want, info.String())
		}
	}
	dl := logLines(t, debug.String())
	for _, want := range []struct{ component, msg string }{
		{"binlog", "binlog connection opened"},
		{"binlog", "binlog connection closed"},
		{"zookeeper", "connected to " + zk.Addr()},
		{"zookeeper", "authenticated: id="},
		{"clickhouse", "handshake complete"},
	} {
		if !has(dl, want.component, want.msg, "DEBUG") {
			t.Errorf("DEBUG log has no %s %q at DEBUG:\n%s", want.component, want.msg, tail(debug.String(), 6000))
		}
	}
}

// TestRoutinesAndGrantsIgnored loads what a schema dump with routines,
// triggers, views and events brings, and some account statements: no WARN,
// each counted as ignored. A trigger whose body updates another table
// still fires, its rows replicate. An ALTER the parser cannot read, on a
// replicated table, still warns.
func TestRoutinesAndGrantsIgnored(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	user := servertest.Name("b2c_user")
	const password = "Pw-Ignored-4c1d7e92"
	t.Cleanup(func() { _, _ = h.my.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	run := h.start()
	var addr string
	waitFor(t, 10*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".other_table (id INT PRIMARY KEY, n INT)",
		"INSERT INTO "+a+".other_table VALUES (1, 0)")
	h.waitCaughtUp(run, 30*time.Second)
	ddl := func(result string) float64 {
		return scrape(t, addr, fmt.Sprintf(`binlog2ch_ddl_total{result=%q}`, result))
	}
	ignored0, notUnderstood0 := ddl("ignored"), ddl("not_understood")
	statements := []string{
		"CREATE DEFINER=CURRENT_USER PROCEDURE " + a + ".p1(IN x INT)\nBEGIN\n  ALTER TABLE " + a + ".t ADD COLUMN zz INT;\n  DROP TABLE " + a + ".other_table;\nEND",
		"CREATE FUNCTION " + a + ".f1(x INT) RETURNS INT DETERMINISTIC\nBEGIN\n  RETURN x + 1;\nEND",
		// Loaded as mariadb-dump writes it: the server runs the versioned
		// comments and logs the statement rewritten.
		"/*!50003 CREATE*/ /*!50017 DEFINER=CURRENT_USER*/ /*!50003 TRIGGER " + a + ".trg BEFORE INSERT ON " + a + ".t FOR EACH ROW BEGIN\n" +
			"  SET @note = 'ALTER TABLE t DROP COLUMN v';\n  UPDATE " + a + ".other_table SET n = n + 1 WHERE id = 1;\nEND */",
		"/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50013 DEFINER=CURRENT_USER SQL SECURITY DEFINER */ /*!50001 VIEW " + a + ".v1 AS SELECT id FROM " + a + ".t */",
		"CREATE EVENT " + a + ".ev1 ON SCHEDULE EVERY 1 DAY DISABLE DO BEGIN\n  DELETE FROM " + a + ".t;\n  ALTER TABLE " + a + ".t ADD COLUMN q INT;\nEND",
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'",
		"SET PASSWORD FOR '" + user + "'@'%' = PASSWORD('" + password + "-2')",
		"GRANT SELECT ON " + a + ".* TO '" + user + "'@'%'",
		"REVOKE SELECT ON " + a + ".* FROM '" + user + "'@'%'",
		"ALTER PROCEDURE " + a + ".p1 COMMENT 'x'",
		"/*!50001 DROP VIEW IF EXISTS " + a + ".v1*/",
		"DROP EVENT " + a + ".ev1",
		"DROP FUNCTION " + a + ".f1",
		"DROP PROCEDURE " + a + ".p1",
		"FLUSH PRIVILEGES",
		"ANALYZE TABLE " + a + ".t",
	}
	h.exec(statements...)
	h.exec("INSERT INTO "+a+".t VALUES (1, 10), (2, 20)", "DROP TRIGGER "+a+".trg", "DROP USER '"+user+"'@'%'")
	h.waitCaughtUp(run, 30*time.Second)
	if n := ddl("ignored") - ignored0; n != float64(len(statements)+2) {
		t.Errorf("ignored %v statements, want %d", n, len(statements)+2)
	}
	if n := ddl("not_understood") - notUnderstood0; n != 0 {
		t.Errorf("%v statements not understood", n)
	}
	if logs := run.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("WARN logged:\n%s", tail(logs, 4000))
	}
	logs := run.logs.String()
	for _, kind := range []string{"CREATE PROCEDURE", "CREATE TRIGGER", "CREATE VIEW", "CREATE EVENT", "CREATE USER", "GRANT", "DROP USER"} {
		value := kind
		if strings.Contains(kind, " ") {
			value = strconv.Quote(kind)
		}
		if !strings.Contains(logs, `level=DEBUG msg="statement changes no table; ignored" kind=`+value+` binlog=`) {
			t.Errorf("no %s logged as ignored at DEBUG:\n%s", kind, tail(logs, 4000))
		}
	}
	if strings.Contains(logs, password) {
		t.Errorf("the account's password is in the log:\n%s", tail(logs, 4000))
	}
	h.assertEqual(a, "t", []string{"id", "v"})
	h.assertEqual(a, "other_table", []string{"id", "n"}) // the trigger's updates, as rows

	// MariaDB's ALTER ONLINE, which the parser reads once rewritten: no
	// WARN, nothing not understood (the statements it still cannot read
	// stop, or pass by: TestDDLNotUnderstoodStops).
	h.exec("ALTER ONLINE TABLE "+a+".t ADD COLUMN w INT", "INSERT INTO "+a+".t VALUES (3, 30, 300)")
	h.waitCaughtUp(run, 30*time.Second)
	if n := ddl("not_understood") - notUnderstood0; n != 0 {
		t.Errorf("not understood: %v, want 0", n)
	}
	if logs := run.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("WARN logged:\n%s", tail(logs, 4000))
	}
	h.assertEqual(a, "t", []string{"id", "v", "w"})
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestMySQLDriverLogs: go-sql-driver's lines reach the daemon's handler
// (not stderr) with component=mysql: an idle connection the server killed
// at DEBUG, as the pool replaces it and the query succeeds.
func TestMySQLDriverLogs(t *testing.T) {
	h := newHarness(t, 1, "")
	var out syncBuffer
	db, err := source.OpenMySQL(context.Background(), h.cfg, slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var id int64
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	h.exec(fmt.Sprintf("KILL CONNECTION %d", id))
	// The killed connection is closed by the server; the pool's next use
	// finds it dead, logs it, and takes a new one.
	waitFor(t, 30*time.Second, "the killed idle connection noticed", func() bool {
		var n int64
		if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n != id
	})
	var found bool
	for _, l := range logLines(t, out.String()) {
		if l["component"] == "mysql" && strings.HasPrefix(fmt.Sprint(l["msg"]), "closing bad idle connection") {
			found = true
			if l["level"] != "DEBUG" {
				t.Errorf("at %v: %v", l["level"], l)
			}
		}
	}
	if !found {
		t.Errorf("no driver line in the log:\n%s", out.String())
	}
}
