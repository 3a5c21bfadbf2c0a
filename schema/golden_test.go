package schema_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ddl")

// profiles are the server profiles every golden file is written for. A
// ClickHouse 26 profile would be a third; nothing binlog2ch writes differs
// between 24.8 and 26.9 (see docs/compatibility.md).
var profiles = []struct {
	name string
	caps schema.Capabilities
}{{"clickhouse18", schema.ClickHouse18}, {"modern", schema.ClickHouseModern}}

// golden compares got with testdata/ddl/name, or writes it there with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "ddl", name)
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
		t.Fatalf("%v (run go test ./schema -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("differs from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestGoldenDDL pins the CREATE TABLE and INSERT text for ClickHouse 18.16
// and for a modern server, which the tests here cannot run. Run with
// -update to rewrite testdata/ddl after a deliberate change.
func TestGoldenDDL(t *testing.T) {
	changelog := schematest.EveryType(t)
	changelog.Name, changelog.PrimaryKey = "no_key", nil
	// The options that choose other types: Bool (where the server has it),
	// Int64 microseconds, LowCardinality.
	typeOptions := schema.DefaultOptions()
	typeOptions.TinyInt1As, typeOptions.TimeAs, typeOptions.EnumAs = schema.TinyInt1AsBool, schema.TimeAsInt64Micros, schema.EnumAsLowCard
	for _, tc := range []struct {
		name  string
		table *schema.Table
		opts  schema.Options
		to    schema.TableOptions
	}{
		{"binlog_field_test", schematest.BinlogFieldTest(t), schema.DefaultOptions(), schema.TableOptions{}},
		{"every_type", schematest.EveryType(t), schema.DefaultOptions(), schema.TableOptions{}},
		{"every_type_options", schematest.EveryType(t), typeOptions, schema.TableOptions{Name: "every_type_options"}},
		{"every_type_cluster", schematest.EveryType(t), clusterOptions(), schema.TableOptions{}},
		{"no_key", changelog, schema.DefaultOptions(), schema.TableOptions{}},
		{"overrides", schematest.BinlogFieldTest(t), schema.DefaultOptions(), schema.TableOptions{Name: "events", PartitionBy: "toYYYYMM(testdate)", Exclude: []string{"testlongblob"}, OrderBy: []string{"testdate", "id"}}},
	} {
		for _, p := range profiles {
			t.Run(tc.name+"/"+p.name, func(t *testing.T) {
				target, err := schema.Map(tc.table, "analytics", p.caps, tc.opts, tc.to)
				if err != nil {
					t.Fatal(err)
				}
				got := target.CreateTableSQL() + ";\n\n"
				if target.ReadName() != target.Name {
					got += target.CreateDistributedSQL(columnDefs(target), "") + ";\n\n" + target.InsertLocalSQL() + ";\n\n"
				}
				got += target.InsertSQL() + ";\n"
				golden(t, tc.name+"."+p.name+".sql", got)
			})
		}
	}
}

// columnDefs are the target's columns as a Distributed table over it
// repeats them ("`a` Int32"; sink reads them from the local table).
func columnDefs(t *schema.Target) []string {
	defs := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		defs[i] = schema.QuoteIdent(c.Name) + " " + c.Type.String()
	}
	return defs
}

// TestGoldenStatements pins, per profile and with and without a cluster,
// every other statement binlog2ch runs against a target table: what sink
// runs for MySQL's DDL and to bring a table to its mapping, and what
// snapshot runs for -recreate and an interrupted copy. Refusals are
// pinned as their error text. In order, a file's statements run on a
// server of its profile once the every_type and no_key tables of the
// same profile exist (block's TestGoldenDDLRunsOnTheServer runs the
// 18.16 ones).
func TestGoldenStatements(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		for _, p := range profiles {
			name := "statements"
			opts := schema.DefaultOptions()
			if cluster {
				name, opts = "statements_cluster", clusterOptions()
			}
			t.Run(name+"/"+p.name, func(t *testing.T) {
				golden(t, name+"."+p.name+".sql", statements(t, p.caps, opts))
			})
		}
	}
}

func statements(t *testing.T, caps schema.Capabilities, opts schema.Options) string {
	target, err := schema.Map(schematest.EveryType(t), "analytics", caps, opts, schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	stmt := func(comment, s string) { fmt.Fprintf(&b, "-- %s\n%s;\n\n", comment, s) }
	refused := func(comment string, err error) { fmt.Fprintf(&b, "-- %s\n-- refused: %v\n\n", comment, err) }
	col := func(name string) schema.TargetColumn { return target.Columns[target.ColumnIndex(name)] }
	fmt.Fprintf(&b, "-- ClickHouse %s: tables analytics.every_type and analytics.no_key (schematest.EveryType)\n\n", caps.Version)

	stmt("the table's database, before its CREATE TABLE", target.CreateDatabaseSQL())
	stmt("DROP COLUMN (MySQL dropped it)", target.DropColumnSQL("g"))
	// chtables' EnsureTable and AddColumns add a column MySQL added after the column
	// before it, with MySQL's DEFAULT as a string literal ClickHouse casts
	// to the column's type. The new columns here take the type of the one
	// they are named after.
	for _, c := range []struct{ like, def, after string }{
		{"", "", ""}, // no column before it: appended
		{"ti", "'0'", "id"},
		{"b1", "'1'", "tiu"},
		{"d6530", "'1.500000000000000000000000000000'", "d3810"},
		{"dt", "'2024-02-29'", "bit64"},
		{"dtm6", "'2024-02-29 23:59:58.123456'", "dtm"},
		{"ts3", "", "ts"},
		{"e", "'x'", "blb"},
		{"eq", "", "e"},
	} {
		tc := schema.TargetColumn{Name: "note", Type: schema.CHType{Kind: schema.CHString, Nullable: true}}
		if c.like != "" {
			tc = col(c.like)
			tc.Name += "_added"
		}
		stmt("ADD COLUMN "+tc.Name, target.AddColumnSQL(tc, c.def, c.after))
	}
	for _, name := range []string{"d6530", "dtm6", "eq"} {
		stmt("MODIFY COLUMN "+name+" (ClickHouse has another type than the mapping)", target.ModifyColumnSQL(col(name)))
	}
	if s, err := target.RenameColumnSQL("c", "code"); err != nil {
		var rce *schema.RenameColumnError
		if !errors.As(err, &rce) {
			t.Fatalf("RenameColumnSQL: %v, want a *schema.RenameColumnError", err)
		}
		refused("RENAME COLUMN c TO code", err)
	} else {
		stmt("RENAME COLUMN c TO code", s)
	}

	// clickhouse.current_views: the view has the table's own columns, as
	// ClickHouse lists them (here the mapping's, after the changes above).
	var own []string
	for _, c := range target.Columns {
		if !schema.IsMetaColumn(c.Name) && c.Name != "g" {
			own = append(own, c.Name)
		}
	}
	stmt("the current-state view (clickhouse.current_views)", opts.CreateViewSQL("analytics", "every_type", own))
	stmt("the view dropped with its table, or to be made again with its columns", opts.ViewOf("analytics", "every_type").DropSQL())

	// replication.on_partition_maintenance: apply. A TRUNCATE or DROP
	// PARTITION deletes its rows by the partition's bounds, with a
	// mutation (binlog2ch uses no lightweight DELETE).
	ref := opts.Table("analytics", "every_type")
	for _, c := range []struct {
		comment string
		p       *catalog.Partitions
		names   []string
	}{
		{"partition rows: ALTER TABLE every_type TRUNCATE PARTITION p2024, PARTITION BY RANGE (TO_DAYS(dt))",
			&catalog.Partitions{Method: "RANGE", Expr: "to_days(`dt`)", Parts: []catalog.Partition{{Name: "p2023", Desc: "739251"}, {Name: "p2024", Desc: "739617"}}}, []string{"p2024"}},
		{"partition rows: ALTER TABLE every_type DROP PARTITION p2024, PARTITION BY RANGE COLUMNS (dtm6)",
			&catalog.Partitions{Method: "RANGE COLUMNS", Expr: "`dtm6`", Parts: []catalog.Partition{{Name: "p2023", Desc: "'2024-01-01'"}, {Name: "p2024", Desc: "'2025-01-01'"}}}, []string{"p2024"}},
	} {
		where, err := chtables.PartitionsWhere(c.p, c.names, target)
		if err != nil {
			refused(c.comment, err)
			continue
		}
		stmt(c.comment, ref.DeleteWhereSQL(where))
	}

	// snapshot: an interrupted copy of a changelog table deletes its rows
	// before it scans again.
	changelog := schematest.EveryType(t)
	changelog.Name, changelog.PrimaryKey = "no_key", nil
	keyless, err := schema.Map(changelog, "analytics", caps, opts, schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stmt("a changelog table's rows from an interrupted copy (version 1234567890123), on the connected server only", keyless.DeleteCopyRowsSQL(1234567890123))

	// MySQL's TRUNCATE, RENAME and DROP TABLE name only the table (sink's
	// applyDDL); in a cluster the Distributed table goes first.
	dist, inCluster := ref.Distributed()
	stmt("TRUNCATE TABLE", ref.TruncateSQL())
	if inCluster {
		stmt("RENAME TABLE every_type TO every_type_old: the Distributed table first", dist.DropSQL())
	}
	stmt("RENAME TABLE every_type TO every_type_old", ref.RenameSQL("every_type_old"))
	if inCluster {
		renamed := *target
		renamed.Name = "every_type_old"
		// chtables' EnsureDistributed makes it again the same way, its key
		// kept, after any change to the local table's columns: 18.16
		// refuses ALTER ... ON CLUSTER on a Distributed table.
		stmt("RENAME TABLE: the Distributed table again, over the renamed table, its sharding key kept", renamed.CreateDistributedSQL(columnDefs(&renamed), "cityHash64(`id`)"))
	}
	old := opts.Table("analytics", "every_type_old")
	if oldDist, ok := old.Distributed(); ok {
		stmt("DROP TABLE every_type_old: the Distributed table first", oldDist.DropSQL())
	}
	stmt("DROP TABLE every_type_old", old.DropSQL())

	// snapshot: fullsync -recreate drops the table (the Distributed one
	// first) before it copies it again.
	if inCluster {
		stmt("fullsync -recreate: the Distributed table", keyless.ReadRef().DropSQL())
	}
	stmt("fullsync -recreate", keyless.Ref().DropSQL())
	return b.String()
}

// TestGoldenEveryTypeColumns pins schematest.EveryTypeModernColumns, the
// column types a current server's INSERT header names for EveryType.
func TestGoldenEveryTypeColumns(t *testing.T) {
	var b strings.Builder
	for _, c := range schematest.EveryTypeModernColumns(t) {
		fmt.Fprintf(&b, "%s %s\n", c.Name, c.Type)
	}
	golden(t, "every_type_columns.modern.txt", b.String())
}
