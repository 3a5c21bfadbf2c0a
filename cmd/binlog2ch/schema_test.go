package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// envAsMain makes the test binary behave as the binlog2ch binary, so a
// command that starts `binlog2ch run` as a child process (bench) can be
// tested: the child is this binary with the variable set.
const envAsMain = "BINLOG2CH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		main()
	}
	servertest.Main(m)
}

// testDatabase returns the test servers, connections to them and a
// database name unique to the test. Afterwards the database is dropped on
// both servers, with the user <db>_u if a test made one.
func testDatabase(t *testing.T, prefix string) (*localserver.Servers, string, *sql.DB, clickhouse.Conn) {
	t.Helper()
	srv := servertest.Need(t)
	db := servertest.Name(prefix)
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()}, Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		my.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = my.Exec("DROP DATABASE IF EXISTS " + db)
		_, _ = my.Exec("DROP USER IF EXISTS " + db + "_u")
		_ = ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
		my.Close()
		ch.Close()
	})
	return srv, db, my, ch
}

// writeConfig writes a config for the test servers selecting db.*.
func writeConfig(t *testing.T, srv *localserver.Servers, db, extra string) string {
	t.Helper()
	dir := t.TempDir()
	conf := fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4242}
clickhouse: {addr: [%q], user: %q, password: %q}
tables:
  include: ["%s.*"]
%s
state_dir: state
metrics: {listen: "127.0.0.1:0"}
`, srv.MySQL.Addr(), srv.MySQL.User, srv.MySQL.Password, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password, db, extra)
	path := filepath.Join(dir, "binlog2ch.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSchemaCommand prints the DDL for real MySQL tables and runs it on the
// real ClickHouse.
func TestSchemaCommand(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	db := servertest.Name("b2c_cmdschema")
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	conn, err := my.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE DATABASE " + db, "USE " + db, binlog2ch.BinlogFieldTestDDL,
		"CREATE TABLE no_pk (a INT, b VARCHAR(10))",
		"CREATE TABLE composite (a INT NOT NULL, b VARCHAR(10) NOT NULL, c DATETIME(3), PRIMARY KEY (b, a))",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })

	cfg := writeConfig(t, srv, db, "  overrides: {"+db+".composite: {name: comp2}}")
	code, out, errOut := runCLI(t, "schema", "-config", cfg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"CREATE DATABASE IF NOT EXISTS `" + db + "`;",
		"CREATE TABLE IF NOT EXISTS `" + db + "`.`binlog_field_test_1`",
		"ORDER BY (`b`, `a`)",
		"CREATE TABLE IF NOT EXISTS `" + db + "`.`comp2`",
		"`_op` Enum8('insert' = 1, 'update' = 2, 'delete' = 3)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	ch, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()}, Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	t.Cleanup(func() { _ = ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })
	for _, stmt := range strings.Split(out, ";\n") {
		if stmt = strings.TrimSpace(stmt); stmt == "" || !strings.Contains(stmt, "CREATE") {
			continue
		}
		if err := ch.Exec(ctx, stmt); err != nil {
			t.Errorf("ClickHouse rejects printed DDL: %v\n%s", err, stmt)
		}
	}

	if code, _, errOut := runCLI(t, "schema", "-config", cfg, "-tables", db+".nope"); code != exitUsage || !strings.Contains(errOut, db+".nope does not exist") {
		t.Errorf("unknown -tables entry: exit %d, %s", code, errOut)
	}
	if code, out, _ := runCLI(t, "schema", "-config", cfg, "-profile", "modern", "-tables", db+".composite"); code != exitOK || !strings.Contains(out, "DateTime64(3") {
		t.Errorf("-profile modern: exit %d\n%s", code, out)
	}
	// tables.include's globs: one table of the database's.
	if code, out, _ := runCLI(t, "schema", "-config", cfg, "-profile", "modern", "-tables", db+".compo?ite"); code != exitOK ||
		strings.Count(out, "-- from MySQL ") != 1 || !strings.Contains(out, "-- from MySQL "+db+".composite") {
		t.Errorf("-tables %s.compo?ite: exit %d\n%s", db, code, out)
	}
}

// TestRunCommand runs `binlog2ch run` against the test servers: rows
// written after it starts arrive, and SIGTERM (a canceled context) ends it
// with exit code 0 and a saved checkpoint.
func TestRunCommand(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	db := servertest.Name("b2c_cmdrun")
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	if _, err := my.Exec("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })
	ch, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()}, Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	t.Cleanup(func() { _ = ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })

	cfg := writeConfig(t, srv, db, "batch: {flush_interval: 100ms}\ncheckpoint: {interval: 100ms}")
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- dispatch(runCtx, &env{stdout: &out, stderr: &errOut}, []string{"run", "-config", cfg, "-log-format", "text"})
	}()
	defer cancel()

	// No checkpoint yet: the daemon starts at the current position, so wait
	// until it has saved one before writing.
	stateDir := filepath.Join(filepath.Dir(cfg), "state")
	waitFor(t, done, &errOut, func() bool {
		_, err := os.Stat(filepath.Join(stateDir, "checkpoint.json"))
		return err == nil
	})
	if _, err := my.Exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(10))"); err != nil {
		t.Fatal(err)
	}
	if _, err := my.Exec("INSERT INTO " + db + ".t VALUES (1, 'a'), (2, 'b')"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, &errOut, func() bool {
		var n uint64
		return ch.QueryRow(ctx, "SELECT count() FROM "+db+".t FINAL WHERE _is_deleted = 0").Scan(&n) == nil && n == 2
	})
	cancel()
	waitStopped(t, done, &errOut)
	if !strings.Contains(errOut.String(), "msg=stopped") {
		t.Errorf("no clean stop in the log:\n%s", errOut.String())
	}
}

// waitStopped waits for a stopped run to exit, which must be with 0.
func waitStopped(t *testing.T, done chan int, errOut *bytes.Buffer) {
	t.Helper()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("run: exit %d after it was stopped; stderr:\n%s", code, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not stop within 60s")
	}
}

func waitFor(t *testing.T, done chan int, errOut *bytes.Buffer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case code := <-done:
			t.Fatalf("run exited with %d; stderr:\n%s", code, errOut.String())
		default:
		}
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("timed out")
}
