package catalog_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// TestCatalogReads reads a database with keys, partitions and text
// columns back through every catalog read, against a real MariaDB.
func TestCatalogReads(t *testing.T) {
	srv := servertest.Need(t)
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := servertest.Name("b2c_catalog")
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".p (id INT PRIMARY KEY, code VARCHAR(10) COLLATE utf8mb4_general_ci NOT NULL, UNIQUE KEY (code))",
		"CREATE TABLE " + db + ".c (id INT PRIMARY KEY, p_id INT, p_code VARCHAR(10) COLLATE utf8mb4_general_ci, b VARBINARY(4), s VARCHAR(4) COLLATE utf8mb4_bin, " +
			"CONSTRAINT c_p FOREIGN KEY (p_id) REFERENCES p (id) ON DELETE CASCADE, CONSTRAINT c_code FOREIGN KEY (p_code) REFERENCES p (code) ON UPDATE SET NULL)",
		"CREATE TABLE " + db + ".lonely (id INT PRIMARY KEY)",
		"CREATE TABLE " + db + ".parts (id INT NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
		"INSERT INTO " + db + ".lonely VALUES (1), (2), (3)",
		"ANALYZE TABLE " + db + ".lonely",
	} {
		if _, err := my.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE IF EXISTS " + db) })
	name := func(table string) schema.TableName { return schema.TableName{Database: db, Table: table} }

	keys, tables, err := catalog.ForeignKeys(ctx, my)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		if k.Child.Database == db {
			got = append(got, k.String())
		}
	}
	want := []string{
		fmt.Sprintf("c_code %s.c(p_code) REFERENCES %s.p(code) ON DELETE RESTRICT ON UPDATE SET NULL", db, db),
		fmt.Sprintf("c_p %s.c(p_id) REFERENCES %s.p(id) ON DELETE CASCADE ON UPDATE RESTRICT", db, db),
	}
	if !slices.Equal(got, want) {
		t.Errorf("keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tb := range []string{"p", "c", "lonely", "parts"} {
		if !slices.Contains(tables, name(tb)) {
			t.Errorf("tables %v: %s missing (every base table is tracked, those without keys too)", tables, tb)
		}
	}
	for _, tb := range tables {
		if schema.SystemDatabase(tb.Database) {
			t.Errorf("tables: a system database's %s", tb)
		}
	}
	if keys[0].OnDelete == ddl.FKRestrict && keys[0].OnUpdate == ddl.FKRestrict {
		t.Errorf("actions not read: %+v", keys[0])
	}

	colls, err := catalog.TextCollations(ctx, my, []schema.TableName{name("c")})
	if err != nil {
		t.Fatal(err)
	}
	if len(colls) != 1 || colls[db+".c.p_code"] != "utf8mb4_general_ci" {
		t.Errorf("collations %v: want only c.p_code's utf8mb4_general_ci (binary and _bin ones left out)", colls)
	}
	if none, err := catalog.TextCollations(ctx, my, nil); err != nil || len(none) != 0 {
		t.Errorf("no tables: %v, %v", none, err)
	}

	cfg := &config.Config{}
	cfg.Tables.Include = []string{db + ".*"}
	cfg.Tables.Exclude = []string{db + ".parts"}
	list, err := catalog.ListTables(ctx, my, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []schema.TableName{name("c"), name("lonely"), name("p")}; !slices.Equal(list, want) {
		t.Errorf("ListTables %v, want %v (in name order, parts excluded)", list, want)
	}
	est, err := catalog.EstimateRows(ctx, my, []schema.TableName{name("lonely"), name("lonely"), name("missing")})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := est[name("lonely")]; !ok || n != 3 || len(est) != 1 {
		t.Errorf("EstimateRows %v: want lonely's 3 rows (after ANALYZE) and nothing for a missing table", est)
	}

	parts, err := catalog.LoadPartitions(ctx, my, name("parts"))
	if err != nil {
		t.Fatal(err)
	}
	if parts == nil || parts.Method != "RANGE" || parts.Expr != "`id`" || len(parts.Parts) != 2 || parts.Parts[0] != (catalog.Partition{Name: "p0", Desc: "10"}) || parts.Parts[1].Desc != "MAXVALUE" {
		t.Fatalf("partitions %+v", parts)
	}
	if !parts.Has([]string{"P1"}) || parts.Has([]string{"p2"}) {
		t.Errorf("Has: names are matched without case, unknown ones are not had")
	}
	parts.Drop([]string{"P0"})
	if len(parts.Parts) != 1 || parts.Parts[0].Name != "p1" {
		t.Errorf("after Drop(P0): %+v", parts.Parts)
	}
	if none, err := catalog.LoadPartitions(ctx, my, name("lonely")); err != nil || none != nil {
		t.Errorf("a table without partitions: %+v, %v", none, err)
	}

	ids, err := catalog.Collations(ctx, my)
	if err != nil {
		t.Fatal(err)
	}
	if ids[45] != "utf8mb4" || ids[63] != "binary" || ids[8] != "latin1" {
		t.Errorf("collation ids 45, 63, 8: %q %q %q", ids[45], ids[63], ids[8])
	}
}
