package ddl

import (
	"reflect"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/pingcap/tidb/pkg/parser"
)

func TestParse(t *testing.T) {
	p := parser.New()
	for _, c := range []struct {
		query string
		want  []Effect
	}{
		{"DROP TABLE t1, other.t2", []Effect{{Kind: Drop, Table: schema.TableName{Database: "db", Table: "t1"}}, {Kind: Drop, Table: schema.TableName{Database: "other", Table: "t2"}}}},
		{"DROP VIEW v", nil},
		{"TRUNCATE TABLE t", []Effect{{Kind: Truncate, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"RENAME TABLE a TO b, x.c TO y.d", []Effect{
			{Kind: RenameTable, Table: schema.TableName{Database: "db", Table: "a"}, NewTable: schema.TableName{Database: "db", Table: "b"}},
			{Kind: RenameTable, Table: schema.TableName{Database: "x", Table: "c"}, NewTable: schema.TableName{Database: "y", Table: "d"}}}},
		{"ALTER TABLE t RENAME COLUMN a TO b", []Effect{{Kind: RenameColumns, Table: schema.TableName{Database: "db", Table: "t"}, Renames: map[string]string{"a": "b"}}}},
		{"ALTER TABLE t CHANGE COLUMN a b INT, CHANGE c c BIGINT", []Effect{{Kind: RenameColumns, Table: schema.TableName{Database: "db", Table: "t"}, Renames: map[string]string{"a": "b"}}}},
		{"ALTER TABLE t RENAME TO u", []Effect{{Kind: RenameTable, Table: schema.TableName{Database: "db", Table: "t"}, NewTable: schema.TableName{Database: "db", Table: "u"}}}},
		{"ALTER TABLE t ADD COLUMN s VARCHAR(5) DEFAULT 'it''s', ADD n INT DEFAULT -3, ADD d DECIMAL(5,2) DEFAULT 1.50, ADD ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP, ADD z INT",
			[]Effect{{Kind: AddColumns, Table: schema.TableName{Database: "db", Table: "t"}, Defaults: map[string]string{"s": `'it\'s'`, "n": "'-3'", "d": "'1.50'"}, Added: []string{"s", "n", "d", "ts", "z"}, Unfilled: []string{"ts"}}}},
		// Values the binlog does not carry for the existing rows.
		{"ALTER TABLE a ADD COLUMN ts DATETIME DEFAULT CURRENT_TIMESTAMP, ADD COLUMN g INT AS (id*2) STORED, ADD COLUMN u VARCHAR(40) DEFAULT (UUID()), ADD v INT AS (id+1) VIRTUAL, ADD n INT NULL DEFAULT NULL, ADD k INT DEFAULT 5",
			[]Effect{{Kind: AddColumns, Table: schema.TableName{Database: "db", Table: "a"}, Defaults: map[string]string{"k": "'5'"}, Added: []string{"ts", "g", "u", "v", "n", "k"}, Unfilled: []string{"ts", "g", "u", "v"}}}},
		{"ALTER TABLE a ADD COLUMN seq BIGINT NOT NULL AUTO_INCREMENT UNIQUE", []Effect{{Kind: AddColumns, Table: schema.TableName{Database: "db", Table: "a"}, Defaults: map[string]string{}, Added: []string{"seq"}, Unfilled: []string{"seq"}}}},
		{"ALTER IGNORE TABLE t ADD UNIQUE KEY u (a)", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"},
			Why: "ALTER IGNORE TABLE adding a unique key deletes the rows that duplicate it, without row events"}}},
		{"ALTER TABLE t ADD UNIQUE KEY u (a)", []Effect{{Kind: Altered, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"ALTER IGNORE TABLE t ADD INDEX i (a)", []Effect{{Kind: Altered, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"DROP DATABASE shop", []Effect{{Kind: DropDatabase, Table: schema.TableName{Database: "shop"}}}},
		{"DROP DATABASE IF EXISTS `b`", []Effect{{Kind: DropDatabase, Table: schema.TableName{Database: "b"}}}},
		{"DROP SCHEMA b", []Effect{{Kind: DropDatabase, Table: schema.TableName{Database: "b"}}}},
		{"ALTER TABLE t ADD COLUMN x INT", []Effect{{Kind: AddColumns, Table: schema.TableName{Database: "db", Table: "t"}, Defaults: map[string]string{}, Added: []string{"x"}}}},
		{"ALTER TABLE t ADD COLUMN x DOUBLE DEFAULT -2.5, ADD y INT DEFAULT +7", []Effect{{Kind: AddColumns, Table: schema.TableName{Database: "db", Table: "t"}, Defaults: map[string]string{"x": "'-2.5'", "y": "'7'"}, Added: []string{"x", "y"}}}},
		{"CREATE TABLE t (a INT)", []Effect{{Kind: Create, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"CREATE TEMPORARY TABLE t (a INT)", nil},
		// Rows changed by statements (binlog_format STATEMENT or MIXED).
		{"INSERT INTO t VALUES (1)", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"REPLACE INTO other.t SELECT * FROM src", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "other", Table: "t"}}}},
		{"UPDATE t SET a = (SELECT max(b) FROM u) WHERE id = 1", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"UPDATE t JOIN x.u ON t.id = u.id SET t.a = u.a", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"}}, {Kind: RowsByStatement, Table: schema.TableName{Database: "x", Table: "u"}}}},
		{"DELETE FROM t WHERE id < 10", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"}}}},
		{"DELETE a FROM t AS a JOIN u ON a.id = u.id", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"}}, {Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "u"}}}},
		{"LOAD DATA INFILE '/tmp/x' INTO TABLE t", []Effect{{Kind: RowsByStatement, Table: schema.TableName{Database: "db", Table: "t"}}}},
		// Partition maintenance removes or moves rows without row events.
		{"ALTER TABLE p TRUNCATE PARTITION p2023", []Effect{{Kind: PartitionRows, Table: schema.TableName{Database: "db", Table: "p"}, PartitionOp: "TRUNCATE", Partitions: []string{"p2023"}}}},
		{"ALTER TABLE p DROP PARTITION p2023, p2024", []Effect{{Kind: PartitionRows, Table: schema.TableName{Database: "db", Table: "p"}, PartitionOp: "DROP", Partitions: []string{"p2023", "p2024"}}}},
		{"ALTER TABLE p TRUNCATE PARTITION ALL", []Effect{{Kind: PartitionRows, Table: schema.TableName{Database: "db", Table: "p"}, PartitionOp: "OTHER"}}},
		{"ALTER TABLE p EXCHANGE PARTITION p1 WITH TABLE x.q", []Effect{{Kind: PartitionRows, Table: schema.TableName{Database: "db", Table: "p"}, PartitionOp: "OTHER"}, {Kind: PartitionRows, Table: schema.TableName{Database: "x", Table: "q"}}}},
		{"ALTER TABLE p REORGANIZE PARTITION p1 INTO (PARTITION p1a VALUES LESS THAN (5), PARTITION p1b VALUES LESS THAN (10))", []Effect{{Kind: PartitionRows, Table: schema.TableName{Database: "db", Table: "p"}, PartitionOp: "REORGANIZE", Partitions: []string{"p1"}},
			{Kind: Partitioning, Table: schema.TableName{Database: "db", Table: "p"}, Partitioning: &PartitionChange{Op: PartitionsReorganize, Names: []string{"p1"}, Layout: PartitionLayout{Parts: []PartitionDef{{"p1a", "5"}, {"p1b", "10"}}}}}}},
		{"ALTER TABLE p COALESCE PARTITION 2", []Effect{{Kind: PartitionRows, Table: schema.TableName{Database: "db", Table: "p"}, PartitionOp: "COALESCE"},
			{Kind: Partitioning, Table: schema.TableName{Database: "db", Table: "p"}, Partitioning: &PartitionChange{Op: PartitionsCoalesce, Count: 2}}}},
		{"ALTER TABLE p ADD PARTITION (PARTITION p9 VALUES LESS THAN (100))", []Effect{{Kind: Altered, Table: schema.TableName{Database: "db", Table: "p"}},
			{Kind: Partitioning, Table: schema.TableName{Database: "db", Table: "p"}, Partitioning: &PartitionChange{Op: PartitionsAdd, Layout: PartitionLayout{Parts: []PartitionDef{{"p9", "100"}}}}}}},
		{"ALTER TABLE t DROP COLUMN x, MODIFY y BIGINT", []Effect{{Kind: Altered, Table: schema.TableName{Database: "db", Table: "t"}}}},
	} {
		got, ok := Parse(p, "db", c.query)
		if !ok {
			t.Errorf("%s: not parsed", c.query)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.query, got, c.want)
		}
	}
	if _, ok := Parse(p, "db", "ALTER TABLE t FROBNICATE"); ok {
		t.Error("nonsense parsed")
	}
}
