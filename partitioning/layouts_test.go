package partitioning

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/pingcap/tidb/pkg/parser"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// TestLayoutsFollowDDL: the partition layouts followed through the DDL
// are information_schema's after each statement, run on a real MariaDB:
// CREATE with RANGE, RANGE COLUMNS, TO_DAYS(), YEAR(), LIST (NULL too),
// HASH, KEY and subpartitions; PARTITION BY again with the same names and
// other bounds; ADD, DROP, REORGANIZE, COALESCE, REMOVE PARTITIONING;
// RENAME, CREATE ... LIKE, DROP. A layout the statement does not tell
// exactly (an expression binlog2ch does not read) is unknown, never a
// guess. The layouts saved and restored as a checkpoint's are the same.
func TestLayoutsFollowDDL(t *testing.T) {
	srv := servertest.Need(t)
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	ctx := context.Background()
	db := servertest.Name("b2c_layouts")
	if _, err := my.Exec("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE IF EXISTS " + db) })
	m := Restore(nil)
	p := parser.New()
	name := func(table string) schema.TableName { return schema.TableName{Database: db, Table: table} }
	steps := []struct {
		q       string
		tables  []string
		unknown bool // the new layout is not known exactly
	}{
		{q: "CREATE TABLE r (id INT PRIMARY KEY) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (-5), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN MAXVALUE)", tables: []string{"r"}},
		{q: "CREATE TABLE rc (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE COLUMNS(d) (PARTITION y23 VALUES LESS THAN ('2024-01-01'), PARTITION later VALUES LESS THAN (MAXVALUE))", tables: []string{"rc"}},
		{q: "CREATE TABLE td (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) (PARTITION old VALUES LESS THAN (TO_DAYS('2024-06-01')), PARTITION cur VALUES LESS THAN MAXVALUE)", tables: []string{"td"}},
		{q: "CREATE TABLE yr (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE (YEAR(d)) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 (PARTITION y23 VALUES LESS THAN (2024), PARTITION rest VALUES LESS THAN MAXVALUE)", tables: []string{"yr"}},
		{q: "CREATE TABLE l (id INT, r INT) PARTITION BY LIST (r) (PARTITION pa VALUES IN (1, 2, NULL), PARTITION pb VALUES IN (3, -4))", tables: []string{"l"}},
		{q: "CREATE TABLE lc (id INT, r INT) PARTITION BY LIST COLUMNS (r) (PARTITION pa VALUES IN (1, 2), PARTITION pb VALUES IN (3))", tables: []string{"lc"}},
		{q: "CREATE TABLE h (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 3", tables: []string{"h"}},
		{q: "CREATE TABLE k (id INT PRIMARY KEY) PARTITION BY KEY (id) PARTITIONS 2", tables: []string{"k"}},
		{q: "CREATE TABLE plain (id INT PRIMARY KEY)", tables: []string{"plain"}},
		// The same names, other bounds.
		{q: "ALTER TABLE r PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (5), PARTITION p1 VALUES LESS THAN (25), PARTITION p2 VALUES LESS THAN MAXVALUE)", tables: []string{"r"}},
		{q: "ALTER TABLE r REORGANIZE PARTITION p1, p2 INTO (PARTITION p1 VALUES LESS THAN (15), PARTITION p2 VALUES LESS THAN (40), PARTITION p3 VALUES LESS THAN MAXVALUE)", tables: []string{"r"}},
		{q: "ALTER TABLE r DROP PARTITION p1", tables: []string{"r"}},
		{q: "ALTER TABLE l ADD PARTITION (PARTITION pc VALUES IN (5))", tables: []string{"l"}},
		{q: "ALTER TABLE l REORGANIZE PARTITION pa INTO (PARTITION pa1 VALUES IN (1, NULL), PARTITION pa2 VALUES IN (2))", tables: []string{"l"}},
		{q: "ALTER TABLE h ADD PARTITION PARTITIONS 2", tables: []string{"h"}},
		{q: "ALTER TABLE h COALESCE PARTITION 3", tables: []string{"h"}},
		{q: "ALTER TABLE plain PARTITION BY RANGE (id) (PARTITION a VALUES LESS THAN (100), PARTITION b VALUES LESS THAN MAXVALUE)", tables: []string{"plain"}},
		{q: "ALTER TABLE plain REMOVE PARTITIONING", tables: []string{"plain"}},
		{q: "RENAME TABLE rc TO rc2", tables: []string{"rc", "rc2"}},
		{q: "CREATE TABLE r_like LIKE r", tables: []string{"r_like"}},
		{q: "ALTER TABLE r_like PARTITION BY RANGE (id DIV 10) (PARTITION a VALUES LESS THAN (1), PARTITION b VALUES LESS THAN MAXVALUE)", tables: []string{"r_like"}, unknown: true},
		{q: "DROP TABLE r_like", tables: []string{"r_like"}},
		{q: "ALTER TABLE td PARTITION BY RANGE (TO_DAYS(d)) (PARTITION old VALUES LESS THAN (TO_DAYS('2025-01-01')), PARTITION cur VALUES LESS THAN MAXVALUE)", tables: []string{"td"}},
		{q: "ALTER TABLE td RENAME TO td2", tables: []string{"td", "td2"}},
	}
	for _, step := range steps {
		conn, err := my.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(ctx, "USE "+db)
		if err == nil {
			_, err = conn.ExecContext(ctx, step.q)
		}
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", step.q, err)
		}
		effects, ok := ddl.Parse(p, db, step.q)
		if !ok {
			t.Fatalf("%s: not parsed", step.q)
		}
		m.FollowStatement(source.Statement{Text: step.q, Effects: effects, Parsed: true}, nil)
		for _, table := range step.tables {
			got := m.Lookup(name(table))
			if step.unknown {
				if got.Why == "" {
					t.Errorf("after %s: %s's layout is %+v, want not known", step.q, table, got.Parts)
				}
				continue
			}
			want, err := catalog.LoadPartitions(ctx, my, name(table))
			if err != nil {
				t.Fatal(err)
			}
			if got.Why != "" || !got.Parts.Equal(want) {
				t.Errorf("after %s: %s's layout followed is %s (%s), information_schema's %s", step.q, table, layoutText(got.Parts), got.Why, layoutText(want))
			}
		}
	}
	// Saved and restored, as a checkpoint does.
	sel := &config.TablesConfig{Include: []string{db + ".*"}}
	keep := func(t schema.TableName) bool { return sel.Selects(t.Database, t.Table) }
	m.all = true
	saved := m.state(keep, sel)
	back := Restore(&state.Checkpoint{StreamState: state.StreamState{Partitions: saved}})
	for _, table := range []string{"r", "rc2", "td2", "yr", "l", "lc", "h", "k", "plain", "r_like", "gone"} {
		a, b := m.Lookup(name(table)), back.Lookup(name(table))
		if a.Why != b.Why || !a.Parts.Equal(b.Parts) {
			t.Errorf("%s restored from the checkpoint is %s (%s), was %s (%s)", table, layoutText(b.Parts), b.Why, layoutText(a.Parts), a.Why)
		}
	}
	if lo := back.Lookup(schema.TableName{Database: "other", Table: "x"}); lo.Why == "" {
		t.Errorf("a table the checkpoint's selection does not cover has a known layout %s after a restore", layoutText(lo.Parts))
	}
}

func layoutText(p *catalog.Partitions) string {
	if p == nil {
		return "not partitioned"
	}
	var parts []string
	for _, part := range p.Parts {
		parts = append(parts, part.Name+":"+part.Desc)
	}
	return fmt.Sprintf("%s(%s)[%s]", p.Method, p.Expr, strings.Join(parts, " "))
}
