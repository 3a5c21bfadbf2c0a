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
			[]DDLEffect{{Kind: DDLAddColumns, Table: TableName{"db", "t"}, Defaults: map[string]string{"s": `'it\'s'`, "n": "'-3'", "d": "'1.50'"}, Added: []string{"s", "n", "d", "ts", "z"}}}},
		{"ALTER TABLE t ADD COLUMN x INT", []DDLEffect{{Kind: DDLAddColumns, Table: TableName{"db", "t"}, Defaults: map[string]string{}, Added: []string{"x"}}}},
		{"ALTER TABLE t ADD COLUMN x DOUBLE DEFAULT -2.5, ADD y INT DEFAULT +7", []DDLEffect{{Kind: DDLAddColumns, Table: TableName{"db", "t"}, Defaults: map[string]string{"x": "'-2.5'", "y": "'7'"}, Added: []string{"x", "y"}}}},
		{"CREATE TABLE t (a INT)", []DDLEffect{{Kind: DDLCreate, Table: TableName{"db", "t"}}}},
		{"CREATE TEMPORARY TABLE t (a INT)", nil},
		// Rows changed by statements (binlog_format STATEMENT or MIXED).
		{"INSERT INTO t VALUES (1)", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"db", "t"}}}},
		{"REPLACE INTO other.t SELECT * FROM src", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"other", "t"}}}},
		{"UPDATE t SET a = (SELECT max(b) FROM u) WHERE id = 1", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"db", "t"}}}},
		{"UPDATE t JOIN x.u ON t.id = u.id SET t.a = u.a", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"db", "t"}}, {Kind: DDLRowsByStatement, Table: TableName{"x", "u"}}}},
		{"DELETE FROM t WHERE id < 10", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"db", "t"}}}},
		{"DELETE a FROM t AS a JOIN u ON a.id = u.id", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"db", "t"}}, {Kind: DDLRowsByStatement, Table: TableName{"db", "u"}}}},
		{"LOAD DATA INFILE '/tmp/x' INTO TABLE t", []DDLEffect{{Kind: DDLRowsByStatement, Table: TableName{"db", "t"}}}},
		// Partition maintenance removes or moves rows without row events.
		{"ALTER TABLE p TRUNCATE PARTITION p2023", []DDLEffect{{Kind: DDLPartitionRows, Table: TableName{"db", "p"}, PartitionOp: "TRUNCATE", Partitions: []string{"p2023"}}}},
		{"ALTER TABLE p DROP PARTITION p2023, p2024", []DDLEffect{{Kind: DDLPartitionRows, Table: TableName{"db", "p"}, PartitionOp: "DROP", Partitions: []string{"p2023", "p2024"}}}},
		{"ALTER TABLE p TRUNCATE PARTITION ALL", []DDLEffect{{Kind: DDLPartitionRows, Table: TableName{"db", "p"}, PartitionOp: "OTHER"}}},
		{"ALTER TABLE p EXCHANGE PARTITION p1 WITH TABLE x.q", []DDLEffect{{Kind: DDLPartitionRows, Table: TableName{"db", "p"}, PartitionOp: "OTHER"}, {Kind: DDLPartitionRows, Table: TableName{"x", "q"}}}},
		{"ALTER TABLE p REORGANIZE PARTITION p1 INTO (PARTITION p1a VALUES LESS THAN (5), PARTITION p1b VALUES LESS THAN (10))", []DDLEffect{{Kind: DDLPartitionRows, Table: TableName{"db", "p"}, PartitionOp: "OTHER"}}},
		{"ALTER TABLE p COALESCE PARTITION 2", []DDLEffect{{Kind: DDLPartitionRows, Table: TableName{"db", "p"}, PartitionOp: "OTHER"}}},
		{"ALTER TABLE p ADD PARTITION (PARTITION p9 VALUES LESS THAN (100))", nil},
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
