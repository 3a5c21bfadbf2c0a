package cascade

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// cascadeSchema is the test schema: p(id, code UNIQUE); c(id, pid → p.id
// ON DELETE CASCADE ON UPDATE CASCADE); g(id, cid → c.id ON DELETE
// CASCADE); s(id, pid → p.id ON DELETE SET NULL ON UPDATE SET NULL);
// cc((pid, n) primary key, pid → p.id ON UPDATE CASCADE) and its
// grandchild gg((pid, n) → cc(pid, n) ON UPDATE CASCADE); r(pid → p.id
// RESTRICT); t(id, parent → t.id ON DELETE CASCADE), a tree.
func cascadeSchema() (*Keys, map[schema.TableName]*chTable) {
	tn := func(t string) schema.TableName { return schema.TableName{Database: "db", Table: t} }
	m := NewKeys()
	add := func(name, child string, cols []string, parent string, refs []string, del, upd ddl.FKAction) {
		m.Add(ddl.ForeignKey{Name: name, Child: tn(child), Columns: cols, Parent: tn(parent), RefColumns: refs, OnDelete: del, OnUpdate: upd})
	}
	add("c_p", "c", []string{"pid"}, "p", []string{"id"}, ddl.FKCascade, ddl.FKCascade)
	add("g_c", "g", []string{"cid"}, "c", []string{"id"}, ddl.FKCascade, ddl.FKRestrict)
	add("s_p", "s", []string{"pid"}, "p", []string{"id"}, ddl.FKSetNull, ddl.FKSetNull)
	add("cc_p", "cc", []string{"pid"}, "p", []string{"id"}, ddl.FKRestrict, ddl.FKCascade)
	add("gg_cc", "gg", []string{"pid", "n"}, "cc", []string{"pid", "n"}, ddl.FKCascade, ddl.FKCascade)
	add("r_p", "r", []string{"pid"}, "p", []string{"id"}, ddl.FKRestrict, ddl.FKRestrict)
	add("t_t", "t", []string{"parent"}, "t", []string{"id"}, ddl.FKCascade, ddl.FKRestrict)
	table := func(name string, key []string, cols ...string) *chTable {
		ct := &chTable{name: tn(name), ref: "`db`.`" + name + "`", del: schema.IsDeletedColumn, delType: "UInt8"}
		for i := 0; i+1 < len(cols); i += 2 {
			c := chCol{name: cols[i], typ: cols[i+1]}
			for _, k := range key {
				c.key = c.key || k == c.name
			}
			ct.cols = append(ct.cols, c)
		}
		ct.key = key
		return ct
	}
	tables := map[schema.TableName]*chTable{
		tn("c"):  table("c", []string{"id"}, "id", "Int32", "pid", "Int32", "note", "Nullable(String)"),
		tn("g"):  table("g", []string{"id"}, "id", "Int64", "cid", "Nullable(Int32)"),
		tn("s"):  table("s", []string{"id"}, "id", "Int32", "pid", "Nullable(Int32)"),
		tn("cc"): table("cc", []string{"pid", "n"}, "pid", "Int32", "n", "Int32", "v", "String"),
		tn("gg"): table("gg", []string{"id"}, "id", "Int32", "pid", "Nullable(Int32)", "n", "Nullable(Int32)"),
		tn("t"):  table("t", []string{"id"}, "id", "UInt32", "parent", "Nullable(UInt32)"),
	}
	return m, tables
}

func parentSchema() *schema.Table {
	return &schema.Table{Database: "db", Name: "p", Columns: []schema.Column{
		{Name: "id", Kind: schema.KindInt, Type: "int"},
		{Name: "code", Kind: schema.KindChar, Type: "varchar(10)", Charset: "utf8mb4"},
	}, PrimaryKey: []int{0}}
}

// TestCascadeSQL pins the plan and the statements of a DELETE and an
// UPDATE of the parent, and of a tree's self-reference, first as a live
// cascade, then as a replay.
func TestCascadeSQL(t *testing.T) {
	keys, tables := cascadeSchema()
	all := func(schema.TableName) bool { return true }
	var out strings.Builder
	render := func(title string, ev Event, replay bool, levels int) {
		t.Helper()
		plan, err := PlanEvent(keys, ev, all)
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		out.WriteString("## " + title + "\n")
		if plan == nil {
			out.WriteString("no cascade\n\n")
			return
		}
		for _, n := range plan.nodes {
			parent := "event"
			if n.parent != nil {
				parent = n.parent.table.Table
			}
			out.WriteString("node " + n.table.Table + " via " + n.fk.Name + " from " + parent + " kind " + [...]string{"", "delete", "set_null", "update"}[n.kind])
			if n.repeat {
				out.WriteString(" (repeat)")
			}
			out.WriteString("\n")
		}
		b := newBuilder(plan, tables, replay)
		for _, n := range plan.nodes {
			// The levels Runner.Run finds empty.
			b.live[n.id] = b.live[n.id] && n.depth <= levels
		}
		order, cyclic := b.writeOrder()
		if cyclic {
			out.WriteString("cyclic\n")
		}
		for _, tn := range order {
			d, err := b.derive(tables[tn], b.tableNodes(tn))
			if err != nil {
				t.Fatalf("%s: %s: %v", title, tn, err)
			}
			out.WriteString("-- " + tn.Table + " insert\n" + b.insertSQL(tables[tn], d) + "\n")
			out.WriteString("-- " + tn.Table + " count\n" + b.countSQL(tables[tn]) + "\n")
		}
		out.WriteString("\n")
	}
	p := schema.TableName{Database: "db", Table: "p"}
	del := Event{Table: p, Schema: parentSchema(), Delete: true, Rows: [][]any{{int32(200), "a"}, {int32(201), "b"}, {int32(200), "a"}}, First: 1000, Last: 1999}
	render("DELETE FROM p WHERE id IN (200, 201)", del, false, 15)
	render("the same, replayed", del, true, 15)
	upd := Event{Table: p, Schema: parentSchema(), Rows: [][]any{{int32(200), "a"}, {int32(1000), "a"}, {int32(5), "x"}, {int32(5), "y"}}, First: 2000, Last: 2999}
	render("UPDATE p SET id = 1000 WHERE id = 200 (and a row whose id stays)", upd, false, 15)
	noop := Event{Table: p, Schema: parentSchema(), Rows: [][]any{{int32(5), "x"}, {int32(5), "y"}}, First: 3000, Last: 3999}
	render("UPDATE p SET code = 'y' (no referenced column changes)", noop, false, 15)
	tree := Event{Table: schema.TableName{Database: "db", Table: "t"}, Schema: &schema.Table{Database: "db", Name: "t", Columns: []schema.Column{
		{Name: "id", Kind: schema.KindInt, Type: "int unsigned", Unsigned: true}, {Name: "parent", Kind: schema.KindInt, Type: "int unsigned", Unsigned: true, Nullable: true}}},
		Delete: true, Rows: [][]any{{int32(-1), nil}}, First: 4000, Last: 4999}
	render("DELETE FROM t WHERE id = 4294967295 (a tree, three levels deep: those below are pruned while the level above is empty)", tree, false, 3)
	golden(t, "cascade.sql", out.String())
}

// TestCascadeRefuses: what binlog2ch cannot derive exactly stops at the
// event with the reason.
func TestCascadeRefuses(t *testing.T) {
	keys, _ := cascadeSchema()
	tn := func(t string) schema.TableName { return schema.TableName{Database: "db", Table: t} }
	keys.Add(ddl.ForeignKey{Name: "x_s", Child: tn("x"), Columns: []string{"spid"}, Parent: tn("s"), RefColumns: []string{"pid"}, OnDelete: ddl.FKCascade, OnUpdate: ddl.FKCascade})
	_, err := PlanEvent(keys, Event{Table: tn("p"), Schema: parentSchema(), Delete: true, Rows: [][]any{{int32(1), "a"}}}, func(schema.TableName) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "references columns that key") {
		t.Fatalf("got %v", err)
	}
	// Through a table not replicated into one that is: refused, naming
	// the way out.
	keys, _ = cascadeSchema()
	_, err = PlanEvent(keys, Event{Table: tn("p"), Schema: parentSchema(), Delete: true, Rows: [][]any{{int32(1), "a"}}}, func(t schema.TableName) bool { return t.Table != "c" })
	if err == nil || !strings.Contains(err.Error(), "Replicate db.c too") {
		t.Fatalf("got %v; want the cascade through db.c refused", err)
	}
	// Not replicated, nor anything below it: left out.
	plan, err := PlanEvent(keys, Event{Table: tn("p"), Schema: parentSchema(), Delete: true, Rows: [][]any{{int32(1), "a"}}}, func(t schema.TableName) bool { return t.Table != "c" && t.Table != "g" })
	if err != nil || len(plan.Unreplicated) != 1 || plan.Unreplicated[0] != tn("c") || len(plan.Tables) != 1 || plan.Tables[0] != tn("s") {
		t.Fatalf("plan %+v, %v", plan, err)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cascade -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("differs from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
