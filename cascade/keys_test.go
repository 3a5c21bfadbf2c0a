package cascade

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/pingcap/tidb/pkg/parser"
)

// TestForeignKeyDDL follows CREATE TABLE with keys, ALTER ... ADD/DROP
// FOREIGN KEY, RENAME TABLE, RENAME COLUMN and DROP TABLE through the
// model, with the names InnoDB gives keys declared without one.
func TestForeignKeyDDL(t *testing.T) {
	p := parser.New()
	m := NewKeys()
	m.InlineReferences, m.IndexNamesKeys = true, true // MariaDB
	apply := func(q string) {
		t.Helper()
		effects, ok := ddl.Parse(p, "db", q)
		if !ok {
			t.Fatalf("%s: not parsed", q)
		}
		m.ApplyDDL(effects)
	}
	want := func(lines ...string) {
		t.Helper()
		var got []string
		for _, k := range m.All() {
			got = append(got, k.String())
		}
		if strings.Join(got, "\n") != strings.Join(lines, "\n") {
			t.Fatalf("keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
		}
	}
	apply("CREATE TABLE p (id INT PRIMARY KEY, code VARCHAR(10) UNIQUE)")
	apply("CREATE TABLE c (id INT PRIMARY KEY, a INT REFERENCES p(id), b INT, FOREIGN KEY (b) REFERENCES p (id) ON DELETE CASCADE, " +
		"c INT REFERENCES p(id) ON DELETE SET NULL, CONSTRAINT named FOREIGN KEY ix (code) REFERENCES other.p(code) ON UPDATE CASCADE, " +
		"FOREIGN KEY fkidx (a, b) REFERENCES p(id, x) ON DELETE NO ACTION ON UPDATE SET NULL)")
	want("c_ibfk_1 db.c(a) REFERENCES db.p(id) ON DELETE RESTRICT ON UPDATE RESTRICT",
		"c_ibfk_2 db.c(b) REFERENCES db.p(id) ON DELETE CASCADE ON UPDATE RESTRICT",
		"c_ibfk_3 db.c(c) REFERENCES db.p(id) ON DELETE SET NULL ON UPDATE RESTRICT",
		"fkidx db.c(a, b) REFERENCES db.p(id, x) ON DELETE RESTRICT ON UPDATE SET NULL",
		"named db.c(code) REFERENCES other.p(code) ON DELETE RESTRICT ON UPDATE CASCADE")

	apply("ALTER TABLE c DROP FOREIGN KEY c_ibfk_1, DROP FOREIGN KEY fkidx, ADD FOREIGN KEY (a) REFERENCES p(id) ON UPDATE CASCADE")
	want("c_ibfk_2 db.c(b) REFERENCES db.p(id) ON DELETE CASCADE ON UPDATE RESTRICT",
		"c_ibfk_3 db.c(c) REFERENCES db.p(id) ON DELETE SET NULL ON UPDATE RESTRICT",
		"c_ibfk_4 db.c(a) REFERENCES db.p(id) ON DELETE RESTRICT ON UPDATE CASCADE",
		"named db.c(code) REFERENCES other.p(code) ON DELETE RESTRICT ON UPDATE CASCADE")

	// A rename renames the generated names and follows the references; a
	// column rename follows on both sides.
	apply("RENAME TABLE c TO c2, p TO p2")
	apply("ALTER TABLE p2 RENAME COLUMN id TO pid")
	apply("ALTER TABLE c2 CHANGE COLUMN b bb INT")
	want("c2_ibfk_2 db.c2(bb) REFERENCES db.p2(pid) ON DELETE CASCADE ON UPDATE RESTRICT",
		"c2_ibfk_3 db.c2(c) REFERENCES db.p2(pid) ON DELETE SET NULL ON UPDATE RESTRICT",
		"c2_ibfk_4 db.c2(a) REFERENCES db.p2(pid) ON DELETE RESTRICT ON UPDATE CASCADE",
		"named db.c2(code) REFERENCES other.p(code) ON DELETE RESTRICT ON UPDATE CASCADE")

	// IF NOT EXISTS on a table that is there changes nothing; a DROP
	// forgets the child's keys, not those referencing it.
	apply("CREATE TABLE IF NOT EXISTS c2 (id INT PRIMARY KEY)")
	apply("CREATE TABLE g (id INT PRIMARY KEY, c_id INT, CONSTRAINT g_c FOREIGN KEY (c_id) REFERENCES c2 (id) ON DELETE CASCADE)")
	apply("DROP TABLE c2")
	want("g_c db.g(c_id) REFERENCES db.c2(id) ON DELETE CASCADE ON UPDATE RESTRICT")

	// MySQL 8.0.16+: the index name does not name the key; MySQL before
	// 9.0 ignores a column's REFERENCES.
	m = NewKeys()
	apply("CREATE TABLE c (id INT PRIMARY KEY, a INT REFERENCES p(id), FOREIGN KEY ix (a) REFERENCES p(id), CONSTRAINT FOREIGN KEY (a) REFERENCES p(id), CONSTRAINT s FOREIGN KEY ix2 (a) REFERENCES p(id))")
	want("c_ibfk_1 db.c(a) REFERENCES db.p(id) ON DELETE RESTRICT ON UPDATE RESTRICT",
		"c_ibfk_2 db.c(a) REFERENCES db.p(id) ON DELETE RESTRICT ON UPDATE RESTRICT",
		"s db.c(a) REFERENCES db.p(id) ON DELETE RESTRICT ON UPDATE RESTRICT")

	// An unknown name is reported, not guessed.
	effects, _ := ddl.Parse(p, "db", "ALTER TABLE c DROP FOREIGN KEY nope")
	if _, unknown := m.ApplyDDL(effects); len(unknown) != 1 || unknown[0] != "nope" {
		t.Fatalf("unknown names: %v", unknown)
	}
}

// TestForeignKeyState: the checkpoint keeps the keys of the tables that
// matter and restores them over those information_schema shows now.
func TestForeignKeyState(t *testing.T) {
	m := NewKeys()
	keep := schema.TableName{Database: "db", Table: "c"}
	m.Add(ddl.ForeignKey{Name: "k1", Child: keep, Columns: []string{"p"}, Parent: schema.TableName{Database: "db", Table: "p"}, RefColumns: []string{"id"}, OnDelete: ddl.FKCascade})
	m.Add(ddl.ForeignKey{Name: "k2", Child: schema.TableName{Database: "other", Table: "x"}, Columns: []string{"p"}, Parent: schema.TableName{Database: "other", Table: "y"}, RefColumns: []string{"id"}})
	m.Track(schema.TableName{Database: "db", Table: "empty"})
	st := m.State(func(t schema.TableName) bool { return t.Database == "db" })
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tracked":[{"Database":"db","Table":"c"},{"Database":"db","Table":"empty"}],"keys":[{"name":"k1","child":{"Database":"db","Table":"c"},"columns":["p"],"parent":{"Database":"db","Table":"p"},"ref_columns":["id"],"on_delete":"CASCADE","on_update":"RESTRICT"}]}`
	if string(data) != want {
		t.Fatalf("state:\n%s\nwant\n%s", data, want)
	}
	var back KeyState
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	// Now: k1 was dropped since and another key added to db.empty; the
	// checkpoint's keys are those of its position.
	now := NewKeys()
	now.Add(ddl.ForeignKey{Name: "k3", Child: schema.TableName{Database: "db", Table: "empty"}, Columns: []string{"a"}, Parent: keep, RefColumns: []string{"id"}})
	now.Add(ddl.ForeignKey{Name: "k2", Child: schema.TableName{Database: "other", Table: "x"}, Columns: []string{"p"}, Parent: schema.TableName{Database: "other", Table: "y"}, RefColumns: []string{"id"}})
	now.Restore(&back)
	if !now.Equal(m) {
		t.Fatalf("restored: %v; want %v", now.All(), m.All())
	}
}
