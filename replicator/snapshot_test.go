package replicator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/loadgen"
)

// fillFieldTest creates binlog_field_test_1 in db and writes rows generated
// rows over four connections, with dates moved into ClickHouse 18.16's
// range (the generator spans MySQL's), so every value compares exactly.
func (h *harness) fillFieldTest(db string, rows, maxLen int) {
	h.t.Helper()
	h.exec("SET GLOBAL max_allowed_packet = 268435456")
	ctx := context.Background()
	conn, err := h.my.Conn(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, q := range []string{loadgen.SessionSetup, "USE " + db, binlog2ch.BinlogFieldTestDDL} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			h.t.Fatal(err)
		}
	}
	conn.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	per := rows / 4
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := h.my.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, loadgen.SessionSetup); err != nil {
				errs <- err
				return
			}
			gen := loadgen.NewFieldTestGen(uint64(c + 1))
			if maxLen > 0 {
				gen.Compact(maxLen)
			}
			n := per
			if c == 3 {
				n = rows - 3*per
			}
			for done := 0; done < n; {
				k := min(1000, n-done)
				if _, err := conn.ExecContext(ctx, gen.Insert(db, "binlog_field_test_1", k)); err != nil {
					errs <- err
					return
				}
				done += k
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	h.exec("UPDATE " + db + ".binlog_field_test_1 SET testdate = GREATEST(LEAST(testdate, '2105-12-31'), '1970-01-02'), " +
		"testdatetime = GREATEST(LEAST(testdatetime, '2105-12-31 23:59:59'), '1970-01-02 00:00:00')")
}

// fieldTestCompared are binlog_field_test's columns that MySQL's CAST(...
// AS CHAR) and ClickHouse's toString print alike.
var fieldTestCompared = []string{"id", "testtinyint", "testsmallint", "testmediumint", "testint", "testbigint",
	"testvarchar", "testchar", "testenum", "testset", "testtime", "testdate", "testyear", "testtimestamp", "testdatetime",
	"testdecimal", "testtext", "testbool", "test_unsinged_tinyint", "test_unsinged_smallint", "test_unsinged_mediumint",
	"test_unsinged_int", "test_unsinged_bigint"}

// chDump renders every column of a ClickHouse table but the version, in
// hex, ordered by the first column: two tables written by different paths
// compare exactly, whatever the types.
func (h *harness) chDump(db, table string, final bool) []string {
	h.t.Helper()
	ctx := context.Background()
	rows, err := h.ch.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = ?", db, table)
	if err != nil {
		h.t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			h.t.Fatal(err)
		}
		if c != "_version" {
			cols = append(cols, c)
		}
	}
	rows.Close()
	if len(cols) == 0 {
		h.t.Fatalf("%s.%s does not exist in ClickHouse", db, table)
	}
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, fmt.Sprintf("ifNull(hex(toString(`%s`)), 'NULL')", c))
	}
	fin := ""
	if final {
		fin = " FINAL"
	}
	q := fmt.Sprintf("SELECT arrayStringConcat([%s], '|') AS r FROM `%s`.`%s`%s ORDER BY r", strings.Join(exprs, ", "), db, table, fin)
	res, err := h.ch.Query(ctx, q)
	if err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	defer res.Close()
	var out []string
	for res.Next() {
		var s string
		if err := res.Scan(&s); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func (h *harness) sameDump(what string, a, b []string) {
	h.t.Helper()
	if len(a) != len(b) {
		h.t.Errorf("%s: %d rows vs %d", what, len(a), len(b))
		return
	}
	for i := range a {
		if a[i] != b[i] {
			h.t.Errorf("%s: row %d differs:\n%s\n%s", what, i, a[i], b[i])
			return
		}
	}
}

// fullSyncConfig is the harness config with fullsync settings, its own
// state_dir, and each database copied into db+suffix.
func (h *harness) fullSyncConfig(extra, suffix string) *Config {
	h.t.Helper()
	data, err := os.ReadFile(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	conf := strings.Replace(string(data), "state_dir: state", "state_dir: state_fs"+suffix, 1)
	if suffix != "" {
		var m []string
		for _, db := range h.dbs {
			m = append(m, fmt.Sprintf("%s: %s%s", db, db, suffix))
			h.t.Cleanup(func() { _ = h.ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+suffix) })
		}
		conf = strings.Replace(conf, "clickhouse: {", "clickhouse: {database_map: {"+strings.Join(m, ", ")+"}, ", 1)
	}
	path := filepath.Join(filepath.Dir(h.path), "fullsync"+suffix+".yaml")
	if err := os.WriteFile(path, []byte(conf+extra), 0o600); err != nil {
		h.t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		h.t.Fatal(err)
	}
	return cfg
}

func (h *harness) fullSync(cfg *Config, logs io.Writer, opts FullSyncOptions) ([]TableStatus, error) {
	h.t.Helper()
	r, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		h.t.Fatal(err)
	}
	defer r.Close()
	return r.FullSync(context.Background(), opts)
}

// everyTypeTable is many column types with edge values and NULLs.
func (h *harness) everyTypeTable(db string) []string {
	h.exec(
		"CREATE TABLE "+db+".ty (id BIGINT UNSIGNED PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, mi MEDIUMINT, mu MEDIUMINT UNSIGNED, "+
			"bu BIGINT UNSIGNED, d DECIMAL(20,6), d2 DECIMAL(65,30), f FLOAT, db DOUBLE, bt BIT(10), b64 BIT(64), y YEAR, dt DATE, dtm DATETIME, "+
			"dtm6 DATETIME(6), ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, tm TIME(2), c CHAR(3), bin BINARY(3), vb VARBINARY(5), "+
			"tx TEXT, e ENUM('x','y,z'), s SET('p','q'), j JSON, g GEOMETRY)",
		"INSERT INTO "+db+".ty VALUES (18446744073709551615, -128, 255, -8388608, 16777215, 18446744073709551615, -12345678901234.123456, "+
			"-99999999999999999999999999999999999.999999999999999999999999999999, 3.40282e38, 1.7976931348623157e308, b'1010101010', "+
			"b'1111111111111111111111111111111111111111111111111111111111111111', 2155, '2024-02-29', '2024-02-29 12:34:56', "+
			"'2024-02-29 12:34:56.123456', '2038-01-19 03:14:07', '2038-01-19 03:14:07.999', '-838:59:58.99', 'é', 'a', X'00FF00', "+
			"'text', 'y,z', 'p,q', '{\"a\": [1, 2]}', ST_GeomFromText('POINT(1 2)'))",
		"INSERT INTO "+db+".ty VALUES (9223372036854775808, 127, 0, 0, 0, 9223372036854775807, 0.000001, 1e-30, 0.1, 0.1, 0, 0, 1901, "+
			"'1970-01-02', '1970-01-02 00:00:00', '1970-01-01 00:00:00.000001', '1970-01-01 00:00:01', NULL, '00:00:00', '', '', '', '', 'x', '', '[]', "+
			"ST_GeomFromText('LINESTRING(0 0, 1 1)'))",
		"INSERT INTO "+db+".ty (id) VALUES (1), (2), (3)",
		"INSERT INTO "+db+".ty (id, f, db, tm, bin) VALUES (4, -1.17549e-38, -2.2250738585072014e-308, '838:59:59', X'000000')",
	)
	return []string{"id", "ti", "tu", "mi", "mu", "bu", "d", "d2", "y", "dt", "dtm", "dtm6", "ts", "ts3", "tm", "c", "tx", "e", "s", "j"}
}

// TestFullSyncCopiesTables copies binlog_field_test (200k rows), a table of
// every type, a composite-key table and a table without a key, and compares
// every row with MySQL and with what the binlog replication (CDC) wrote for
// the same rows: the two paths must write identical values.
func TestFullSyncCopiesTables(t *testing.T) {
	// clamp: CDC sees the generated rows before their dates are moved into
	// ClickHouse's range.
	h := newHarness(t, 1, "schema: {invalid_dates: clamp}\n")
	a := h.dbs[0]
	run := h.start()
	h.fillFieldTest(a, 200_000, 64)
	tyCols := h.everyTypeTable(a)
	h.exec("CREATE TABLE " + a + ".comp (tenant INT NOT NULL, code VARCHAR(20) NOT NULL, day DATE NOT NULL, v DECIMAL(10,2), " +
		"PRIMARY KEY (tenant, code, day)) DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_general_ci")
	var vals []string
	for i := 0; i < 3000; i++ {
		code := []string{"a", "B", "c", "Ä", "b-", "ab"}[i%6] + fmt.Sprint(i%7)
		vals = append(vals, fmt.Sprintf("(%d, '%s', '2024-01-01' + INTERVAL %d DAY, %d.%02d)", i%5, code, i/42, i, i%100))
	}
	h.exec("INSERT INTO " + a + ".comp VALUES " + strings.Join(vals, ", "))
	h.exec("CREATE TABLE "+a+".nokey (x INT, s VARCHAR(10))",
		"INSERT INTO "+a+".nokey VALUES (1, 'a'), (1, 'a'), (2, NULL), (NULL, 'z')")
	h.waitCaughtUp(run, 120*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	cfg := h.fullSyncConfig("fullsync: {chunk_rows: 7000}\n", "_fs")
	var logs syncBuffer
	statuses, err := h.fullSync(cfg, &logs, FullSyncOptions{})
	if err != nil {
		t.Fatalf("fullsync: %v\n%s", err, tail(logs.String(), 4000))
	}
	byName := map[string]TableStatus{}
	for _, s := range statuses {
		byName[s.Name.Table] = s
	}
	if s := byName["binlog_field_test_1"]; s.Rows != 200_000 || s.Chunks < 29 || s.State != stateDone {
		t.Errorf("binlog_field_test_1: %+v", s)
	}
	if s := byName["nokey"]; !s.Scan || s.Rows != 4 {
		t.Errorf("nokey: %+v", s)
	}
	fs := a + "_fs"
	h.assertEqualInto(a, fs, "binlog_field_test_1", fieldTestCompared)
	h.assertEqualInto(a, fs, "ty", tyCols)
	h.assertEqualInto(a, fs, "comp", []string{"tenant", "code", "day", "v"})
	for _, table := range []string{"binlog_field_test_1", "ty", "comp"} {
		h.sameDump(table+": CDC vs fullsync", h.chDump(a, table, true), h.chDump(fs, table, true))
	}
	h.sameDump("nokey: CDC vs fullsync", h.chDump(a, "nokey", false), h.chDump(fs, "nokey", false))

	// A second fullsync starts a new copy (the first one completed) and
	// leaves the same state after FINAL.
	if _, err := h.fullSync(cfg, io.Discard, FullSyncOptions{Tables: []TableName{{a, "comp"}}}); err != nil {
		t.Fatal(err)
	}
	h.assertEqualInto(a, fs, "comp", []string{"tenant", "code", "day", "v"})
}

// assertEqualInto is assertEqual for a table copied into another
// ClickHouse database.
func (h *harness) assertEqualInto(db, chDB, table string, cols []string) {
	h.t.Helper()
	want := h.mysqlRows(db, table, cols)
	got := h.clickhouseRows(chDB, table, cols)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		h.t.Errorf("%s.%s differs: MySQL %d rows, ClickHouse %d rows\nMySQL:\n%s\nClickHouse:\n%s", db, table, len(want), len(got),
			truncate(strings.Join(want, "\n"), 3000), truncate(strings.Join(got, "\n"), 3000))
	}
}
