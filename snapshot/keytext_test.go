package snapshot

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// TestKeyTextMatchesDriver reads key values of every type ranges are
// taken on, edge values included, both as go-sql-driver hands them to
// database/sql (as the key walk read them before, and as state files
// hold them) and as keyText renders mysqlproto's binary values: the same
// bytes, so a copy resumes from a state file either wrote.
func TestKeyTextMatchesDriver(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	db := servertest.Name("b2c_keytext")
	cfg, err := mysql.ParseDSN(srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.InterpolateParams = false // prepared: the binary protocol, as the walk used
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	my, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	my.SetMaxOpenConns(1)
	for _, q := range []string{
		"SET SESSION sql_mode = ''",
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".k (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED, " +
			"mi MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, y YEAR, " +
			"d DECIMAL(10,3), du DECIMAL(65,30) UNSIGNED, dt DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6), ts TIMESTAMP(2) NULL, " +
			"tm TIME, tm4 TIME(4), c CHAR(5), vc VARCHAR(20), b BINARY(4), vb VARBINARY(8), bl BLOB)",
		"INSERT INTO " + db + ".k VALUES " +
			"(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, 2155, " +
			"-1234567.125, 99999999999999999999999999999999999.999999999999999999999999999999, '9999-12-31', '9999-12-31 23:59:59', " +
			"'2024-02-29 12:34:56.789', '1000-01-01 00:00:00.000001', '2038-01-19 03:14:07.99', '-838:59:59', '838:59:58.9999', " +
			"'ü b', 'it''s', X'00FF0000', X'', X'0102')," +
			"(2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', " +
			"'0000-00-00 00:00:00', '0000-00-00 00:00:00', '00:00:00', '-00:00:00.5', '', '', X'', X'00', X'')," +
			"(3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 9223372036854775808, 1901, 0.001, 0.000000000000000000000000000001, '2024-00-10', " +
			"'1970-01-01 00:00:01', '2024-01-01 00:00:00', '2024-01-01 00:00:00.5', '1970-01-01 00:00:01', '99:00:00', '-100:00:00.0001', " +
			"'a', 'é', X'41', X'FF', X'00')",
	} {
		if _, err := my.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })
	q := "SELECT * FROM " + db + ".k WHERE id > ? ORDER BY id"

	rows, err := my.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := rows.Columns()
	var want [][][]byte
	for rows.Next() {
		raw := make([]sql.RawBytes, len(names))
		dest := make([]any, len(raw))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		row := make([][]byte, len(raw))
		for i, b := range raw {
			row[i] = append([]byte{}, b...)
		}
		want = append(want, row)
	}
	if err := rows.Err(); err != nil || len(want) != 3 {
		t.Fatalf("%d rows, %v", len(want), err)
	}

	c, err := mysqlproto.Dial(ctx, mysqlproto.Options{Addr: srv.MySQL.Addr(), User: srv.MySQL.User, Password: srv.MySQL.Password,
		Session: []string{"SET time_zone = '+00:00'"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stmt, err := c.Prepare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	res, err := stmt.Query(ctx, int64(0))
	if err != nil {
		t.Fatal(err)
	}
	data, n, err := res.ReadRows(ctx, nil, 1<<20)
	if err != nil || n != 3 || !res.Done() {
		t.Fatalf("%d rows, %v", n, err)
	}
	for r := 0; r < n; r++ {
		row, rest, _ := mysqlproto.NextRow(data)
		data = rest
		vals, err := mysqlproto.BinaryValues(res.Columns, row, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			got, err := keyText(res.Columns[i], v)
			if err != nil {
				t.Fatalf("row %d %s: %v", r+1, names[i], err)
			}
			if !bytes.Equal(got, want[r][i]) || got == nil {
				t.Errorf("row %d %s: %q, go-sql-driver %q", r+1, names[i], got, want[r][i])
			}
		}
	}
}
