package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

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
}
