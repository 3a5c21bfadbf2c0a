package replicator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
)

// newViewsHarness is newHarness with clickhouse.current_views on.
func newViewsHarness(t *testing.T, extra string) *harness {
	t.Helper()
	srv := servertest.Need(t)
	return newHarnessOn(t, srv, fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4242}
clickhouse: {addr: [%q], user: %q, password: %q, current_views: true}
`, srv.MySQL.Addr(), srv.MySQL.User, srv.MySQL.Password, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password), 1, extra)
}

// assertView compares the current-state view db.table_current with MySQL's
// table: the same column names in the same order, and SELECT * row for row.
func (h *harness) assertView(ch driver.Conn, db, table, key string) {
	h.t.Helper()
	t := h.t.(*testing.T)
	var mysqlCols []string
	rows, err := h.my.Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", db, table)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		mysqlCols = append(mysqlCols, c)
	}
	rows.Close()
	view := table + schema.ViewSuffix
	// One row: queryStrings sorts its rows; system.columns lists them in order.
	chCols := queryStrings(t, ch, fmt.Sprintf("SELECT arrayStringConcat(groupArray(name), ',') FROM system.columns WHERE database = '%s' AND table = '%s'", db, view))
	if strings.Join(chCols, ",") != strings.Join(mysqlCols, ",") {
		t.Fatalf("%s.%s has columns %v, MySQL's %s %v", db, view, chCols, table, mysqlCols)
	}
	var exprs []string
	for _, c := range mysqlCols {
		exprs = append(exprs, fmt.Sprintf("ifNull(toString(`%s`), 'NULL')", c))
	}
	got := queryStrings(t, ch, fmt.Sprintf("SELECT arrayStringConcat([%s], '|') FROM `%s`.`%s` ORDER BY `%s`", strings.Join(exprs, ", "), db, view, key))
	want := h.mysqlRows(db, table, mysqlCols)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SELECT * FROM %s.%s:\n%s\nMySQL's %s:\n%s", db, view, strings.Join(got, "\n"), table, strings.Join(want, "\n"))
	}
}

// TestCurrentViews: with clickhouse.current_views, each replicated table
// with a key has db.t_current, MySQL's columns in MySQL's order and its
// current rows, through inserts, updates, a key change, deletes, ADD and
// MODIFY COLUMN, an online copy swapped in, RENAME and DROP TABLE; a
// changelog table (no key) gets none.
func TestCurrentViews(t *testing.T) {
	h := newViewsHarness(t, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2) NOT NULL)",
		"CREATE TABLE "+a+".log (at INT, what VARCHAR(20))",
		"INSERT INTO "+a+".t VALUES (1, 'one', 1.50), (2, 'two', 2.50), (3, NULL, 3.50), (4, 'four', 4.50)",
		"INSERT INTO "+a+".log VALUES (1, 'x')",
		"UPDATE "+a+".t SET name = 'ONE' WHERE id = 1",
		"UPDATE "+a+".t SET id = 20 WHERE id = 2",
		"DELETE FROM "+a+".t WHERE id = 3")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertView(h.ch, a, "t", "id")
	if h.chTableExists(a, "log"+schema.ViewSuffix) {
		t.Errorf("the changelog table %s.log has a view", a)
	}

	h.exec("ALTER TABLE "+a+".t ADD COLUMN added INT NOT NULL DEFAULT 7 AFTER id",
		"INSERT INTO "+a+".t VALUES (5, 5, 'five', 5.50)",
		"ALTER TABLE "+a+".t MODIFY COLUMN amount DECIMAL(12,3) NOT NULL",
		"UPDATE "+a+".t SET amount = amount + 0.125 WHERE id = 4")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertView(h.ch, a, "t", "id")

	// Copied online and swapped in: the view reads the new table.
	if err := run.r.Resync(context.Background(), []schema.TableName{{Database: a, Table: "t"}}); err != nil {
		t.Fatal(err)
	}
	h.waitCopied(run, time.Minute)
	h.exec("DELETE FROM " + a + ".t WHERE id = 1")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertView(h.ch, a, "t", "id")

	h.exec("RENAME TABLE " + a + ".t TO " + a + ".t2")
	h.exec("INSERT INTO " + a + ".t2 VALUES (6, 6, 'six', 6.50)")
	h.waitCaughtUp(run, 30*time.Second)
	if h.chTableExists(a, "t"+schema.ViewSuffix) {
		t.Errorf("%s.t_current is still there after RENAME TABLE", a)
	}
	h.assertView(h.ch, a, "t2", "id")
	h.exec("DROP TABLE " + a + ".t2")
	h.waitCaughtUp(run, 30*time.Second)
	if h.chTableExists(a, "t2"+schema.ViewSuffix) {
		t.Errorf("%s.t2_current is still there after DROP TABLE", a)
	}
	if err := run.stop(t); err != nil {
		t.Errorf("clean stop: %v", err)
	}
}

// TestCurrentViewNameTaken: a selected MySQL table named like another's
// view (t and t_current) is refused at start, naming both; one created
// while the daemon runs stops it at its first rows.
func TestCurrentViewNameTaken(t *testing.T) {
	h := newViewsHarness(t, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY)", "CREATE TABLE "+a+".t_current (id INT PRIMARY KEY)")
	run := h.start()
	err := run.stopped(t, 30*time.Second, "the daemon started with t and t_current selected")
	wantError(t, err, "current-state view", a+".t", a+".t_current", "current_views: false")

	h.exec("DROP TABLE " + a + ".t_current")
	run = h.start()
	h.exec("INSERT INTO " + a + ".t VALUES (1)")
	h.waitCaughtUp(run, 30*time.Second)
	h.exec("CREATE TABLE "+a+".t_current (id INT PRIMARY KEY)", "INSERT INTO "+a+".t_current VALUES (1)")
	err = run.stopped(t, 30*time.Second, "the daemon did not stop at rows for the view's name")
	wantError(t, err, a+".t_current", "current-state view of "+a+".t")
}

// TestCurrentViewsCluster: in a cluster the view is on every server and
// reads the Distributed table.
func TestCurrentViewsCluster(t *testing.T) {
	h, c := newClusterHarnessWith(t, 2, 1, func(*localserver.Cluster) string { return ", current_views: true" }, nil)
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO "+a+".t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
		"UPDATE "+a+".t SET v = 'B' WHERE id = 2", "DELETE FROM "+a+".t WHERE id = 3",
		"ALTER TABLE "+a+".t ADD COLUMN w INT NOT NULL DEFAULT 1")
	h.exec("INSERT INTO " + a + ".t VALUES (5, 'e', 5)")
	h.waitCaughtUp(run, time.Minute)
	for _, sh := range c.Shards {
		h.assertView(openCH(t, sh[0]), a, "t", "id")
	}
	if err := run.stop(t); err != nil {
		t.Errorf("clean stop: %v", err)
	}
}
