package ddl

import (
	"reflect"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/pingcap/tidb/pkg/parser"
)

// TestParseMariaDBWords: MariaDB's statements that TiDB's parser refuses
// as written are read with the same effects once their MariaDB-only words
// are rewritten (mariaDBWords); each fails to parse as written.
func TestParseMariaDBWords(t *testing.T) {
	p := parser.New()
	d := func(t string) schema.TableName { return schema.TableName{Database: "db", Table: t} }
	added := func(tb string, defaults map[string]string, cols ...string) []Effect {
		return []Effect{{Kind: AddColumns, Table: d(tb), Defaults: defaults, Added: cols}}
	}
	for _, c := range []struct {
		query string
		want  []Effect
	}{
		{"ALTER TABLE a RENAME COLUMN IF EXISTS x TO x2", []Effect{{Kind: RenameColumns, Table: d("a"), Renames: map[string]string{"x": "x2"}}}},
		{"alter table a rename column if exists `x` to `x 2`, rename column y to z", []Effect{{Kind: RenameColumns, Table: d("a"), Renames: map[string]string{"x": "x 2", "y": "z"}}}},
		{"ALTER ONLINE TABLE a ADD COLUMN c INT DEFAULT 3", added("a", map[string]string{"c": "'3'"}, "c")},
		{"ALTER ONLINE IGNORE TABLE a ADD COLUMN c INT", added("a", map[string]string{}, "c")},
		{"ALTER TABLE a WAIT 5 ADD COLUMN c INT DEFAULT 1", added("a", map[string]string{"c": "'1'"}, "c")},
		{"ALTER TABLE other.a NOWAIT ADD COLUMN c INT", []Effect{{Kind: AddColumns, Table: schema.TableName{Database: "other", Table: "a"}, Defaults: map[string]string{}, Added: []string{"c"}}}},
		{"ALTER TABLE IF EXISTS a WAIT 0.5 ADD COLUMN c INT", added("a", map[string]string{}, "c")},
		{"ALTER TABLE a ADD COLUMN c INT DEFAULT 5 INVISIBLE", added("a", map[string]string{"c": "'5'"}, "c")},
		{"ALTER TABLE a ADD COLUMN c VARCHAR(5) INVISIBLE DEFAULT 'x', ADD d INT NOT NULL DEFAULT 2 COMMENT 'c' INVISIBLE", added("a", map[string]string{"c": `'x'`, "d": "'2'"}, "c", "d")},
		{"ALTER TABLE a ADD COLUMN c INT, ALGORITHM=NOCOPY, LOCK=NONE", added("a", map[string]string{}, "c")},
		{"ALTER TABLE a DROP FOREIGN KEY IF EXISTS fk1", []Effect{{Kind: ForeignKeys, Table: d("a"), DropForeignKeys: []string{"fk1"}}}},
		{"ALTER TABLE a DROP CONSTRAINT IF EXISTS c1", []Effect{{Kind: Altered, Table: d("a")}}},
		{"ALTER TABLE a ADD INDEX i (v) IGNORED", []Effect{{Kind: Altered, Table: d("a")}}},
		{"ALTER TABLE a ALTER INDEX i NOT IGNORED", []Effect{{Kind: Altered, Table: d("a")}}},
		{"ALTER TABLE a ADD SPATIAL INDEX g (p)", []Effect{{Kind: Altered, Table: d("a")}}},
		{"SET STATEMENT max_statement_time = 60, lock_wait_timeout = (1) FOR ALTER TABLE a RENAME COLUMN IF EXISTS x TO y", []Effect{{Kind: RenameColumns, Table: d("a"), Renames: map[string]string{"x": "y"}}}},
		{"DROP TABLE a, other.b WAIT 5", []Effect{{Kind: Drop, Table: d("a")}, {Kind: Drop, Table: schema.TableName{Database: "other", Table: "b"}}}},
		{"DROP TABLE IF EXISTS a NOWAIT", []Effect{{Kind: Drop, Table: d("a")}}},
		{"TRUNCATE TABLE a WAIT 5", []Effect{{Kind: Truncate, Table: d("a")}}},
		{"TRUNCATE a NOWAIT", []Effect{{Kind: Truncate, Table: d("a")}}},
		{"RENAME TABLE a WAIT 5 TO b, c NOWAIT TO d", []Effect{{Kind: RenameTable, Table: d("a"), NewTable: d("b")}, {Kind: RenameTable, Table: d("c"), NewTable: d("d")}}},
		{"CREATE INDEX i ON a (v) WAIT 5", nil},
		{"CREATE OR REPLACE UNIQUE INDEX i ON a (v)", nil},
		{"DROP INDEX i ON a NOWAIT", nil},
		{"CREATE TABLE t (id INT PRIMARY KEY, h INT DEFAULT 1 INVISIBLE)", []Effect{{Kind: Create, Table: d("t")}}},
		{"CREATE TABLE t (id INT PRIMARY KEY, `u` UUID DEFAULT UUID(), ip INET6 NOT NULL, v4 inet4)", []Effect{{Kind: Create, Table: d("t")}}},
		{"ALTER TABLE a ADD COLUMN u UUID DEFAULT '123e4567-e89b-12d3-a456-426655440000', ADD ip INET4", added("a", map[string]string{"u": "'123e4567-e89b-12d3-a456-426655440000'"}, "u", "ip")},
		{"ALTER TABLE a MODIFY u UUID, MODIFY uuid INET4", []Effect{{Kind: Altered, Table: d("a")}}},
	} {
		if _, _, err := p.Parse(c.query, "", ""); err == nil {
			t.Errorf("the parser reads %q as written: no rewrite needed", c.query)
		}
		got, ok := Parse(p, "db", c.query)
		if !ok {
			q, _ := mariaDBWords(c.query)
			t.Errorf("%s: not parsed (rewritten %q)", c.query, q)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.query, got, c.want)
		}
	}
	// Words of those names that are a column's or an index's are never
	// taken for them: what is left is not read, and not understood.
	for _, q := range []string{
		"ALTER TABLE a RENAME COLUMN nowait TO wait, ADD COLUMN x BLOB COMPRESSED",
		"ALTER TABLE a ADD COLUMN invisible BLOB COMPRESSED",
		"ALTER TABLE a ADD SYSTEM VERSIONING",
		"ALTER TABLE a ADD COLUMN b BLOB COMPRESSED",
	} {
		if _, ok := Parse(p, "db", q); ok {
			t.Errorf("%s: parsed", q)
		}
	}
	// And ones the parser reads as written are not rewritten.
	for _, q := range []string{"ALTER TABLE a ADD INDEX i (v) INVISIBLE", "ALTER TABLE a ADD COLUMN invisible INT", "ALTER TABLE a CHANGE COLUMN IF EXISTS v vv INT"} {
		if _, ok := Parse(p, "db", q); !ok {
			t.Errorf("%s: not parsed", q)
		}
	}
	if got, _ := Parse(p, "db", "ALTER TABLE a CHANGE COLUMN IF EXISTS v vv INT"); !reflect.DeepEqual(got, []Effect{{Kind: RenameColumns, Table: d("a"), Renames: map[string]string{"v": "vv"}}}) {
		t.Errorf("CHANGE COLUMN IF EXISTS: %+v", got)
	}
}

// TestUnparsedNotUnderstood: what remains unread names its tables, so a
// replicated one stops replication; versioning is told apart; words that
// name no table leave the names they mention.
func TestUnparsedNotUnderstood(t *testing.T) {
	d := func(t string) schema.TableName { return schema.TableName{Database: "db", Table: t} }
	nu := func(why string, names ...schema.TableName) []Effect {
		var out []Effect
		for _, n := range names {
			out = append(out, Effect{Kind: NotUnderstood, Table: n, Why: why})
		}
		return out
	}
	for _, c := range []struct {
		q    string
		want []Effect
	}{
		{"ALTER TABLE s ADD SYSTEM VERSIONING", nu(Versioned, d("s"))},
		{"ALTER TABLE s DROP SYSTEM VERSIONING", nu(Versioned, d("s"))},
		{"ALTER ONLINE TABLE x.s ADD PERIOD FOR SYSTEM_TIME (a, b)", nu(Versioned, schema.TableName{Database: "x", Table: "s"})},
		{"ALTER TABLE a ADD COLUMN b BLOB COMPRESSED, RENAME TO other.b", nu("", d("a"), schema.TableName{Database: "other", Table: "b"})},
		{"ALTER TABLE a ADD COLUMN b BLOB COMPRESSED, RENAME COLUMN x TO y", nu("", d("a"))},
		{"CREATE TABLE t (id INT PRIMARY KEY) WITH SYSTEM VERSIONING", nu(Versioned, d("t"))},
		{"CREATE TABLE t (id INT, p INT REFERENCES q (id), ip INET6)", nu("", d("t"))},
		{"CREATE TABLE IF NOT EXISTS t (id INT, ip INET6)", []Effect{{Kind: Create, Table: d("t"), IfNotExists: true}}},
		{"CREATE TEMPORARY TABLE t (ip INET6)", nil},
		{"DROP TABLE IF EXISTS a, b RESTRICT FROBNICATE", nu("", d("a"), d("b"))},
		{"RENAME TABLE IF EXISTS a TO b, c TO d", nu("", d("a"), d("b"), d("c"), d("d"))},
		{"TRUNCATE TABLE a FROBNICATE", nu("", d("a"))},
		{"CREATE OR REPLACE INDEX i USING BTREE ON a (v) FROBNICATE", nu("", d("a"))},
		{"CREATE OR REPLACE DATABASE shop", []Effect{{Kind: DropDatabase, Table: schema.TableName{Database: "shop"}}}},
		{"FROBNICATE TABLE `a b`, x.y WITH 3", []Effect{{Kind: NotUnderstood, Mentions: []schema.TableName{d("FROBNICATE"), d("a b"), {Database: "x", Table: "y"}}}}},
	} {
		if got := Unparsed("db", c.q); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.q, got, c.want)
		}
	}
}
