package replicator

import (
	"reflect"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
)

func TestParseDDL(t *testing.T) {
	p := parser.New()
	for _, c := range []struct {
		query string
		want  []ddlEffect
	}{
		{"DROP TABLE t1, other.t2", []ddlEffect{{kind: ddlDrop, table: TableName{"db", "t1"}}, {kind: ddlDrop, table: TableName{"other", "t2"}}}},
		{"DROP VIEW v", nil},
		{"TRUNCATE TABLE t", []ddlEffect{{kind: ddlTruncate, table: TableName{"db", "t"}}}},
		{"RENAME TABLE a TO b, x.c TO y.d", []ddlEffect{
			{kind: ddlRenameTable, table: TableName{"db", "a"}, newTable: TableName{"db", "b"}},
			{kind: ddlRenameTable, table: TableName{"x", "c"}, newTable: TableName{"y", "d"}}}},
		{"ALTER TABLE t RENAME COLUMN a TO b", []ddlEffect{{kind: ddlRenameColumns, table: TableName{"db", "t"}, renames: map[string]string{"a": "b"}}}},
		{"ALTER TABLE t CHANGE COLUMN a b INT, CHANGE c c BIGINT", []ddlEffect{{kind: ddlRenameColumns, table: TableName{"db", "t"}, renames: map[string]string{"a": "b"}}}},
		{"ALTER TABLE t RENAME TO u", []ddlEffect{{kind: ddlRenameTable, table: TableName{"db", "t"}, newTable: TableName{"db", "u"}}}},
		{"ALTER TABLE t ADD COLUMN s VARCHAR(5) DEFAULT 'it''s', ADD n INT DEFAULT -3, ADD d DECIMAL(5,2) DEFAULT 1.50, ADD ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP, ADD z INT",
			[]ddlEffect{{kind: ddlColumnDefaults, table: TableName{"db", "t"}, defaults: map[string]string{"s": `'it\'s'`, "n": "'-3'", "d": "'1.50'"}}}},
		{"ALTER TABLE t ADD COLUMN x INT", nil},
		{"ALTER TABLE t ADD COLUMN x DOUBLE DEFAULT -2.5, ADD y INT DEFAULT +7", []ddlEffect{{kind: ddlColumnDefaults, table: TableName{"db", "t"}, defaults: map[string]string{"x": "'-2.5'", "y": "'7'"}}}},
		{"CREATE TABLE t (a INT)", nil},
	} {
		got, ok := parseDDL(p, "db", c.query)
		if !ok {
			t.Errorf("%s: not parsed", c.query)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.query, got, c.want)
		}
	}
	if _, ok := parseDDL(p, "db", "ALTER TABLE t FROBNICATE"); ok {
		t.Error("nonsense parsed")
	}
}
