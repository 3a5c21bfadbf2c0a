package schema_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ddl")

// TestGoldenDDL pins the CREATE TABLE text for ClickHouse 18.16 and for a
// modern server, which the tests here cannot run. Run with -update to
// rewrite testdata/ddl after a deliberate change.
func TestGoldenDDL(t *testing.T) {
	changelog := schematest.EveryType(t)
	changelog.Name, changelog.PrimaryKey = "no_key", nil
	for _, tc := range []struct {
		name  string
		table *schema.Table
		to    schema.TableOptions
	}{
		{"binlog_field_test", schematest.BinlogFieldTest(t), schema.TableOptions{}},
		{"every_type", schematest.EveryType(t), schema.TableOptions{}},
		{"no_key", changelog, schema.TableOptions{}},
		{"overrides", schematest.BinlogFieldTest(t), schema.TableOptions{Name: "events", PartitionBy: "toYYYYMM(testdate)", Exclude: []string{"testlongblob"}, OrderBy: []string{"testdate", "id"}}},
	} {
		for _, p := range []struct {
			name string
			caps schema.Capabilities
		}{{"clickhouse18", schema.ClickHouse18}, {"modern", schema.ClickHouseModern}} {
			t.Run(tc.name+"/"+p.name, func(t *testing.T) {
				target, err := schema.Map(tc.table, "analytics", p.caps, schema.DefaultOptions(), tc.to)
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
