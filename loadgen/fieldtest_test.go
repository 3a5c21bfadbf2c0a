package loadgen

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below on hosts without a zone database

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
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

	// Four statements with the default ranges, two with -full-range's.
	g, full := NewFieldTestGen(42), NewFieldTestGen(43).WithFullRange(true)
	for i := 0; i < 6; i++ {
		gen := g
		if i >= 4 {
			gen = full
		}
		if _, err := db.ExecContext(ctx, gen.Insert(name, "binlog_field_test_1", 500)); err != nil {
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
	if n != 3000 || negBig == 0 || posBig == 0 || bigUnsigned == 0 {
		t.Fatalf("rows=%d negative bigint=%d positive=%d unsigned above int64=%d: want 3000 rows spread over the ranges", n, negBig, posBig, bigUnsigned)
	}
}

// insertRows splits the VALUES of an INSERT the generator wrote into rows
// of literals: quoted strings unescaped, the others as written.
func insertRows(t *testing.T, stmt string) [][]string {
	t.Helper()
	i := strings.Index(stmt, ") VALUES ")
	if i < 0 {
		t.Fatalf("no VALUES in %.80s", stmt)
	}
	s := stmt[i+len(") VALUES "):]
	var rows [][]string
	for len(s) > 0 {
		if s[0] != '(' {
			t.Fatalf("want ( at %.40q", s)
		}
		s = s[1:]
		var row []string
		for {
			var v string
			v, s = sqlLiteral(t, s)
			row = append(row, v)
			if s == "" {
				t.Fatal("row not closed")
			}
			sep := s[0]
			s = s[1:]
			if sep == ')' {
				break
			}
			if sep != ',' {
				t.Fatalf("want , or ) at %.40q", s)
			}
		}
		rows = append(rows, row)
		if s != "" {
			if s[0] != ',' {
				t.Fatalf("want , between rows at %.40q", s)
			}
			s = s[1:]
		}
	}
	return rows
}

// sqlLiteral reads one literal at the start of s.
func sqlLiteral(t *testing.T, s string) (v, rest string) {
	t.Helper()
	if s == "" || s[0] != '\'' {
		end := strings.IndexAny(s, ",)")
		if end < 0 {
			t.Fatalf("literal not ended: %.40q", s)
		}
		return s[:end], s[end:]
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case '\'':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(c)
		}
	}
	t.Fatalf("string not closed: %.40q", s)
	return "", ""
}

// temporalTargets maps binlog_field_test's temporal columns, as `run`
// would, for every kind of ClickHouse server binlog2ch supports (18.16
// with its short Date and DateTime range, a 20.x server without Date32
// and DateTime64, a current one with them), each schema.time_as, and
// datetime_zone at both ends of the zones (UTC-12 and UTC+14: the Etc
// names count the other way) and UTC, with
// the default invalid_dates: error.
func temporalTargets(t *testing.T) (cols []string, blocks map[string]*block.Block) {
	t.Helper()
	cols = []string{"testtime", "testdate", "testyear", "testtimestamp", "testdatetime"}
	types := []string{"time", "date", "year(4)", "timestamp", "datetime"}
	tb := &schema.Table{Database: "d", Name: "binlog_field_test_1", PrimaryKey: []int{0}}
	for i, name := range append([]string{"id"}, cols...) {
		colType := append([]string{"bigint(20) unsigned"}, types...)[i]
		c, err := schema.ParseColumnType(colType, strings.Fields(strings.Split(colType, "(")[0])[0])
		if err != nil {
			t.Fatal(err)
		}
		c.Name = name
		tb.Columns = append(tb.Columns, c)
	}
	blocks = map[string]*block.Block{}
	servers := map[string]schema.Capabilities{"18.16": schema.ClickHouse18, "20.3": {Version: "20.3.1"}, "modern": schema.ClickHouseModern}
	for sname, caps := range servers {
		for _, zone := range []string{"UTC", "Etc/GMT+12", "Etc/GMT-14"} {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			for _, timeAs := range []string{schema.TimeAsString, schema.TimeAsInt64Micros} {
				opts := schema.DefaultOptions()
				opts.DateTimeZone, opts.TimeAs = loc, timeAs
				if opts.InvalidDates != schema.InvalidError {
					t.Fatalf("default invalid_dates is %q", opts.InvalidDates)
				}
				target, err := schema.Map(tb, "d", caps, opts, schema.TableOptions{})
				if err != nil {
					t.Fatal(err)
				}
				blocks[sname+" "+zone+" time_as "+timeAs] = block.NewBlock(target)
			}
		}
	}
	return cols, blocks
}

// temporalProblems checks generated rows: each temporal value against the
// narrowest range every ClickHouse target holds, and through the daemon's
// own conversion (which applies invalid_dates) for every target. It
// returns up to 10 problems.
func temporalProblems(t *testing.T, g *FieldTestGen, statements int) []string {
	t.Helper()
	cols, blocks := temporalTargets(t)
	at := map[string]int{}
	for i, c := range FieldTestColumns {
		at[c] = i
	}
	var problems []string
	check := func(vals map[string]string) {
		year, err := strconv.Atoi(vals["testyear"])
		if err != nil {
			t.Fatal(err)
		}
		// The narrowest ranges: Date before 20.1 ends 2105-12-31 (and
		// 18.16 shows its day 0 as 0000-00-00, so not that day either);
		// DateTime is 1970-01-01 00:00:00 .. 2105-12-31 23:59:59 UTC,
		// for a wall clock in any zone from UTC-12 to UTC+14; TIMESTAMP
		// literals are UTC and must be in MySQL's range.
		for _, r := range []struct{ col, lo, hi string }{
			{"testdate", "1970-01-02", "2105-12-31"},
			{"testdatetime", "1970-01-01 14:00:00", "2105-12-31 11:59:59"},
			{"testtimestamp", "1970-01-01 00:00:01", "2038-01-19 03:14:07"},
			{"testtime", "-838:59:59", "838:59:59"},
		} {
			v := vals[r.col]
			out := v < r.lo || v > r.hi || len(v) != len(r.lo)
			if r.col == "testtime" { // text order is not time order
				d, ok := timeSeconds(v)
				out = !ok || d < -(838*3600+59*60+59) || d > 838*3600+59*60+59
			}
			if out {
				problems = append(problems, fmt.Sprintf("%s %q outside %s .. %s", r.col, v, r.lo, r.hi))
			}
		}
		row := []any{uint64(1), vals["testtime"], vals["testdate"], year, vals["testtimestamp"], vals["testdatetime"]}
		for name, b := range blocks {
			if err := b.Append(row, 1, schema.OpInsert); err != nil {
				problems = append(problems, name+": "+err.Error())
			}
			if b.Rows() > 1000 {
				b.Reset()
			}
		}
	}
	for s := 0; s < statements && len(problems) < 10; s++ {
		for _, r := range insertRows(t, g.Insert("d", "binlog_field_test_1", 100)) {
			if len(r) != len(FieldTestColumns) {
				t.Fatalf("row of %d values, want %d", len(r), len(FieldTestColumns))
			}
			vals := map[string]string{}
			for _, c := range cols {
				vals[c] = r[at[c]]
			}
			check(vals)
		}
		// An UPDATE writes testdatetime too.
		u := g.Update("d", "binlog_field_test_1", 1)
		i := strings.Index(u, "`testdatetime` = ")
		if i < 0 {
			t.Fatalf("no testdatetime in %s", u)
		}
		dt, _ := sqlLiteral(t, u[i+len("`testdatetime` = "):])
		check(map[string]string{"testtime": "00:00:00", "testdate": "2000-01-01", "testyear": "2000", "testtimestamp": "2000-01-01 00:00:00", "testdatetime": dt})
	}
	if len(problems) > 10 {
		problems = problems[:10]
	}
	return problems
}

// timeSeconds parses a TIME literal, [-]h:mm:ss.
func timeSeconds(v string) (int, bool) {
	neg := strings.HasPrefix(v, "-")
	parts := strings.Split(strings.TrimPrefix(v, "-"), ":")
	if len(parts) != 3 {
		return 0, false
	}
	secs := 0
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0, false
		}
		secs = secs*60 + n
	}
	if neg {
		secs = -secs
	}
	return secs, true
}

// TestDefaultDatesFitEveryClickHouse: the default generator's dates and
// times fit every ClickHouse type binlog2ch may map them to, so `run`
// with the default invalid_dates replicates loadgen's rows. The same
// check refuses -full-range's values: it can fail.
func TestDefaultDatesFitEveryClickHouse(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		if p := temporalProblems(t, NewFieldTestGen(seed), 100); len(p) > 0 {
			t.Fatalf("seed %d: the default generator wrote values outside ClickHouse's range:\n%s", seed, strings.Join(p, "\n"))
		}
	}
	p := temporalProblems(t, NewFieldTestGen(1).WithFullRange(true), 10)
	if len(p) == 0 {
		t.Fatal("-full-range: every value fits; the check cannot fail")
	}
	var refused bool
	for _, s := range p {
		refused = refused || strings.Contains(s, "set schema.invalid_dates to clamp or null")
	}
	if !refused {
		t.Fatalf("-full-range: the daemon's conversion refused nothing:\n%s", strings.Join(p, "\n"))
	}
	// WithFullRange(false) restores the default.
	if p := temporalProblems(t, NewFieldTestGen(1).WithFullRange(true).WithFullRange(false), 20); len(p) > 0 {
		t.Fatalf("WithFullRange(false):\n%s", strings.Join(p, "\n"))
	}
}
