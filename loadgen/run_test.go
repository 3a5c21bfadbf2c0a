package loadgen

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

func options(t *testing.T) Options {
	srv := servertest.Need(t)
	return Options{Host: srv.MySQL.Host, Port: srv.MySQL.Port, User: srv.MySQL.User, Password: srv.MySQL.Password,
		Schema: servertest.Name("b2c_loadgen"), Table: "binlog_field_test_1", BatchSize: 500, Conns: 3, Seed: 7}
}

func countRows(t *testing.T, db *sql.DB, schema, table string) (n uint64) {
	t.Helper()
	if err := db.QueryRow("SELECT COUNT(*) FROM " + ident(schema) + "." + ident(table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunMixedWorkload fills two tables with inserts, updates and deletes
// and checks the counters against what MySQL holds.
func TestRunMixedWorkload(t *testing.T) {
	o := options(t)
	// Small batches: many statements, so updates and deletes surely occur.
	o.Tables, o.Count, o.BatchSize, o.UpdateRatio, o.DeleteRatio, o.ExtraColumns, o.Create = 2, 3000, 50, 0.3, 0.2, 2, true
	var out bytes.Buffer
	o.Progress = &out
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 6000 || res.Errors != 0 || res.Updated == 0 || res.Deleted == 0 {
		t.Fatalf("result %+v", res)
	}
	db, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows uint64
	for _, table := range []string{"binlog_field_test_1", "binlog_field_test_2"} {
		rows += countRows(t, db, o.Schema, table)
	}
	if rows != res.Inserted-res.Deleted {
		t.Fatalf("MySQL holds %d rows; inserted %d, deleted %d", rows, res.Inserted, res.Deleted)
	}
	var nulls, values uint64
	if err := db.QueryRow("SELECT SUM(extra_2 IS NULL), SUM(extra_2 IS NOT NULL) FROM "+ident(o.Schema)+".binlog_field_test_1").Scan(&nulls, &values); err != nil {
		t.Fatal(err)
	}
	if nulls == 0 || values == 0 {
		t.Fatalf("extra_2: %d NULLs, %d values: want both", nulls, values)
	}
	summary := out.String()
	for _, want := range []string{"Global Results", "inserted:  6000 rows", "errors:    0"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// TestRunDurationAndRate: -duration stops an unbounded run and -rate
// holds the insert rate down.
func TestRunDurationAndRate(t *testing.T) {
	o := options(t)
	o.Create, o.Duration, o.Rate, o.BatchSize, o.MaxLen = true, 2500*time.Millisecond, 2000, 100, 8
	var out bytes.Buffer
	o.Progress = &out
	start := time.Now()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Stopped by -duration: not before it, and long before anything else
	// would (a loaded machine may take a few seconds more to finish).
	if el := time.Since(start); el < 2500*time.Millisecond || el > time.Minute {
		t.Fatalf("ran %s for -duration 2.5s", el)
	}
	// Paced: at most rate x the run's own elapsed time, plus one batch
	// per connection.
	if limit := 2000*res.Elapsed.Seconds() + 3*100; res.Inserted == 0 || float64(res.Inserted) > limit {
		t.Fatalf("inserted %d rows at -rate 2000 in %s (at most %.0f)", res.Inserted, res.Elapsed, limit)
	}
	line := regexp.MustCompile(`(?m)^INS \d+ \(\d+\.\d/s\), UPD 0 \(0\.0/s\), DEL 0 \(0\.0/s\), ERR 0, \d+ sec$`)
	if !line.MatchString(out.String()) {
		t.Fatalf("no progress line in:\n%s", out.String())
	}
}

func TestRunErrors(t *testing.T) {
	o := options(t)
	o.Count = 10
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "-create") {
		t.Fatalf("missing table: got %v, want advice to use -create", err)
	}
	bad := o
	bad.Count, bad.Duration = 0, 0
	var oe *OptionsError
	if _, err := Run(context.Background(), bad); !errors.As(err, &oe) {
		t.Fatalf("no -count nor -duration: got %v", err)
	}
	// A user that may read but not write: every statement fails, each
	// connection gives up, and the run says why.
	o.Create = true
	if _, err := Run(context.Background(), o); err != nil { // creates the table as root
		t.Fatal(err)
	}
	db, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	user := servertest.Name("ro")
	for _, q := range []string{"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'", "GRANT SELECT ON " + ident(o.Schema) + ".* TO '" + user + "'@'%'"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	defer db.Exec("DROP USER '" + user + "'@'%'")
	ro := o
	ro.User, ro.Password, ro.Create, ro.Count = user, "pw", false, 100000
	res, err := Run(context.Background(), ro)
	if err == nil || !strings.Contains(err.Error(), "every connection failed") || !strings.Contains(err.Error(), "INSERT command denied") {
		t.Fatalf("read-only user: got %v", err)
	}
	if res.Errors != uint64(ro.Conns*maxConsecutiveErrors) {
		t.Fatalf("counted %d errors, want %d", res.Errors, ro.Conns*maxConsecutiveErrors)
	}
}

// TestRunRatiosHold: the shares of update and delete statements are the
// ones asked for, within a tolerance (the first statements of a table are
// inserts: there is nothing to change yet).
func TestRunRatiosHold(t *testing.T) {
	o := options(t)
	o.Create, o.Count, o.BatchSize, o.Conns, o.UpdateRatio, o.DeleteRatio, o.MaxLen = true, 6000, 5, 2, 0.3, 0.1, 8
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	total := float64(res.InsertStatements + res.UpdateStatements + res.DeleteStatements)
	upd, del := float64(res.UpdateStatements)/total, float64(res.DeleteStatements)/total
	if total < 1500 || upd < 0.25 || upd > 0.35 || del < 0.06 || del > 0.14 {
		t.Fatalf("%.0f statements: %.3f updates, %.3f deletes; want about 0.3 and 0.1 (%+v)", total, upd, del, res)
	}
	if res.InsertStatements != 6000/5 || res.Inserted != 6000 {
		t.Fatalf("inserts: %d statements, %d rows", res.InsertStatements, res.Inserted)
	}
}

// TestRunFillsEveryTable: with -tables N -conn C every table gets exactly
// -count rows in ceil(count/batchsize) INSERTs, for fewer connections than
// tables (each connection must write to several), more, and one.
func TestRunFillsEveryTable(t *testing.T) {
	for _, c := range []struct{ tables, conns int }{{7, 3}, {2, 5}, {3, 1}} {
		t.Run(fmt.Sprintf("tables=%d,conn=%d", c.tables, c.conns), func(t *testing.T) {
			o := options(t)
			o.Create, o.Tables, o.Conns, o.Count, o.BatchSize, o.MaxLen = true, c.tables, c.conns, 1000, 150, 8
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			perTable := uint64((o.Count + o.BatchSize - 1) / o.BatchSize) // 7: six of 150 rows, one of 100
			if res.Inserted != uint64(c.tables*o.Count) || res.InsertStatements != uint64(c.tables)*perTable || res.Errors != 0 {
				t.Fatalf("result %+v: want %d rows in %d INSERTs", res, c.tables*o.Count, uint64(c.tables)*perTable)
			}
			db, err := Open(&o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			names := o.TableNames()
			if len(names) != c.tables || len(res.Tables) != c.tables {
				t.Fatalf("tables %v, result's %v", names, res.Tables)
			}
			for _, table := range names {
				if n := countRows(t, db, o.Schema, table); n != uint64(o.Count) {
					t.Errorf("%s holds %d rows, want %d", table, n, o.Count)
				}
			}
		})
	}
}

// TestRunWithoutCountSpreadsOverTables: a run without -count writes to
// every table too. Once the connections have made tables x conns INSERTs,
// one of them has made at least one per table (they take the tables in
// turn), so the run is stopped then, not after a time.
func TestRunWithoutCountSpreadsOverTables(t *testing.T) {
	o := options(t)
	o.Create, o.Tables, o.Conns, o.BatchSize, o.MaxLen, o.Duration = true, 5, 2, 10, 8, 10*time.Minute
	var inserted atomic.Uint64
	o.Inserted = &inserted
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	enough := uint64(o.Tables * o.Conns * o.BatchSize)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for inserted.Load() < enough && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, o)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted < enough || res.Errors != 0 {
		t.Fatalf("result %+v: want at least %d rows", res, enough)
	}
	db, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var total uint64
	for _, table := range o.TableNames() {
		n := countRows(t, db, o.Schema, table)
		if n == 0 {
			t.Errorf("%s is empty", table)
		}
		total += n
	}
	if total != res.Inserted {
		t.Fatalf("MySQL holds %d rows, the run counted %d", total, res.Inserted)
	}
}

// TestRunHooks: Started is called once, before the first statement, and
// Committed once per committed INSERT with its table and rows, so the
// per-table totals it gives equal what MySQL holds.
func TestRunHooks(t *testing.T) {
	o := options(t)
	o.Create, o.Tables, o.Conns, o.Count, o.BatchSize, o.MaxLen = true, 3, 2, 20, 3, 8
	var mu sync.Mutex
	started := 0
	perTable := map[string]int{}
	calls := 0
	o.Started = func() {
		mu.Lock()
		defer mu.Unlock()
		if calls > 0 {
			t.Errorf("Started after %d commits", calls)
		}
		started++
	}
	o.Committed = func(table string, rows int) {
		mu.Lock()
		defer mu.Unlock()
		if started == 0 {
			t.Errorf("Committed before Started")
		}
		calls++
		perTable[table] += rows
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 || uint64(calls) != res.InsertStatements {
		t.Fatalf("Started %d times, Committed %d times for %d INSERTs", started, calls, res.InsertStatements)
	}
	db, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range o.TableNames() {
		if n := countRows(t, db, o.Schema, table); n != uint64(perTable[table]) || n != uint64(o.Count) {
			t.Errorf("%s holds %d rows; Committed reported %d", table, n, perTable[table])
		}
	}
}

// TestStartTableSpreads: the connections start spread over the tables, so
// each table's statements come evenly spaced, and never past the last.
func TestStartTableSpreads(t *testing.T) {
	for _, c := range []struct {
		conns, tables int
		want          []int
	}{
		{4, 500, []int{0, 125, 250, 375}},
		{3, 7, []int{0, 2, 4}},
		{5, 2, []int{0, 0, 0, 1, 1}},
		{1, 3, []int{0}},
	} {
		for i, w := range c.want {
			if got := startTable(i, c.conns, c.tables); got != w {
				t.Errorf("conns %d, tables %d: connection %d starts at %d, want %d", c.conns, c.tables, i, got, w)
			}
		}
	}
}
