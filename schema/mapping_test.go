package schema

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ddl")

// col builds a Column from a COLUMN_TYPE, e.g. col("id", "bigint(20) unsigned", false).
func col(t testing.TB, name, columnType string, nullable bool) Column {
	t.Helper()
	dataType := strings.ToLower(columnType)
	if i := strings.IndexAny(dataType, "( "); i >= 0 {
		dataType = dataType[:i]
	}
	c, err := ParseColumnType(columnType, dataType)
	if err != nil {
		t.Fatal(err)
	}
	c.Name, c.Nullable = name, nullable
	return c
}

// binlogFieldTest is the benchmark table of testdata/binlog_field_test.sql.
func binlogFieldTest(t testing.TB) *Table {
	types := []string{
		"id bigint(20) unsigned", "testtinyint tinyint(4)", "testsmallint smallint(6)", "testmediumint mediumint(8)",
		"testint int(11)", "testbigint bigint(20)", "testvarchar varchar(400)", "testchar char(2)",
		"testenum enum('en1','en2','en3')", "testset set('set1','set2','set3')", "testtime time", "testdate date",
		"testyear year(4)", "testtimestamp timestamp", "testdatetime datetime", "testfloat float(9,2)",
		"testdouble double(9,2)", "testdecimal decimal(9,2)", "testtext text", "testblob blob", "testbit bit(64)",
		"testbool tinyint(1)", "testmediumblob mediumblob", "testlongblob longblob", "testtinyblob tinyblob",
		"test_unsinged_tinyint tinyint(4) unsigned", "test_unsinged_smallint smallint(6) unsigned",
		"test_unsinged_mediumint mediumint(8) unsigned", "test_unsinged_int int(11) unsigned",
		"test_unsinged_bigint bigint(20) unsigned",
	}
	tb := &Table{Database: "bifrost_test", Name: "binlog_field_test_1", PrimaryKey: []int{0}}
	for _, s := range types {
		name, typ, _ := strings.Cut(s, " ")
		tb.Columns = append(tb.Columns, col(t, name, typ, false))
	}
	return tb
}

// everyType mirrors the integration test's table.
func everyType(t testing.TB) *Table {
	tb := &Table{Database: "shop", Name: "every_type", PrimaryKey: []int{0}}
	for _, s := range []string{
		"id int(11)", "ti tinyint(4)", "tiu tinyint(3) unsigned", "b1 tinyint(1)", "si smallint(6)",
		"mi mediumint(9)", "miu mediumint(8) unsigned", "bi bigint(20)", "biu bigint(20) unsigned",
		"d92 decimal(9,2)", "d3810 decimal(38,10)", "d6530 decimal(65,30)", "f float", "dbl double",
		"bit64 bit(64)", "dt date", "dtm datetime", "dtm6 datetime(6)", "ts timestamp", "ts3 timestamp(3)",
		"tm time", "yr year(4)", "c char(10)", "txt text", "bin binary(4)", "blb blob",
		"e enum('a,b','x','é')", "eq enum('it''s','x\\\\y')", "s set('x','y''z','ü')", "j json", "g geometry",
	} {
		name, typ, _ := strings.Cut(s, " ")
		tb.Columns = append(tb.Columns, col(t, name, typ, name != "id"))
	}
	return tb
}

// TestGoldenDDL pins the CREATE TABLE text for ClickHouse 18.16 and for a
// modern server, which the tests here cannot run. Run with -update to
// rewrite testdata/ddl after a deliberate change.
func TestGoldenDDL(t *testing.T) {
	changelog := everyType(t)
	changelog.Name, changelog.PrimaryKey = "no_key", nil
	for _, tc := range []struct {
		name  string
		table *Table
		to    TableOptions
	}{
		{"binlog_field_test", binlogFieldTest(t), TableOptions{}},
		{"every_type", everyType(t), TableOptions{}},
		{"no_key", changelog, TableOptions{}},
		{"overrides", binlogFieldTest(t), TableOptions{Name: "events", PartitionBy: "toYYYYMM(testdate)", Exclude: []string{"testlongblob"}, OrderBy: []string{"testdate", "id"}}},
	} {
		for _, p := range []struct {
			name string
			caps Capabilities
		}{{"clickhouse18", ClickHouse18}, {"modern", ClickHouseModern}} {
			t.Run(tc.name+"/"+p.name, func(t *testing.T) {
				target, err := Map(tc.table, "analytics", p.caps, DefaultOptions(), tc.to)
				if err != nil {
					t.Fatal(err)
				}
				got := target.CreateTableSQL() + ";\n\n" + target.InsertSQL() + ";\n"
				path := filepath.Join("..", "testdata", "ddl", tc.name+"."+p.name+".sql")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./schema -run TestGoldenDDL -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("DDL differs from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
				}
			})
		}
	}
}

func TestMapRules(t *testing.T) {
	tb := everyType(t)
	target, err := Map(tb, "x", ClickHouse18, DefaultOptions(), TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	typeOf := func(name string) string {
		for _, c := range target.Columns {
			if c.Name == name {
				return c.Type.String()
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	for name, want := range map[string]string{
		"id":    "Int32", // key columns are never Nullable
		"b1":    "Nullable(Int8)",
		"biu":   "Nullable(UInt64)",
		"miu":   "Nullable(UInt32)",
		"d6530": "Nullable(String)", // P > 38 on a server without Decimal256
		"d3810": "Nullable(Decimal(38, 10))",
		"bit64": "Nullable(UInt64)",
		"dtm6":  "Nullable(String)", // no DateTime64: text keeps the fraction
		"dtm":   "Nullable(DateTime('UTC'))",
		"bin":   "Nullable(FixedString(4))",
		"e":     "Nullable(Enum8('' = 0, 'a,b' = 1, 'x' = 2, 'é' = 3))",
		"eq":    "Nullable(String)", // labels needing escapes: see needsEscape
		"yr":    "Nullable(UInt16)",
	} {
		if got := typeOf(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if target.Engine != "ReplacingMergeTree(`_version`)" || strings.Join(target.OrderBy, ",") != "id" {
		t.Errorf("engine %s order by %v", target.Engine, target.OrderBy)
	}

	opts := DefaultOptions()
	opts.TinyInt1As, opts.EnumAs, opts.TimeAs = TinyInt1AsBool, EnumAsLowCard, TimeAsInt64Micros
	opts.DateTimeZone, _ = time.LoadLocation("Europe/Berlin")
	modern, err := Map(tb, "x", ClickHouseModern, opts, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target = modern
	for name, want := range map[string]string{
		"b1":    "Nullable(Bool)",
		"d6530": "Nullable(Decimal(65, 30))",
		"dtm6":  "Nullable(DateTime64(6, 'Europe/Berlin'))",
		"ts3":   "Nullable(DateTime64(3, 'UTC'))",
		"dt":    "Nullable(Date32)",
		"e":     "LowCardinality(Nullable(String))",
		"tm":    "Nullable(Int64)",
	} {
		if got := typeOf(name); got != want {
			t.Errorf("modern %s: %s, want %s", name, got, want)
		}
	}
	if target.Engine != "ReplacingMergeTree(`_version`, `_is_deleted`)" {
		t.Errorf("modern engine %s", target.Engine)
	}
}

func TestMapRefusals(t *testing.T) {
	tb := everyType(t)
	clash := everyType(t)
	clash.Columns[1].Name = "_version"
	badOpts := DefaultOptions()
	badOpts.InvalidDates = "guess"
	arrayOpts := DefaultOptions()
	arrayOpts.SetAs = SetAsArray
	noKey := everyType(t)
	noKey.PrimaryKey = nil
	for _, c := range []struct {
		name  string
		table *Table
		opts  Options
		to    TableOptions
		want  string
	}{
		{"meta clash", clash, DefaultOptions(), TableOptions{}, "column _version clashes"},
		{"bad option", tb, badOpts, TableOptions{}, `invalid_dates: want one of error, clamp, null, got "guess"`},
		{"nullable set array", tb, arrayOpts, TableOptions{}, "cannot tell NULL from the empty set"},
		{"exclude key", tb, DefaultOptions(), TableOptions{Exclude: []string{"id"}}, "in the table's key and cannot be excluded"},
		{"exclude unknown", tb, DefaultOptions(), TableOptions{Exclude: []string{"nope"}}, `excluded column "nope" does not exist`},
		{"order by unknown", tb, DefaultOptions(), TableOptions{OrderBy: []string{"nope"}}, `order_by column "nope"`},
		{"replacing without key", noKey, DefaultOptions(), TableOptions{Mode: ModeReplacing}, "needs a primary key"},
	} {
		_, err := Map(c.table, "x", ClickHouse18, c.opts, c.to)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := QuoteIdent("a`b\\c"); got != "`a\\`b\\\\c`" {
		t.Errorf("QuoteIdent: %s", got)
	}
	if got := QuoteString("it's\n"); got != `'it\'s\n'` {
		t.Errorf("QuoteString: %s", got)
	}
}

func TestTypeOverrides(t *testing.T) {
	tb := everyType(t)
	target, err := Map(tb, "x", ClickHouseModern, DefaultOptions(), TableOptions{Types: map[string]string{
		"ti": "Int64", "biu": "UInt64", "d92": "Decimal(18, 4)", "d3810": "String", "dt": "Date32",
		"dtm": "DateTime64(3, 'Europe/Berlin')", "e": "String",
	}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"ti": "Nullable(Int64)", "biu": "Nullable(UInt64)", "d92": "Nullable(Decimal(18, 4))", "d3810": "Nullable(String)",
		"dt": "Nullable(Date32)", "dtm": "Nullable(DateTime64(3, 'Europe/Berlin'))", "e": "Nullable(String)",
	} {
		for _, c := range target.Columns {
			if c.Name == name && c.Type.String() != want {
				t.Errorf("%s: %s, want %s", name, c.Type, want)
			}
		}
	}
	// The overridden columns convert.
	b := NewBlock(target)
	row := make([]any, len(tb.Columns))
	row[0] = int32(1)
	row[tb.ColumnIndex("ti")] = int8(-5)
	row[tb.ColumnIndex("d92")] = "-12.50"
	row[tb.ColumnIndex("e")] = int64(2)
	if err := b.Append(row, 1, OpInsert); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		col, typ, want string
	}{
		{"ti", "UInt64", "same signedness"},
		{"bi", "Int32", "at least as wide"},
		{"d92", "Decimal(5, 1)", "at least its integer digits and scale"},
		{"dtm6", "DateTime64(3)", "at least its fraction digits"},
		{"c", "Int64", "cannot be overridden"},
		{"e", "Int8", "an ENUM takes String"},
		{"nope", "String", `column "nope", which does not exist`},
		{"ti", "Array(Int8)", "cannot be an override"},
	} {
		_, err := Map(tb, "x", ClickHouseModern, DefaultOptions(), TableOptions{Types: map[string]string{c.col: c.typ}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as %s: got %v, want %q", c.col, c.typ, err, c.want)
		}
	}
	if _, err := Map(tb, "x", ClickHouse18, DefaultOptions(), TableOptions{Types: map[string]string{"dtm": "DateTime64(0)"}}); err == nil {
		t.Error("DateTime64 accepted on a server without it")
	}
}

func TestParseCHType(t *testing.T) {
	for in, want := range map[string]string{
		"Int8": "Int8", "UInt64": "UInt64", " String ": "String", "Decimal(9,2)": "Decimal(9, 2)",
		"DateTime": "DateTime('UTC')", "DateTime('Asia/Tokyo')": "DateTime('Asia/Tokyo')", "DateTime64(6)": "DateTime64(6, 'UTC')",
		"Date32": "Date32",
	} {
		got, err := ParseCHType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseCHType(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Decimal(100, 2)", "Decimal(9)", "DateTime64(9)", "DateTime(UTC)", "Nullable(Int8)", "Int8(", "Float64"} {
		if _, err := ParseCHType(bad); err == nil {
			t.Errorf("ParseCHType(%q) accepted", bad)
		}
	}
}
