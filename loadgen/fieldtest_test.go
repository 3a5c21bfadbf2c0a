package loadgen

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	_ "github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) { servertest.Main(m) }

func TestInsertIsDeterministicAndVaried(t *testing.T) {
	a := NewFieldTestGen(1).Insert("d", "t", 50)
	b := NewFieldTestGen(1).Insert("d", "t", 50)
	c := NewFieldTestGen(2).Insert("d", "t", 50)
	if a != b {
		t.Fatal("same seed, different rows")
	}
	if a == c {
		t.Fatal("different seeds, same rows")
	}
	if !strings.HasPrefix(a, "INSERT INTO `d`.`t` (`testtinyint`,") {
		t.Fatalf("unexpected statement start: %.80s", a)
	}
}

func TestAppendIdentEscapesBackquotes(t *testing.T) {
	if got := string(appendIdent(nil, "a`b")); got != "`a``b`" {
		t.Fatalf("got %s", got)
	}
}

// TestMariaDBAcceptsEveryValue inserts generated rows in strict mode: any
// value out of a column's range or badly quoted fails the INSERT or leaves a
// warning.
func TestMariaDBAcceptsEveryValue(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	db, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // session settings below must apply to every statement
	name := servertest.Name("b2c_loadgen")
	for _, q := range []string{
		SessionSetup,
		"SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO'",
		"CREATE DATABASE " + name,
		"USE " + name,
		binlog2ch.BinlogFieldTestDDL,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP DATABASE " + name) })

	g := NewFieldTestGen(42)
	for i := 0; i < 4; i++ {
		if _, err := db.ExecContext(ctx, g.Insert(name, "binlog_field_test_1", 500)); err != nil {
			t.Fatalf("insert: %v", err)
		}
		var warnings int
		if err := db.QueryRowContext(ctx, "SELECT @@warning_count").Scan(&warnings); err != nil {
			t.Fatal(err)
		}
		if warnings != 0 {
			t.Fatalf("insert left %d warnings", warnings)
		}
	}
	var n, negBig, posBig, bigUnsigned int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(testbigint < 0), SUM(testbigint > 0),
		SUM(test_unsinged_bigint > 9223372036854775807) FROM binlog_field_test_1`).Scan(&n, &negBig, &posBig, &bigUnsigned); err != nil {
		t.Fatal(err)
	}
	if n != 2000 || negBig == 0 || posBig == 0 || bigUnsigned == 0 {
		t.Fatalf("rows=%d negative bigint=%d positive=%d unsigned above int64=%d: want 2000 rows spread over the ranges", n, negBig, posBig, bigUnsigned)
	}
}
