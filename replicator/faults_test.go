package replicator

// The fault-injection suite: every test named TestFault* (`make
// test-faults` runs just them; `make test` runs them with the rest). Each
// is bounded by its own timeouts, which fail it with what was awaited.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
)

// VerifyResult is what the fault tests need of a verify.Report.
type VerifyResult struct {
	OK     bool
	Text   string   // the report as `binlog2ch verify` prints it
	Tables []string // the tables compared
}

// VerifyForTest runs verify.Run; faults_verify_test.go sets it (verify
// imports this package, so these internal tests cannot import it).
// Patterns limit it as verify's -tables does (none: every replicated table).
var VerifyForTest func(ctx context.Context, cfg *config.Config, patterns []string) (VerifyResult, error)

// verifyEqual runs `binlog2ch verify` over the harness's config and fails
// the test unless every table matches and each of want was compared (a
// verify over no tables proves nothing).
func (h *harness) verifyEqual(want ...string) {
	h.t.Helper()
	h.verifyMatching(nil, want...)
}

// verifyMatching is verifyEqual over the tables patterns match, as verify
// -tables takes them.
func (h *harness) verifyMatching(patterns []string, want ...string) {
	h.t.Helper()
	if VerifyForTest == nil {
		h.t.Fatal("the verify hook is not set (faults_verify_test.go)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := VerifyForTest(ctx, h.cfg, patterns)
	if err != nil {
		h.t.Fatalf("verify: %v", err)
	}
	compared := map[string]bool{}
	for _, t := range res.Tables {
		compared[t] = true
	}
	for _, t := range want {
		if !compared[t] {
			h.t.Errorf("verify did not compare table %s:\n%s", t, res.Text)
		}
	}
	if !res.OK {
		h.t.Errorf("verify found differences:\n%s", res.Text)
	}
}

// chCounts is a ClickHouse table's row count without FINAL (every version
// written, retried inserts included) and with FINAL and _is_deleted = 0.
func (h *harness) chCounts(db, table string) (raw, final uint64) {
	h.t.Helper()
	q := fmt.Sprintf("SELECT (SELECT count() FROM `%s`.`%s`), (SELECT count() FROM `%s`.`%s` FINAL WHERE _is_deleted = 0)", db, table, db, table)
	if err := h.ch.QueryRow(context.Background(), q).Scan(&raw, &final); err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	return raw, final
}

// faultOutage is how long TestFaultClickHouseDown keeps ClickHouse down:
// 30 s, or BINLOG2CH_FAULT_OUTAGE (a Go duration) to try others.
func faultOutage(t *testing.T) time.Duration {
	if s := os.Getenv("BINLOG2CH_FAULT_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("BINLOG2CH_FAULT_OUTAGE: %v", err)
		}
		return d
	}
	return 30 * time.Second
}

// workload writes mixed transactions to db.k1 and db.k2 (inserts,
// updates, key changes, deletes) until stopped, with DDL along the way:
// an ADD COLUMN ... AFTER, a MODIFY COLUMN, and a table k3 created,
// written and dropped again (so a replay meets rows of a dropped table).
type workload struct {
	h     *harness
	db    string
	stop  atomic.Bool
	wg    sync.WaitGroup
	err   error
	iters atomic.Int64
	ddl   atomic.Int32 // DDL statements done
	pause time.Duration
}

// workloadDDL is the DDL the workload runs, by iteration.
var workloadDDL = map[int64][]string{
	60:  {"ALTER TABLE DB.k1 ADD COLUMN added INT NOT NULL DEFAULT 42 AFTER id"},
	120: {"CREATE TABLE DB.k3 (id INT PRIMARY KEY, s VARCHAR(20))", "INSERT INTO DB.k3 VALUES (1, 'one'), (2, 'two')"},
	180: {"ALTER TABLE DB.k2 MODIFY COLUMN amount DECIMAL(14,3)"},
	240: {"UPDATE DB.k3 SET s = 'upd'", "DROP TABLE DB.k3"},
}

func (h *harness) startWorkload(db string, seed uint64, pause time.Duration) *workload {
	h.t.Helper()
	h.exec(
		"CREATE TABLE "+db+".k1 (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40))",
		"CREATE TABLE "+db+".k2 (id BIGINT UNSIGNED PRIMARY KEY, amount DECIMAL(12,2), at DATETIME(3))",
	)
	w := &workload{h: h, db: db, pause: pause}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.err = w.run(seed)
	}()
	return w
}

func (w *workload) run(seed uint64) error {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(seed, 2))
	conn, err := w.h.my.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	a := w.db
	next := 0
	for i := int64(0); !w.stop.Load(); i++ {
		stmts := []string{"BEGIN"}
		for j := 0; j < 1+rnd.IntN(20); j++ {
			id := rnd.IntN(next + 1)
			switch p := rnd.IntN(10); {
			case p < 5:
				next++
				stmts = append(stmts, fmt.Sprintf("INSERT INTO %s.k1 (id, v, s) VALUES (%d, %d, 'ins %d')", a, next, rnd.IntN(1000), i))
				stmts = append(stmts, fmt.Sprintf("INSERT INTO %s.k2 VALUES (%d, %d.%02d, NOW(3))", a, next, rnd.IntN(100000), rnd.IntN(100)))
			case p < 7:
				stmts = append(stmts, fmt.Sprintf("UPDATE %s.k1 SET v = v + 1, s = 'upd %d' WHERE id = %d", a, i, id))
			case p < 8:
				stmts = append(stmts, fmt.Sprintf("UPDATE IGNORE %s.k1 SET id = id + 1000000 WHERE id = %d", a, id))
			default:
				stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.k2 WHERE id = %d", a, id))
			}
		}
		stmts = append(stmts, "COMMIT")
		for _, q := range workloadDDL[i] {
			stmts = append(stmts, strings.ReplaceAll(q, "DB.", a+"."))
		}
		for _, q := range stmts {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		w.ddl.Add(int32(len(workloadDDL[i])))
		w.iters.Store(i + 1)
		time.Sleep(w.pause)
	}
	return nil
}

// finish stops the workload and fails the test if a statement failed or
// it ended before all of its DDL ran (the test would then not test it).
func (w *workload) finish() {
	w.h.t.Helper()
	w.stop.Store(true)
	w.wg.Wait()
	if w.err != nil {
		w.h.t.Fatal(w.err)
	}
	total := 0
	for _, q := range workloadDDL {
		total += len(q)
	}
	if int(w.ddl.Load()) != total {
		w.h.t.Fatalf("the workload ran %d iterations, %d of its %d DDL statements: run it longer", w.iters.Load(), w.ddl.Load(), total)
	}
}

// waitIters waits until the workload has run n iterations.
func (w *workload) waitIters(n int64, timeout time.Duration) {
	w.h.t.Helper()
	deadline := time.Now().Add(timeout)
	for w.iters.Load() < n {
		if w.err != nil || time.Now().After(deadline) {
			w.h.t.Fatalf("workload at %d iterations, want %d within %s (error: %v)", w.iters.Load(), n, timeout, w.err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertWorkload checks the workload's tables: equal by verify and by
// the row-by-row dump, and k3 gone from ClickHouse as from MySQL.
func (h *harness) assertWorkload(db string) {
	h.t.Helper()
	h.verifyEqual("k1", "k2")
	h.assertEqual(db, "k1", []string{"id", "added", "v", "s"})
	h.assertEqual(db, "k2", []string{"id", "amount", "at"})
	if h.chTableExists(db, "k3") {
		h.t.Errorf("%s.k3 still exists in ClickHouse after DROP TABLE", db)
	}
	for _, table := range []string{"k1", "k2"} {
		raw, final := h.chCounts(db, table)
		var my uint64
		if err := h.my.QueryRow("SELECT COUNT(*) FROM " + db + "." + table).Scan(&my); err != nil {
			h.t.Fatal(err)
		}
		h.t.Logf("%s: MySQL %d rows; ClickHouse %d row versions, %d after FINAL and _is_deleted = 0", table, my, raw, final)
	}
}

// TestFaultClickHouseDown kills ClickHouse for faultOutage (30 s) while a
// mixed workload streams in, then starts it again: the lag grows through
// the outage and /readyz says not ready; afterwards the daemon catches up
// by itself, the lag returns near 0, and verify finds no row lost and none
// duplicated after FINAL (inserts cut off mid-way are retried with the
// same versions).
func TestFaultClickHouseDown(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.ClickHouse.External {
		t.Skip("needs a private ClickHouse it can kill")
	}
	a := h.dbs[0]
	run := h.start()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	w := h.startWorkload(a, 7, 2*time.Millisecond)
	defer w.finish()
	w.waitIters(80, 60*time.Second) // mid-stream, past the first DDL
	outage := faultOutage(t)
	killed := time.Now()
	if err := h.srv.ClickHouse.Kill(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted { // later tests need it
			_ = h.srv.ClickHouse.Restart(context.Background())
		}
	}()
	lag1 := scrape(t, addr, "binlog2ch_lag_seconds")
	time.Sleep(outage) // the outage itself: lag must grow as long as it lasts
	// Nothing committed after the kill can be in ClickHouse, so the lag is
	// at least the time since (less a second: binlog timestamps are in
	// whole seconds), however slowly the daemon ran.
	down := time.Since(killed).Seconds()
	lag2 := scrape(t, addr, "binlog2ch_lag_seconds")
	if lag2 < down-1 {
		t.Errorf("lag went from %.1f s to %.1f s over %.1f s of a ClickHouse outage; want it to grow with the outage", lag1, lag2, down)
	}
	if code, st := probe(t, addr, "/readyz"); code != http.StatusServiceUnavailable || st.Ready {
		t.Errorf("/readyz with ClickHouse down: %d %+v", code, st)
	}
	if code, _ := probe(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with ClickHouse down: %d (the daemon itself is fine)", code)
	}
	itersDown := w.iters.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.srv.ClickHouse.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	up := time.Now()
	w.waitIters(max(300, itersDown+50), 60*time.Second)
	w.finish()
	h.waitCaughtUp(run, 2*time.Minute)
	waitFor(t, 30*time.Second, "lag back near 0", func() bool { return scrape(t, addr, "binlog2ch_lag_seconds") < 3 })
	waitFor(t, 30*time.Second, "ready again", func() bool { code, _ := probe(t, addr, "/readyz"); return code == http.StatusOK })
	t.Logf("outage %s (lag %.1f s at its end); caught up %s after ClickHouse was back; %d transactions in all",
		outage, lag2, time.Since(up).Round(time.Millisecond), w.iters.Load())
	if !strings.Contains(run.logs.String(), "failed; retrying") {
		t.Error("no retry logged during the outage")
	}
	h.assertWorkload(a)
	if err := run.stop(t); err != nil {
		t.Errorf("clean stop after the outage: %v", err)
	}
}

// stoppedWithData runs the daemon until db.t (id, name, qty, note) holds
// rows 1..n in ClickHouse, then stops it cleanly.
func (h *harness) stoppedWithData(db string, n int) {
	h.t.Helper()
	run := h.start()
	h.exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT, note VARCHAR(20))")
	for i := 1; i <= n; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d, 'name %d', %d, 'note %d')", db, i, i, i*10, i))
	}
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.stop(h.t); err != nil {
		h.t.Fatal(err)
	}
}

// runExpectingError runs a replicator that must stop by itself, and
// returns its error and logs.
func (h *harness) runExpectingError(timeout time.Duration) (logs string, err error) {
	h.t.Helper()
	buf := &syncBuffer{}
	r := h.newReplicator(buf)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = r.Run(ctx)
	if ctx.Err() != nil {
		h.t.Fatalf("the daemon did not stop by itself within %s (error %v); logs:\n%s", timeout, err, tail(buf.String(), 4000))
	}
	return buf.String(), err
}

// TestFaultCorruptCheckpoint: a truncated, empty, garbled or impossible
// checkpoint stops the daemon at start with an error that says what to do;
// the file is left as it was, no snapshot starts (no silent restart from
// scratch), and once the checkpoint is restored, replication continues
// with nothing lost.
func TestFaultCorruptCheckpoint(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.stoppedWithData(a, 5)
	path := filepath.Join(h.cfg.StateDir, state.CheckpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Written while the daemon is down: must arrive once it resumes.
	h.exec("INSERT INTO "+a+".t VALUES (6, 'six', 60, NULL)", "UPDATE "+a+".t SET qty = -1 WHERE id = 2", "DELETE FROM "+a+".t WHERE id = 3")
	for name, content := range map[string][]byte{
		"truncated":     good[:len(good)/2],
		"empty":         {},
		"garbage":       {0, 0x9f, 'x', 0xff, '\n'},
		"zero position": []byte(strings.Replace(string(good), `"pos": `, `"pos": 0, "x": `, 1)),
		"bad file name": []byte(strings.Replace(string(good), `"binlog.`, `"binlog`, 1)),
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		logs, err := h.runExpectingError(30 * time.Second)
		if err == nil || !strings.Contains(err.Error(), "is corrupt") || !strings.Contains(err.Error(), "restore it from a backup") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s checkpoint: got %v; want an error naming %s as corrupt and saying how to recover", name, err, path)
		}
		if after, _ := os.ReadFile(path); string(after) != string(content) {
			t.Errorf("%s checkpoint: the daemon rewrote it (now %q)", name, after)
		}
		if _, err := os.Stat(filepath.Join(h.cfg.StateDir, snapshot.InitialFile)); err == nil || strings.Contains(logs, "initial snapshot") {
			t.Errorf("%s checkpoint: the daemon started over with an initial snapshot", name)
		}
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}

// TestFaultBinlogPurged: the binlog after the checkpoint was purged while
// the daemon was stopped. It stops at start with an error that says to
// re-snapshot and how, leaving ClickHouse as it was; following those
// steps ends with ClickHouse equal to MySQL, rows deleted in the lost
// binlog included.
func TestFaultBinlogPurged(t *testing.T) {
	h, _ := newPrivateHarness(t) // it purges binlogs, which other packages' tests read
	if h.srv.MySQL.External {
		t.Skip("purges binary logs: needs a private MariaDB")
	}
	a := h.dbs[0]
	h.stoppedWithData(a, 5)
	h.exec("INSERT INTO "+a+".t VALUES (6, 'six', 60, NULL)", "DELETE FROM "+a+".t WHERE id = 1", "UPDATE "+a+".t SET note = 'lost' WHERE id = 2")
	h.purgeCheckpointBinlog()
	before := h.chDump(a, "t", false)
	_, err := h.runExpectingError(60 * time.Second)
	for _, want := range []string{"cannot send the binlog from", "purged", "re-snapshot", "drop its tables in ClickHouse", state.CheckpointFile, snapshot.InitialFile} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("purged binlog: got %v; want an error saying %q", err, want)
		}
	}
	t.Logf("error: %v", err)
	if after := h.chDump(a, "t", false); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("ClickHouse changed after the failed start:\nbefore %v\nafter %v", before, after)
	}
	// The recovery the error describes.
	if err := h.ch.Exec(context.Background(), "DROP TABLE "+a+".t"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{state.CheckpointFile, snapshot.InitialFile} {
		if err := os.Remove(filepath.Join(h.cfg.StateDir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	run := h.start()
	h.exec("INSERT INTO " + a + ".t VALUES (7, 'seven', 70, 'after')")
	h.waitCaughtUp(run, 60*time.Second)
	h.verifyEqual("t")
}

// purgeCheckpointBinlog purges the binlog file the checkpoint is in.
func (h *harness) purgeCheckpointBinlog() {
	t := h.t
	h.exec("FLUSH BINARY LOGS")
	r := h.newReplicator(io.Discard)
	cur, err := r.currentPosition(context.Background())
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	// MariaDB keeps (with a warning) a file InnoDB's crash recovery may
	// still need, until its binlog checkpoint passes: purge until gone.
	waitFor(t, 30*time.Second, "binlog "+cp.File+" purged", func() bool {
		h.exec("PURGE BINARY LOGS TO '" + cur.File + "'")
		return !h.binlogListed(cp.File)
	})
}

// TestFaultBinlogPurgedFullSyncCheckpoint: the other recovery the error
// names, `fullsync -recreate -checkpoint`: every table copied afresh into
// emptied tables and the checkpoint moved to the copy's position; run
// follows from there, ending equal (the row deleted in the lost binlog
// included).
func TestFaultBinlogPurgedFullSyncCheckpoint(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.MySQL.External {
		t.Skip("purges binary logs: needs a private MariaDB")
	}
	a := h.dbs[0]
	h.stoppedWithData(a, 5)
	h.exec("INSERT INTO "+a+".t VALUES (6, 'six', 60, NULL)", "DELETE FROM "+a+".t WHERE id = 1", "UPDATE "+a+".t SET note = 'lost' WHERE id = 2")
	h.purgeCheckpointBinlog()
	r := h.newReplicator(io.Discard)
	defer r.Close()
	if _, err := r.FullSync(context.Background(), FullSyncOptions{SetCheckpoint: true}); err == nil || !strings.Contains(err.Error(), "-recreate") {
		t.Fatalf("-checkpoint without -recreate: got %v", err)
	}
	if _, err := r.FullSync(context.Background(), FullSyncOptions{Recreate: true, SetCheckpoint: true}); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	h.exec("INSERT INTO "+a+".t VALUES (7, 'seven', 70, 'after')", "DELETE FROM "+a+".t WHERE id = 3")
	h.waitCaughtUp(run, 60*time.Second)
	h.verifyEqual("t")
}

// TestFaultClickHouseSchemaChangedByHand: a ClickHouse table changed by
// hand while the daemon was stopped. A column type changed is changed back
// at the restart (logged), its values kept. A column dropped, which
// binlog2ch had put there, stops the restart with the table, the column
// and the repair: adding it again would leave the older rows without
// their values. The repair the error names makes the sides equal.
func TestFaultClickHouseSchemaChangedByHand(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.stoppedWithData(a, 5)
	if err := h.ch.Exec(context.Background(), "ALTER TABLE "+a+".t MODIFY COLUMN qty Nullable(String)"); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO "+a+".t VALUES (6, 'six', 60, 'note 6')", "UPDATE "+a+".t SET qty = qty + 1 WHERE id = 1")
	run := h.start()
	h.waitCaughtUp(run, 30*time.Second)
	var typ string
	if err := h.ch.QueryRow(context.Background(), "SELECT type FROM system.columns WHERE database = ? AND table = 't' AND name = 'qty'", a).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "Nullable(Int32)" {
		t.Fatalf("qty is %s after the restart; want Nullable(Int32) again", typ)
	}
	if logs := run.logs.String(); !strings.Contains(logs, "ClickHouse column type differs from the mapping; changing it") {
		t.Errorf("the repair was not logged:\n%s", tail(logs, 3000))
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	h.verifyEqual("t")

	if err := h.ch.Exec(context.Background(), "ALTER TABLE "+a+".t DROP COLUMN note"); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO " + a + ".t VALUES (7, 'seven', 70, 'note 7')")
	_, err := h.runExpectingError(60 * time.Second)
	wantError(t, err, "ClickHouse table "+a+".t lacks column note", "changed outside binlog2ch", "fullsync -recreate -tables "+a+".t")
	t.Logf("error: %v", err)
	var logs syncBuffer
	if _, err := h.fullSync(h.cfg, &logs, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "t"}}, Recreate: true}); err != nil {
		t.Fatalf("fullsync -recreate: %v\n%s", err, logs.String())
	}
	run = h.start()
	h.exec("UPDATE " + a + ".t SET note = 'later' WHERE id = 4")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}

// TestFaultClickHouseChangedWhileRunning: a ClickHouse table dropped, a
// column dropped, a column retyped while the daemon writes to it stop it
// at the next insert with the table, what changed and the repair; a
// restart does not create the dropped table or column again (it stops
// the same way); the repair makes the sides equal.
func TestFaultClickHouseChangedWhileRunning(t *testing.T) {
	for _, c := range []struct{ name, change, want, restart string }{
		{"table dropped", "DROP TABLE %s.t", "no longer exists (dropped while binlog2ch wrote to it)", "no longer exists, though binlog2ch created it"},
		{"column dropped", "ALTER TABLE %s.t DROP COLUMN note", "lacks column note", "lacks column note, which binlog2ch put there"},
		{"column retyped", "ALTER TABLE %s.t MODIFY COLUMN qty Nullable(String)", "has column qty as Nullable(String) where binlog2ch writes Nullable(Int32)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 1, "")
			a := h.dbs[0]
			run := h.start()
			h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT, note VARCHAR(20))")
			h.exec("INSERT INTO " + a + ".t VALUES (1, 'one', 10, 'n1'), (2, 'two', 20, 'n2')")
			h.waitCaughtUp(run, 30*time.Second)
			if err := h.ch.Exec(context.Background(), strings.ReplaceAll(c.change, "%s", a)); err != nil {
				t.Fatal(err)
			}
			h.exec("INSERT INTO " + a + ".t VALUES (3, 'three', 30, 'n3')")
			err := run.stopped(t, 60*time.Second, "the daemon did not stop")
			wantError(t, err, "ClickHouse table "+a+".t "+c.want, "fullsync -recreate -tables "+a+".t")
			t.Logf("error: %v", err)
			if c.restart != "" {
				_, err := h.runExpectingError(60 * time.Second)
				if err == nil || !strings.Contains(err.Error(), c.restart) {
					t.Fatalf("restarted: got %v; want an error with %q", err, c.restart)
				}
			}
			var logs syncBuffer
			if _, err := h.fullSync(h.cfg, &logs, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "t"}}, Recreate: true}); err != nil {
				t.Fatalf("fullsync -recreate: %v\n%s", err, logs.String())
			}
			run = h.start()
			h.exec("UPDATE " + a + ".t SET note = 'later' WHERE id = 1")
			h.waitCaughtUp(run, 30*time.Second)
			h.verifyEqual("t")
		})
	}
}

// TestFaultRowsForDroppedTable: the binlog after the checkpoint holds rows
// of tables dropped since (one dropped for good, one dropped and created
// again with other columns). Replaying it does not stop, and each ends as
// in MySQL.
func TestFaultRowsForDroppedTable(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec(
		"CREATE TABLE "+a+".gone (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO "+a+".gone VALUES (1, 'a'), (2, 'b')",
		"UPDATE "+a+".gone SET v = 'c' WHERE id = 1",
		"CREATE TABLE "+a+".again (id INT PRIMARY KEY, x INT, y VARCHAR(10))",
		"INSERT INTO "+a+".again VALUES (1, 1, 'one'), (2, 2, 'two')",
		"CREATE TABLE "+a+".kept (id INT PRIMARY KEY, v INT)",
		"INSERT INTO "+a+".kept VALUES (1, 1)",
		"DROP TABLE "+a+".gone",
		"DROP TABLE "+a+".again",
		"CREATE TABLE "+a+".again (id BIGINT PRIMARY KEY, z DATE)",
		"INSERT INTO "+a+".again VALUES (10, '2024-01-02')",
		"INSERT INTO "+a+".kept VALUES (2, 2)",
	)
	run := h.start() // only now: every statement above is replayed
	h.waitCaughtUp(run, 30*time.Second)
	if h.chTableExists(a, "gone") {
		t.Errorf("%s.gone exists in ClickHouse after its DROP TABLE was replayed", a)
	}
	h.verifyEqual("again", "kept")
	h.assertEqual(a, "again", []string{"id", "z"})
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestFaultNoReplicationPrivilege: a source user without REPLICATION
// CLIENT is refused at start, one without REPLICATION SLAVE at its first
// binlog read (before an initial snapshot too, not after it), each with an
// error naming the missing privilege and the GRANT; neither retries
// forever.
func TestFaultNoReplicationPrivilege(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.MySQL.External {
		t.Skip("creates users: needs a private MariaDB")
	}
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".p (id INT PRIMARY KEY)")
	user := servertest.Name("b2c_user")
	h.exec(
		"CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON *.* TO '"+user+"'@'%'",
	)
	t.Cleanup(func() { _, _ = h.my.Exec("DROP USER '" + user + "'@'%'") })
	cfg := *h.cfg
	cfg.MySQL.User = user
	cfg.MySQL.Password = config.Secret("pw")
	_, err := New(context.Background(), &cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "REPLICATION CLIENT") || !strings.Contains(err.Error(), "GRANT") {
		t.Fatalf("a user without REPLICATION CLIENT: got %v; want an error at start naming the privilege", err)
	}
	t.Logf("without REPLICATION CLIENT: %v", err)

	h.exec("GRANT REPLICATION CLIENT ON *.* TO '" + user + "'@'%'")
	for _, snapFirst := range []bool{false, true} {
		if snapFirst { // first start: the snapshot would come first
			_ = os.Remove(filepath.Join(cfg.StateDir, state.CheckpointFile))
		}
		r, err := New(context.Background(), &cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = r.Run(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		r.Close()
		if timedOut || err == nil || !strings.Contains(err.Error(), "REPLICATION SLAVE") || !strings.Contains(err.Error(), "may not read the binlog") {
			t.Fatalf("a user without REPLICATION SLAVE (snapshot first: %v): got %v (timed out: %v); want an error naming the privilege", snapFirst, err, timedOut)
		}
		if st, _ := snapshot.Load(cfg.StateDir, snapshot.InitialFile); st != nil && len(st.Tables) > 0 {
			t.Errorf("a table was copied before the missing privilege was found: %+v", st.Tables)
		}
		t.Logf("without REPLICATION SLAVE (snapshot first: %v): %v", snapFirst, err)
	}
}

// binlogListed reports whether SHOW BINARY LOGS lists file.
func (h *harness) binlogListed(file string) bool {
	for _, l := range h.binaryLogs() {
		if l.name == file {
			return true
		}
	}
	return false
}

// TestFaultNoPasswordInLogs runs the daemon (a child process, debug
// logging, go-mysql's logs included) with distinctive passwords through a
// start, replication, a ClickHouse outage, a clean stop, and starts that
// fail on a wrong MySQL and a wrong ClickHouse password; no password
// appears anywhere in what it wrote, while each phase's messages do.
func TestFaultNoPasswordInLogs(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.MySQL.External || h.srv.ClickHouse.External {
		t.Skip("creates users and kills ClickHouse: needs private servers")
	}
	a := h.dbs[0]
	user := servertest.Name("b2c_secret")
	const (
		mysqlPassword = "Pw-MySQL-7f3a9c1e-s3cr3t"
		wrongMySQL    = "Pw-Wrong-MySQL-2b8d4e6f"
		wrongCH       = "Pw-Wrong-ClickHouse-9e1c5a7b"
	)
	h.exec(
		"CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+mysqlPassword+"'",
		"GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '"+user+"'@'%'",
	)
	t.Cleanup(func() { _, _ = h.my.Exec("DROP USER '" + user + "'@'%'") })
	orig, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	withAuth := func(myPassword, chPassword string) {
		conf := strings.Replace(string(orig), fmt.Sprintf("user: %q, password: %q, server_id", h.srv.MySQL.User, h.srv.MySQL.Password),
			fmt.Sprintf("user: %q, password: %q, server_id", user, myPassword), 1)
		conf = strings.Replace(conf, fmt.Sprintf("user: %q, password: %q}", h.srv.ClickHouse.User, h.srv.ClickHouse.Password),
			fmt.Sprintf("user: %q, password: %q}", h.srv.ClickHouse.User, chPassword), 1)
		if !strings.Contains(conf, myPassword) || (chPassword != "" && !strings.Contains(conf, chPassword)) {
			t.Fatalf("the passwords did not get into the config:\n%s", conf)
		}
		if err := os.WriteFile(h.path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	exitCode := func(d *daemon, timeout time.Duration) int {
		select {
		case <-d.done:
			return d.cmd.ProcessState.ExitCode()
		case <-time.After(timeout):
			_ = d.cmd.Process.Kill()
			<-d.done
			t.Fatalf("the daemon did not exit within %s", timeout)
			return -1
		}
	}

	withAuth(mysqlPassword, h.srv.ClickHouse.Password)
	d := h.startDaemon(logPath)
	h.exec("CREATE TABLE "+a+".s (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO "+a+".s VALUES (1, 'a')")
	h.waitCaughtUpProcess(d, logPath, 30*time.Second)
	if err := h.srv.ClickHouse.Kill(); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO " + a + ".s VALUES (2, 'b')")
	waitLog(t, logPath, "failed; retrying", 60*time.Second) // its insert failed with the password set
	if err := h.srv.ClickHouse.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitCaughtUpProcess(d, logPath, 60*time.Second)
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(d, 60*time.Second); code != 0 {
		t.Errorf("clean stop: exit code %d", code)
	}

	withAuth(wrongMySQL, h.srv.ClickHouse.Password)
	if code := exitCode(h.startDaemon(logPath), 30*time.Second); code != 1 {
		t.Errorf("wrong MySQL password: exit code %d, want 1", code)
	}
	withAuth(mysqlPassword, wrongCH)
	if code := exitCode(h.startDaemon(logPath), 60*time.Second); code != 1 {
		t.Errorf("wrong ClickHouse password: exit code %d, want 1", code)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logs := string(data)
	// Each phase left its trace, so the logs cover what they should.
	for _, want := range []string{"msg=connected", "failed; retrying", "msg=stopped", "Access denied for user '" + user + "'", "Wrong password for user default"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs lack %q:\n%s", want, tail(logs, 6000))
		}
	}
	for _, pw := range []string{mysqlPassword, wrongMySQL, wrongCH} {
		if strings.Contains(logs, pw) {
			i := strings.Index(logs, pw)
			t.Errorf("password %q in the logs: ...%s...", pw, logs[max(0, i-300):min(len(logs), i+100)])
		}
	}
	t.Logf("%d bytes of logs, no password in them", len(logs))
}

// TestFaultMetricsLoopbackByDefault: without metrics.listen, the daemon
// serves /metrics on 127.0.0.1:9188 only (the example config says the
// same), unreachable from the machine's other addresses; a machine with
// no other address to try fails the test rather than pass it unshown.
func TestFaultMetricsLoopbackByDefault(t *testing.T) {
	conf := "mysql: {addr: \"127.0.0.1:3306\", user: u, password: p, server_id: 1}\nclickhouse: {addr: [\"127.0.0.1:9000\"]}\ntables: {include: [\"db.*\"]}\nstate_dir: /tmp/x\n"
	cfg, err := config.Parse([]byte(conf), "binlog2ch.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics.Listen != "127.0.0.1:9188" {
		t.Fatalf("default metrics.listen is %q, want 127.0.0.1:9188", cfg.Metrics.Listen)
	}
	t.Setenv("MYSQL_PASSWORD", "example")
	ex, err := config.Load("../deploy/binlog2ch.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ex.Metrics.Listen != "127.0.0.1:9188" {
		t.Errorf("the example config listens on %q", ex.Metrics.Listen)
	}

	// The live listener, on the default address.
	h := newHarness(t, 1, "")
	h.cfg.Metrics.Listen = cfg.Metrics.Listen
	run := h.start()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool {
		select {
		case err := <-run.done:
			run.cancel = nil
			t.Fatalf("the daemon stopped: %v (is another process on 127.0.0.1:9188?)", err)
		default:
		}
		addr = run.r.MetricsAddr()
		return addr != ""
	})
	if addr != "127.0.0.1:9188" {
		t.Fatalf("metrics served on %s", addr)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, ia := range ifAddrs {
		ipn, ok := ia.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		tried++
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), "9188"), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("metrics reachable on %s", ipn.IP)
		}
	}
	if tried == 0 {
		// Nothing tried is nothing shown: a listener on every address
		// would pass too.
		t.Fatalf("served on %s, but the machine has no address other than loopback and link-local to try it on (of %v): the test shows nothing here", addr, ifAddrs)
	}
	t.Logf("served on %s; not reachable on the %d other local addresses", addr, tried)
}

// TestCreatedTableLeavesRegistry: a table binlog2ch's list still names
// (another host dropped it with the shared checkpoint, say) that MySQL
// creates again is created in ClickHouse when its CREATE TABLE was read,
// not refused as dropped by hand.
func TestCreatedTableLeavesRegistry(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	stale := fmt.Sprintf(`{"tables": {"%s.t": ["_is_deleted", "_version", "id"]}}`, a)
	if err := os.WriteFile(filepath.Join(h.cfg.StateDir, chtables.RegistryFile), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY)", "INSERT INTO "+a+".t VALUES (1)")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}
