package ddl

import (
	"reflect"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/pingcap/tidb/pkg/parser"
)

// TestUnparsed: statements TiDB's parser cannot read (MariaDB's
// syntax) still show what they do to tables' rows by their words.
func TestUnparsed(t *testing.T) {
	rows := func(names ...schema.TableName) []Effect {
		var out []Effect
		for _, n := range names {
			out = append(out, Effect{Kind: RowsByStatement, Table: n})
		}
		return out
	}
	d := func(t string) schema.TableName { return schema.TableName{Database: "db", Table: t} }
	for _, c := range []struct {
		q    string
		want []Effect
	}{
		{"INSERT INTO t VALUES (1) RETURNING id", rows(d("t"))},
		{"insert into `Other`.`T 2` (a) values (1) returning a", rows(schema.TableName{Database: "Other", Table: "T 2"})},
		{"REPLACE INTO Mixed SELECT * FROM src RETURNING *", rows(d("Mixed"), d("src"))},
		{"DELETE FROM t WHERE id = 1 RETURNING id", rows(d("t"))},
		{"DELETE a, b FROM t1 a JOIN t2 b ON a.id = b.id RETURNING a.id", rows(d("t1"), d("t2"))},
		{"UPDATE LOW_PRIORITY t1 x, other.t2 SET x.v = 1 RETURNING 1", rows(d("t1"), schema.TableName{Database: "other", Table: "t2"})},
		{"LOAD DATA INFILE 'f' INTO TABLE t FIELDS TERMINATED BY ','", rows(d("t"))},
		{"INSERT /* no table here */ 1", rows(schema.TableName{})},
		{"ALTER TABLE p CONVERT PARTITION p0 TO TABLE archive.p0", []Effect{{Kind: PartitionRows, Table: d("p")}, {Kind: PartitionRows, Table: schema.TableName{Database: "archive", Table: "p0"}}}},
		{"ALTER ONLINE TABLE p CONVERT TABLE t2 TO PARTITION p9 VALUES LESS THAN (10)", []Effect{{Kind: PartitionRows, Table: d("p")}, {Kind: PartitionRows, Table: d("t2")}}},
		{"CREATE OR REPLACE TABLE t (id INT PRIMARY KEY)", []Effect{{Kind: Drop, Table: d("t")}}},
		{"CREATE OR REPLACE TABLE t (id INT PRIMARY KEY) WITH SYSTEM VERSIONING", []Effect{{Kind: Drop, Table: d("t")}, {Kind: NotUnderstood, Table: d("t"), Why: Versioned}}},
		{"CREATE OR REPLACE TEMPORARY TABLE t (id INT)", nil},
		{"ALTER TABLE t ADD COLUMN x INT, ALGORITHM=NOCOPY, LOCK=NONE", []Effect{{Kind: NotUnderstood, Table: d("t")}}}, // Parse reads it
	} {
		if got := Unparsed("db", c.q); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.q, got, c.want)
		}
	}
	// The statements above that MariaDB writes and TiDB's parser cannot
	// read are the ones this is for.
	p := parser.New()
	for _, q := range []string{"INSERT INTO t VALUES (1) RETURNING id", "CREATE OR REPLACE TABLE t (id INT PRIMARY KEY)", "ALTER TABLE p CONVERT PARTITION p0 TO TABLE t2"} {
		if _, ok := Parse(p, "db", q); ok {
			t.Errorf("the parser reads %q now: its effects need no guessing", q)
		}
	}
}
