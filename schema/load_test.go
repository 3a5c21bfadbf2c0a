package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// createSQL is a CREATE TABLE with t's columns (their COLUMN_TYPEs) and
// primary key.
func createSQL(db string, t *schema.Table) string {
	var defs []string
	for _, c := range t.Columns {
		null := " NOT NULL"
		if c.Nullable {
			null = " NULL"
		}
		defs = append(defs, "`"+c.Name+"` "+c.Type+null)
	}
	if len(t.PrimaryKey) > 0 {
		var key []string
		for _, i := range t.PrimaryKey {
			key = append(key, "`"+t.Columns[i].Name+"`")
		}
		defs = append(defs, "PRIMARY KEY ("+strings.Join(key, ", ")+")")
	}
	return "CREATE TABLE `" + db + "`.`" + t.Name + "` (" + strings.Join(defs, ", ") + ")"
}

// loadTestTables creates, in two databases, the test schemas' tables
// (every type binlog2ch maps, binlog_field_test), tables with every kind
// of key, character sets, a type without a mapping, and a table of the
// same name in both databases with other columns, and returns the names
// to load: those, a missing table, and a name that exists only in the
// other database.
func loadTestTables(t *testing.T, my *sql.DB) []schema.TableName {
	t.Helper()
	a, b := servertest.Name("b2c_load"), servertest.Name("b2c_load")
	every, field := schematest.EveryType(t), schematest.BinlogFieldTest(t)
	stmts := []string{
		"CREATE DATABASE " + a, "CREATE DATABASE " + b,
		createSQL(a, every), createSQL(a, field),
		"CREATE TABLE " + b + ".every_type (id BIGINT NOT NULL, x VARCHAR(3), UNIQUE KEY (id))",
		"CREATE TABLE " + a + ".pk (a INT NOT NULL, b VARCHAR(5) NOT NULL, c INT, UNIQUE KEY u (c), PRIMARY KEY (b, a))",
		"CREATE TABLE " + a + ".uk (a INT, b INT NOT NULL, c INT NOT NULL, UNIQUE KEY n (a), UNIQUE KEY z (c, b))",
		"CREATE TABLE " + a + ".none (a INT, b INT, KEY k (a))",
		"CREATE TABLE " + a + ".cs (id INT PRIMARY KEY, l VARCHAR(5) CHARACTER SET latin1, u3 TEXT CHARACTER SET utf8mb3, u4 CHAR(2), bin VARBINARY(3), g CHAR(4) CHARACTER SET greek)",
		"CREATE TABLE " + b + ".only_b (id INT PRIMARY KEY)",
	}
	for _, q := range stmts {
		if _, err := my.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		_, _ = my.Exec("DROP DATABASE IF EXISTS " + a)
		_, _ = my.Exec("DROP DATABASE IF EXISTS " + b)
	})
	names := []schema.TableName{{a, "every_type"}, {a, "binlog_field_test_1"}, {b, "every_type"}, {a, "pk"}, {a, "uk"}, {a, "none"}, {a, "cs"},
		{a, "missing"}, {a, "only_b"}, {a, "pk"}}
	// MariaDB's INET6 has no mapping: that table alone fails (MySQL has
	// no such type).
	if _, err := my.Exec("CREATE TABLE " + a + ".inet (id INT PRIMARY KEY, ip INET6)"); err == nil {
		names = append(names, schema.TableName{Database: a, Table: "inet"})
	}
	return names
}

// TestLoadTablesMatchesLoadTable: the batch loader gives every table
// exactly what LoadTable gives it, definition or error, for every type of
// the test schemas.
func TestLoadTablesMatchesLoadTable(t *testing.T) {
	srv := servertest.Need(t)
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	ctx := context.Background()
	names := loadTestTables(t, my)
	got, err := schema.LoadTables(ctx, my, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names)-1 { // pk is asked for twice
		t.Errorf("%d tables loaded for %d distinct names", len(got), len(names)-1)
	}
	for _, n := range names {
		want, wantErr := schema.LoadTable(ctx, my, n.Database, n.Table)
		g, ok := got[n]
		switch {
		case !ok:
			t.Errorf("%s: not in the result", n)
		case wantErr != nil || g.Err != nil:
			if fmt.Sprint(wantErr) != fmt.Sprint(g.Err) || g.Table != nil {
				t.Errorf("%s: LoadTables gave %v, %v; LoadTable %v", n, g.Table, g.Err, wantErr)
			}
		case !reflect.DeepEqual(g.Table, want):
			t.Errorf("%s: LoadTables gave\n%+v\nLoadTable\n%+v", n, g.Table, want)
		}
	}
	// The definitions are the test schemas': every type came through.
	for _, st := range []*schema.Table{schematest.EveryType(t), schematest.BinlogFieldTest(t)} {
		tb := got[schema.TableName{Database: names[0].Database, Table: st.Name}].Table
		if tb == nil || len(tb.Columns) != len(st.Columns) {
			t.Fatalf("%s: loaded %+v", st.Name, tb)
		}
		for i, c := range st.Columns {
			if tb.Columns[i].Name != c.Name || (tb.Columns[i].Kind != c.Kind && c.Kind != schema.KindJSON) {
				t.Errorf("%s.%s: loaded as %+v, defined as %+v", st.Name, c.Name, tb.Columns[i], c)
			}
		}
	}
	missing := got[schema.TableName{Database: names[0].Database, Table: "missing"}]
	if !errors.Is(missing.Err, schema.ErrNoTable) || !strings.Contains(missing.Err.Error(), ".missing does not exist") {
		t.Errorf("missing table: %v", missing.Err)
	}
	// MariaDB's INET6 (10.5+) is known by information_schema's DATA_TYPE.
	if l, ok := got[names[len(names)-1]]; names[len(names)-1].Table == "inet" && (!ok || l.Err != nil || l.Table == nil || l.Table.Columns[1].Kind != schema.KindInet6) {
		t.Errorf("INET6 table: %+v", l)
	}
}

// TestLoaderReadsTogether: tables asked for while a read runs are read
// together by the next one, each caller getting LoadTable's answer.
func TestLoaderReadsTogether(t *testing.T) {
	srv := servertest.Need(t)
	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	ctx := context.Background()
	names := loadTestTables(t, my)
	const callers = 40
	l := schema.NewLoader(my)
	var mu sync.Mutex
	var reads []int
	l.BeforeRead = func(tables int) {
		mu.Lock()
		first := len(reads) == 0
		reads = append(reads, tables)
		mu.Unlock()
		if !first {
			return
		}
		// Hold the first read until every other caller waits for the
		// next one.
		for deadline := time.Now().Add(time.Minute); tables+l.Queued() < callers; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the callers did not queue within a minute")
				return
			}
		}
	}
	before := comSelect(t, my)
	type answer struct {
		t   *schema.Table
		err error
	}
	answers := make([]answer, callers)
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := names[i%len(names)]
			tb, err := l.Load(ctx, n.Database, n.Table)
			answers[i] = answer{tb, err}
		}()
	}
	wg.Wait()
	statements := comSelect(t, my) - before
	t.Logf("%d callers: reads of %v tables, %d statements", callers, reads, statements)
	if len(reads) > 2 || statements > 4 {
		t.Errorf("%d callers: reads of %v tables, %d statements; want at most 2 reads of 2 statements", callers, reads, statements)
	}
	seen := map[*schema.Table]bool{}
	for i, a := range answers {
		n := names[i%len(names)]
		want, wantErr := schema.LoadTable(ctx, my, n.Database, n.Table)
		if fmt.Sprint(wantErr) != fmt.Sprint(a.err) || !reflect.DeepEqual(want, a.t) {
			t.Errorf("%s: Load gave %+v, %v; LoadTable %+v, %v", n, a.t, a.err, want, wantErr)
		}
		if a.t != nil && seen[a.t] {
			t.Errorf("%s: two callers got the same *Table", n)
		}
		seen[a.t] = true
	}

	// A caller that leaves gets its context's error; the others their
	// tables.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Load(gone, names[0].Database, names[0].Table); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller got %v", err)
	}
}

// comSelect is the server's count of SELECT statements.
func comSelect(t *testing.T, my *sql.DB) uint64 {
	t.Helper()
	var name string
	var n uint64
	if err := my.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
