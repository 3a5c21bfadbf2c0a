package source

import (
	"reflect"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
)

func TestParseDDL(t *testing.T) {
	p := parser.New()
	for _, c := range []struct {
		query string
		want  []DDLEffect
	}{
		{"DROP TABLE t1, other.t2", []DDLEffect{{Kind: DDLDrop, Table: TableName{"db", "t1"}}, {Kind: DDLDrop, Table: TableName{"other", "t2"}}}},
		{"DROP VIEW v", nil},
		{"TRUNCATE TABLE t", []DDLEffect{{Kind: DDLTruncate, Table: TableName{"db", "t"}}}},
		{"RENAME TABLE a TO b, x.c TO y.d", []DDLEffect{
			{Kind: DDLRenameTable, Table: TableName{"db", "a"}, NewTable: TableName{"db", "b"}},
			{Kind: DDLRenameTable, Table: TableName{"x", "c"}, NewTable: TableName{"y", "d"}}}},
		{"ALTER TABLE t RENAME COLUMN a TO b", []DDLEffect{{Kind: DDLRenameColumns, Table: TableName{"db", "t"}, Renames: map[string]string{"a": "b"}}}},
		{"ALTER TABLE t CHANGE COLUMN a b INT, CHANGE c c BIGINT", []DDLEffect{{Kind: DDLRenameColumns, Table: TableName{"db", "t"}, Renames: map[string]string{"a": "b"}}}},
		{"ALTER TABLE t RENAME TO u", []DDLEffect{{Kind: DDLRenameTable, Table: TableName{"db", "t"}, NewTable: TableName{"db", "u"}}}},
		{"ALTER TABLE t ADD COLUMN s VARCHAR(5) DEFAULT 'it''s', ADD n INT DEFAULT -3, ADD d DECIMAL(5,2) DEFAULT 1.50, ADD ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP, ADD z INT",
			[]DDLEffect{{Kind: DDLColumnDefaults, Table: TableName{"db", "t"}, Defaults: map[string]string{"s": `'it\'s'`, "n": "'-3'", "d": "'1.50'"}}}},
		{"ALTER TABLE t ADD COLUMN x INT", nil},
		{"ALTER TABLE t ADD COLUMN x DOUBLE DEFAULT -2.5, ADD y INT DEFAULT +7", []DDLEffect{{Kind: DDLColumnDefaults, Table: TableName{"db", "t"}, Defaults: map[string]string{"x": "'-2.5'", "y": "'7'"}}}},
		{"CREATE TABLE t (a INT)", nil},
	} {
		got, ok := ParseDDL(p, "db", c.query)
		if !ok {
			t.Errorf("%s: not parsed", c.query)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.query, got, c.want)
		}
	}
	if _, ok := ParseDDL(p, "db", "ALTER TABLE t FROBNICATE"); ok {
		t.Error("nonsense parsed")
	}
}
