package replicator

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
)

// The online schema migrations of a replicated table (migrations.go),
// each with only that table included: ClickHouse follows the new table
// while it is filled and swaps it in at the cut-over, and ends equal to
// MySQL without copying the table again.

// migrationHarness is a harness whose config includes only db.orders,
// with orders holding rows rows.
func migrationHarness(t *testing.T, rows int) (*harness, string) {
	t.Helper()
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(data), fmt.Sprintf("%q", a+".*"), fmt.Sprintf("%q", a+".orders"), 1)
	if conf == string(data) {
		t.Fatalf("the config does not include %s.*:\n%s", a, data)
	}
	if err := os.WriteFile(h.path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if h.cfg, err = config.Load(h.path); err != nil {
		t.Fatal(err)
	}
	h.exec("CREATE TABLE " + a + ".orders (id INT PRIMARY KEY, amount INT NOT NULL, note VARCHAR(40))")
	var vals []string
	for i := 1; i <= rows; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'n%d')", i, i*10, i))
	}
	h.exec("INSERT INTO " + a + ".orders VALUES " + strings.Join(vals, ", "))
	return h, a
}

// orderWriter writes to db.orders from its own connection until stopped:
// inserts, updates, key changes and deletes, each followed by apply (nil:
// none), as gh-ost applies the binlog's changes to its ghost table.
type orderWriter struct {
	stop   atomic.Bool
	wg     sync.WaitGroup
	err    error
	writes atomic.Int64
}

// change is one write to orders: the row id now has amount and note
// (deleted: it is gone); from is the id it had before (0: a new row).
type change struct {
	from, id   int
	amount     int
	note       string
	deleted    bool
	keyChanged bool
}

func (h *harness) writeOrders(db string, seed uint64, max int, apply func(c change) []string) *orderWriter {
	w := &orderWriter{}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.err = w.run(h, db, seed, max, apply)
	}()
	return w
}

func (w *orderWriter) run(h *harness, db string, seed uint64, max int, apply func(c change) []string) error {
	ctx := context.Background()
	conn, err := h.my.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	rnd := rand.New(rand.NewPCG(seed, 7))
	next := 100000 * int(seed)
	for i := 0; i < 20000 && !w.stop.Load(); i++ {
		id := 1 + rnd.IntN(max)
		var q string
		var c change
		switch p := rnd.IntN(10); {
		case p < 4:
			next++
			c = change{id: next, amount: rnd.IntN(1000), note: fmt.Sprintf("ins %d", i)}
			q = fmt.Sprintf("INSERT INTO %s.orders (id, amount, note) VALUES (%d, %d, '%s')", db, c.id, c.amount, c.note)
		case p < 7:
			c = change{from: id, id: id, amount: rnd.IntN(1000), note: fmt.Sprintf("upd %d", i)}
			q = fmt.Sprintf("UPDATE %s.orders SET amount = %d, note = '%s' WHERE id = %d", db, c.amount, c.note, id)
		case p < 8:
			next++
			c = change{from: id, id: next, keyChanged: true}
			q = fmt.Sprintf("UPDATE %s.orders SET id = %d WHERE id = %d", db, next, id)
		default:
			c = change{from: id, id: id, deleted: true}
			q = fmt.Sprintf("DELETE FROM %s.orders WHERE id = %d", db, id)
		}
		res, err := conn.ExecContext(ctx, q)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if n, _ := res.RowsAffected(); n > 0 && apply != nil {
			for _, a := range apply(c) {
				if _, err := conn.ExecContext(ctx, a); err != nil {
					return fmt.Errorf("%s: %w", a, err)
				}
			}
		}
		w.writes.Add(1)
	}
	return nil
}

// finish stops the writer and fails the test if a write failed or none
// was made (the migration then ran without concurrent writes).
func (w *orderWriter) finish(t *testing.T) {
	t.Helper()
	w.stop.Store(true)
	w.wg.Wait()
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.writes.Load() == 0 {
		t.Fatal("the concurrent writer made no write")
	}
}

// waitWrites waits until the writer has made n writes.
func (w *orderWriter) waitWrites(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.writes.Load() < n {
		if w.err != nil || time.Now().After(deadline) {
			t.Fatalf("the concurrent writer at %d writes, want %d (error: %v)", w.writes.Load(), n, w.err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// chTables lists db's tables in ClickHouse.
func (h *harness) chTables(db string) []string {
	h.t.Helper()
	rows, err := h.ch.Query(context.Background(), "SELECT name FROM system.tables WHERE database = ? ORDER BY name", db)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			h.t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

// assertMigrated checks the end of a migration: ClickHouse has exactly
// the tables want (MySQL's, but gh-ost's changelog, which is not
// followed), orders equal to MySQL by verify and with the new column's
// values, and logs without a warning or a copy (nothing was copied again).
func (h *harness) assertMigrated(db string, logs string, want ...string) {
	h.t.Helper()
	if got := h.chTables(db); !slices.Equal(got, want) {
		h.t.Errorf("ClickHouse tables of %s: %v, want %v", db, got, want)
	}
	h.verifyEqual("orders")
	h.assertEqual(db, "orders", []string{"id", "amount", "note", "status"})
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "copied") ||
			strings.Contains(line, "copying") || strings.Contains(line, "component=snapshot") || strings.Contains(line, "component=recopy") {
			h.t.Errorf("log line: %s", line)
		}
	}
}

// ghostApply is what gh-ost applies to its ghost table for a change of
// orders it read in the binlog: REPLACE INTO for an insert or update,
// DELETE for a delete, both for a key change.
func ghostApply(db string) func(c change) []string {
	return func(c change) []string {
		ghost := db + "._orders_gho"
		switch {
		case c.deleted:
			return []string{fmt.Sprintf("DELETE FROM %s WHERE id = %d", ghost, c.id)}
		case c.keyChanged:
			return []string{fmt.Sprintf("DELETE FROM %s WHERE id = %d", ghost, c.from),
				fmt.Sprintf("REPLACE INTO %s (id, amount, note) SELECT id, amount, note FROM %s.orders WHERE id = %d", ghost, db, c.id)}
		default:
			return []string{fmt.Sprintf("REPLACE INTO %s (id, amount, note) VALUES (%d, %d, '%s')", ghost, c.id, c.amount, c.note)}
		}
	}
}

// copyChunks fills table from orders as the tools do, walking the
// primary key in chunks up to orders' largest id when it starts.
func (h *harness) copyChunks(db, into, verb string, chunk int) int {
	h.t.Helper()
	var maxID int
	if err := h.my.QueryRow("SELECT MAX(id) FROM " + db + ".orders").Scan(&maxID); err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for lo := 0; lo < maxID; n++ {
		var hi sql.NullInt64
		q := fmt.Sprintf("SELECT MAX(id) FROM (SELECT id FROM %s.orders WHERE id > %d AND id <= %d ORDER BY id LIMIT %d) c", db, lo, maxID, chunk)
		if err := h.my.QueryRow(q).Scan(&hi); err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
		if !hi.Valid {
			break
		}
		h.exec(fmt.Sprintf("%s INTO %s.%s (id, amount, note) SELECT id, amount, note FROM %s.orders FORCE INDEX (PRIMARY) WHERE id > %d AND id <= %d LOCK IN SHARE MODE",
			verb, db, into, db, lo, hi.Int64))
		lo = int(hi.Int64)
	}
	return n
}

// sameInMySQL fails the test when two MySQL tables' rows differ: the
// test's stand-in for a tool has kept the new table equal to the old.
func (h *harness) sameInMySQL(db, a, b string) {
	h.t.Helper()
	cols := []string{"id", "amount", "note"}
	h.compareRows("MySQL's "+b+" against "+a, cols, h.mysqlRows(db, a, cols), h.mysqlRows(db, b, cols))
}

// TestMigrationGhostCutOver runs gh-ost's steps by hand on orders, the
// only table included: its changelog table, the ghost table created LIKE
// orders and altered (ADD COLUMN), filled by chunked INSERT ... SELECT
// while a writer changes orders and applies each change to the ghost as
// gh-ost does (REPLACE INTO, DELETE), the cut-over sentry _orders_del
// created and dropped, the atomic RENAME, writes after it, the changelog
// dropped and _orders_del kept. ClickHouse follows the ghost and ends with
// orders equal to MySQL, the new column's values in it, _orders_del as
// MySQL keeps it, and nothing copied again.
func TestMigrationGhostCutOver(t *testing.T) {
	h, a := migrationHarness(t, 300)
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)

	h.exec(
		"CREATE TABLE "+a+"._orders_ghc (id BIGINT AUTO_INCREMENT PRIMARY KEY, last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, hint VARCHAR(64) NOT NULL, value TEXT NOT NULL, UNIQUE KEY hint_uidx (hint))",
		"INSERT INTO "+a+"._orders_ghc (id, hint, value) VALUES (2, 'state', 'GhostTableMigrated')",
		"create /* gh-ost */ table `"+a+"`.`_orders_gho` like `"+a+"`.`orders`",
		"alter /* gh-ost */ table `"+a+"`.`_orders_gho` ADD COLUMN status INT NOT NULL DEFAULT 5",
	)
	w := h.writeOrders(a, 1, 300, ghostApply(a))
	w.waitWrites(t, 20)
	chunks := h.copyChunks(a, "_orders_gho", "insert /* gh-ost */ ignore", 40)
	h.exec("INSERT INTO " + a + "._orders_ghc (id, hint, value) VALUES (1, 'heartbeat', NOW()) ON DUPLICATE KEY UPDATE value = NOW()")
	w.waitWrites(t, w.writes.Load()+20)
	w.finish(t)
	h.sameInMySQL(a, "orders", "_orders_gho")

	h.exec(
		"create /* gh-ost */ table `"+a+"`.`_orders_del` (id int auto_increment primary key) engine=InnoDB comment='ghost-cut-over-sentry'",
		"drop /* gh-ost */ table if exists `"+a+"`.`_orders_del`",
		"rename /* gh-ost */ table `"+a+"`.`orders` to `"+a+"`.`_orders_del`, `"+a+"`.`_orders_gho` to `"+a+"`.`orders`",
		"UPDATE "+a+".orders SET status = id % 7 WHERE id % 3 = 0",
		"INSERT INTO "+a+".orders (id, amount, note, status) VALUES (999999, 1, 'after', 9)",
		"drop /* gh-ost */ table if exists `"+a+"`.`_orders_ghc`",
	)
	h.waitCaughtUp(run, 60*time.Second)
	t.Logf("%d chunks copied, %d concurrent writes", chunks, w.writes.Load())
	h.assertMigrated(a, run.logs.String(), "_orders_del", "orders")
	h.assertEqual(a, "_orders_del", []string{"id", "amount", "note"})
	if n := counterOf(t, run.r.m.MigrationTables.WithLabelValues(metrics.ToolGhost)); n != 1 {
		t.Errorf("binlog2ch_migration_tables_followed_total{tool=gh-ost} = %v, want 1", n)
	}
	for _, want := range []string{"following an online schema migration", "online schema migration cut over"} {
		if !strings.Contains(run.logs.String(), want) {
			t.Errorf("no %q in the logs", want)
		}
	}
}

// ptoscTriggers are pt-online-schema-change's triggers on orders, as its
// create_triggers writes them, keeping newTable current.
func ptoscTriggers(db, newTable string) []string {
	prefix := db + "`.`pt_osc_" + db + "_orders"
	n := "`" + db + "`.`" + newTable + "`"
	o := "`" + db + "`.`orders`"
	return []string{
		"CREATE TRIGGER `" + prefix + "_del` AFTER DELETE ON " + o + " FOR EACH ROW BEGIN DECLARE CONTINUE HANDLER FOR 1146 begin end; DELETE IGNORE FROM " + n + " WHERE " + n + ".`id` <=> OLD.`id`; END",
		"CREATE TRIGGER `" + prefix + "_upd` AFTER UPDATE ON " + o + " FOR EACH ROW BEGIN DECLARE CONTINUE HANDLER FOR 1146 begin end; DELETE IGNORE FROM " + n + " WHERE !(OLD.`id` <=> NEW.`id`) AND " + n + ".`id` <=> OLD.`id`; REPLACE INTO " + n + " (`id`, `amount`, `note`) VALUES (NEW.`id`, NEW.`amount`, NEW.`note`); END",
		"CREATE TRIGGER `" + prefix + "_ins` AFTER INSERT ON " + o + " FOR EACH ROW BEGIN DECLARE CONTINUE HANDLER FOR 1146 begin end; REPLACE INTO " + n + " (`id`, `amount`, `note`) VALUES (NEW.`id`, NEW.`amount`, NEW.`note`);END",
	}
}

// TestMigrationPTOSCByHand runs pt-online-schema-change's steps by hand
// on orders, the only table included: _orders_new created LIKE orders
// and altered, its triggers on orders, chunked INSERT LOW_PRIORITY IGNORE
// ... SELECT while a writer changes orders (the triggers carry each change
// over), the RENAME pair, _orders_old dropped, the triggers dropped.
// ClickHouse ends with orders equal to MySQL, the new column's values in
// it, no _orders_old or _orders_new, and nothing copied again.
func TestMigrationPTOSCByHand(t *testing.T) {
	h, a := migrationHarness(t, 300)
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)

	h.exec(
		"CREATE TABLE `"+a+"`.`_orders_new` LIKE `"+a+"`.`orders`",
		"ALTER TABLE `"+a+"`.`_orders_new` ADD COLUMN status INT NOT NULL DEFAULT 5",
	)
	h.exec(ptoscTriggers(a, "_orders_new")...)
	w := h.writeOrders(a, 2, 300, nil)
	w.waitWrites(t, 20)
	chunks := h.copyChunks(a, "_orders_new", "INSERT LOW_PRIORITY IGNORE", 40)
	w.waitWrites(t, w.writes.Load()+20)
	w.finish(t)
	h.sameInMySQL(a, "orders", "_orders_new")
	h.exec(
		"RENAME TABLE `"+a+"`.`orders` TO `"+a+"`.`_orders_old`, `"+a+"`.`_orders_new` TO `"+a+"`.`orders`",
		"DROP TABLE IF EXISTS `"+a+"`.`_orders_old`",
		"DROP TRIGGER IF EXISTS `"+a+"`.`pt_osc_"+a+"_orders_del`",
		"DROP TRIGGER IF EXISTS `"+a+"`.`pt_osc_"+a+"_orders_upd`",
		"DROP TRIGGER IF EXISTS `"+a+"`.`pt_osc_"+a+"_orders_ins`",
		"UPDATE "+a+".orders SET status = id % 7 WHERE id % 3 = 0",
	)
	h.waitCaughtUp(run, 60*time.Second)
	t.Logf("%d chunks copied, %d concurrent writes", chunks, w.writes.Load())
	h.assertMigrated(a, run.logs.String(), "orders")
	if n := counterOf(t, run.r.m.MigrationTables.WithLabelValues(metrics.ToolPTOSC)); n != 1 {
		t.Errorf("binlog2ch_migration_tables_followed_total{tool=pt-osc} = %v, want 1", n)
	}
}

// TestMigrationPTOSC runs the real pt-online-schema-change (Debian's
// percona-toolkit) on orders, the only table included: ADD COLUMN with
// --execute, in small chunks, while a goroutine writes to orders.
// ClickHouse ends with orders equal to MySQL, the new column's values in
// it, and nothing copied again.
func TestMigrationPTOSC(t *testing.T) {
	tool, err := exec.LookPath("pt-online-schema-change")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pt-online-schema-change is not installed; `make deps` installs it (Debian package percona-toolkit), and CI runs this test")
		}
		t.Skip("pt-online-schema-change is not installed (Debian package percona-toolkit; `make deps` installs it)")
	}
	h, a := migrationHarness(t, 2000)
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	host, port, _ := strings.Cut(h.srv.MySQL.Addr(), ":")
	w := h.writeOrders(a, 3, 2000, nil)
	w.waitWrites(t, 20)
	dsn := fmt.Sprintf("h=%s,P=%s,u=%s,D=%s,t=orders", host, port, h.srv.MySQL.User, a)
	if h.srv.MySQL.Password != "" {
		dsn += ",p=" + h.srv.MySQL.Password
	}
	cmd := exec.Command(tool, "--alter", "ADD COLUMN status INT NOT NULL DEFAULT 5", "--execute",
		"--chunk-size", "100", "--recursion-method", "none", "--no-check-replication-filters", "--progress", "iterations,1000", dsn)
	out, err := cmd.CombinedOutput()
	writes := w.writes.Load()
	w.finish(t)
	if err != nil {
		t.Fatalf("pt-online-schema-change: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Successfully altered") {
		t.Fatalf("pt-online-schema-change did not say it altered the table:\n%s", out)
	}
	if writes == 0 {
		t.Fatalf("no write to orders while pt-online-schema-change ran:\n%s", out)
	}
	h.exec("UPDATE " + a + ".orders SET status = id % 7 WHERE id % 3 = 0")
	h.waitCaughtUp(run, 60*time.Second)
	t.Logf("%d concurrent writes while pt-online-schema-change ran, %d in all", writes, w.writes.Load())
	h.assertMigrated(a, run.logs.String(), "orders")
	if n := counterOf(t, run.r.m.MigrationTables.WithLabelValues(metrics.ToolPTOSC)); n != 1 {
		t.Errorf("binlog2ch_migration_tables_followed_total{tool=pt-osc} = %v, want 1\npt-online-schema-change said:\n%s", n, out)
	}
}

// envPauseAtCutOver=T makes a child's binlog reader stop for good when
// the router, acting on a RENAME, comes to the effect on migration table
// T: the cut-over's first half (orders to _orders_del) is applied, its
// second (T to orders) not.
const envPauseAtCutOver = "BINLOG2CH_TEST_PAUSE_AT_CUTOVER"

// TestFaultMigrationCutOverKilled kills the daemon (a child process)
// between the two halves of gh-ost's cut-over: after orders TO
// _orders_del is applied in ClickHouse, before _orders_gho TO orders is.
// Restarted, it ends with orders equal to MySQL.
func TestFaultMigrationCutOverKilled(t *testing.T) {
	h, a := migrationHarness(t, 200)
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath, envPauseAtCutOver+"=_orders_gho")
	h.waitCaughtUpProcess(d, logPath, 30*time.Second)
	h.exec(
		"create /* gh-ost */ table `"+a+"`.`_orders_gho` like `"+a+"`.`orders`",
		"alter /* gh-ost */ table `"+a+"`.`_orders_gho` ADD COLUMN status INT NOT NULL DEFAULT 5",
	)
	w := h.writeOrders(a, 4, 200, ghostApply(a))
	w.waitWrites(t, 20)
	h.copyChunks(a, "_orders_gho", "insert /* gh-ost */ ignore", 50)
	w.waitWrites(t, w.writes.Load()+20)
	w.finish(t)
	h.exec(
		"create /* gh-ost */ table `"+a+"`.`_orders_del` (id int auto_increment primary key) engine=InnoDB comment='ghost-cut-over-sentry'",
		"drop /* gh-ost */ table if exists `"+a+"`.`_orders_del`",
		"rename /* gh-ost */ table `"+a+"`.`orders` to `"+a+"`.`_orders_del`, `"+a+"`.`_orders_gho` to `"+a+"`.`orders`",
		"UPDATE "+a+".orders SET status = id % 7 WHERE id % 3 = 0",
	)
	waitLog(t, logPath, "test pause at the cut-over", 60*time.Second)
	// The first half is done in ClickHouse once its writer renamed the
	// table; the second was not handed on.
	deadline := time.Now().Add(60 * time.Second)
	for !slices.Equal(h.chTables(a), []string{"_orders_del", "_orders_gho"}) {
		if time.Now().After(deadline) {
			t.Fatalf("ClickHouse tables %v, want the cut-over's first half done: [_orders_del _orders_gho]", h.chTables(a))
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.killAndRestart(d, logPath)
	data, _ := os.ReadFile(logPath)
	restarted := string(data)[strings.Index(string(data), "test pause at the cut-over"):]
	h.assertMigrated(a, restarted, "_orders_del", "orders")
	h.assertEqual(a, "_orders_del", []string{"id", "amount", "note"})
	if t.Failed() {
		t.Logf("daemon log (tail):\n%s", tail(string(data), 6000))
	}
}
