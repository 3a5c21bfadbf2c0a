package schema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

func TestMapRules(t *testing.T) {
	tb := schematest.EveryType(t)
	target, err := schema.Map(tb, "x", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
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

	opts := schema.DefaultOptions()
	opts.TinyInt1As, opts.EnumAs, opts.TimeAs = schema.TinyInt1AsBool, schema.EnumAsLowCard, schema.TimeAsInt64Micros
	opts.DateTimeZone, _ = time.LoadLocation("Europe/Berlin")
	modern, err := schema.Map(tb, "x", schema.ClickHouseModern, opts, schema.TableOptions{})
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
	tb := schematest.EveryType(t)
	clash := schematest.EveryType(t)
	clash.Columns[1].Name = "_version"
	badOpts := schema.DefaultOptions()
	badOpts.InvalidDates = "guess"
	arrayOpts := schema.DefaultOptions()
	arrayOpts.SetAs = schema.SetAsArray
	noKey := schematest.EveryType(t)
	noKey.PrimaryKey = nil
	for _, c := range []struct {
		name  string
		table *schema.Table
		opts  schema.Options
		to    schema.TableOptions
		want  string
	}{
		{"meta clash", clash, schema.DefaultOptions(), schema.TableOptions{}, "column _version clashes"},
		{"bad option", tb, badOpts, schema.TableOptions{}, `invalid_dates: want one of error, clamp, null, got "guess"`},
		{"nullable set array", tb, arrayOpts, schema.TableOptions{}, "cannot tell NULL from the empty set"},
		{"exclude key", tb, schema.DefaultOptions(), schema.TableOptions{Exclude: []string{"id"}}, "in the table's key and cannot be excluded"},
		{"exclude unknown", tb, schema.DefaultOptions(), schema.TableOptions{Exclude: []string{"nope"}}, `excluded column "nope" does not exist`},
		{"order by unknown", tb, schema.DefaultOptions(), schema.TableOptions{OrderBy: []string{"nope"}}, `order_by column "nope"`},
		{"replacing without key", noKey, schema.DefaultOptions(), schema.TableOptions{Mode: schema.ModeReplacing}, "needs a primary key"},
	} {
		_, err := schema.Map(c.table, "x", schema.ClickHouse18, c.opts, c.to)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := schema.QuoteIdent("a`b\\c"); got != "`a\\`b\\\\c`" {
		t.Errorf("QuoteIdent: %s", got)
	}
	if got := schema.QuoteString("it's\n"); got != `'it\'s\n'` {
		t.Errorf("QuoteString: %s", got)
	}
}

func TestTypeOverrides(t *testing.T) {
	tb := schematest.EveryType(t)
	target, err := schema.Map(tb, "x", schema.ClickHouseModern, schema.DefaultOptions(), schema.TableOptions{Types: map[string]string{
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
	b := block.NewBlock(target)
	row := make([]any, len(tb.Columns))
	row[0] = int32(1)
	row[tb.ColumnIndex("ti")] = int8(-5)
	row[tb.ColumnIndex("d92")] = "-12.50"
	row[tb.ColumnIndex("e")] = int64(2)
	if err := b.Append(row, 1, schema.OpInsert); err != nil {
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
		_, err := schema.Map(tb, "x", schema.ClickHouseModern, schema.DefaultOptions(), schema.TableOptions{Types: map[string]string{c.col: c.typ}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as %s: got %v, want %q", c.col, c.typ, err, c.want)
		}
	}
	if _, err := schema.Map(tb, "x", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{Types: map[string]string{"dtm": "DateTime64(0)"}}); err == nil {
		t.Error("DateTime64 accepted on a server without it")
	}
}

func TestParseCHType(t *testing.T) {
	for in, want := range map[string]string{
		"Int8": "Int8", "UInt64": "UInt64", " String ": "String", "Decimal(9,2)": "Decimal(9, 2)",
		"DateTime": "DateTime('UTC')", "DateTime('Asia/Tokyo')": "DateTime('Asia/Tokyo')", "DateTime64(6)": "DateTime64(6, 'UTC')",
		"Date32": "Date32",
	} {
		got, err := schema.ParseCHType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseCHType(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Decimal(100, 2)", "Decimal(9)", "DateTime64(9)", "DateTime(UTC)", "Nullable(Int8)", "Int8(", "Float64"} {
		if _, err := schema.ParseCHType(bad); err == nil {
			t.Errorf("ParseCHType(%q) accepted", bad)
		}
	}
}

// TestCreateDedupWindow: plain MergeTree tables get a deduplication window
// on a server that has the setting (the modern profile), Replicated ones
// and 18.16's none.
func TestCreateDedupWindow(t *testing.T) {
	keyed := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false)}}
	const setting = "SETTINGS non_replicated_deduplication_window = 1000"
	for _, tc := range []struct {
		caps    schema.Capabilities
		cluster *schema.Cluster
		want    bool
	}{
		{schema.ClickHouseModern, nil, true},
		{schema.ClickHouse18, nil, false},
		{schema.ClickHouseModern, &schema.Cluster{Name: "c", ZooKeeperPath: "/p/{table}", Replica: "{replica}"}, false},
	} {
		opts := schema.DefaultOptions()
		opts.Cluster = tc.cluster
		for _, mode := range []schema.Mode{schema.ModeReplacing, schema.ModeChangelog} {
			target, err := schema.Map(keyed, "d", tc.caps, opts, schema.TableOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.HasSuffix(target.CreateTableSQL(), "\n"+setting); got != tc.want {
				t.Errorf("%s, %s, cluster %v: SETTINGS %v, want %v:\n%s", tc.caps.Version, mode, tc.cluster != nil, got, tc.want, target.CreateTableSQL())
			}
		}
	}
}
