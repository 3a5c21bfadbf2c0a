package replicator

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/router"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// topology is a private MariaDB primary with a GTID replica
// (log_slave_updates), and a harness replicating the primary into the
// shared ClickHouse.
type topology struct {
	h                *harness
	primary, replica *localserver.Server
}

func newTopology(t *testing.T) *topology {
	t.Helper()
	h, primary := newPrivateHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	replica, err := localserver.StartReplica(ctx, primary, localserver.MariaDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Stop() })
	return &topology{h: h, primary: primary, replica: replica}
}

// newPrivateHarness is a harness on a MariaDB of its own (the test may
// kill it or reset its binlog) and the shared ClickHouse.
func newPrivateHarness(t *testing.T) (*harness, *localserver.Server) {
	t.Helper()
	srv := servertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	my, err := localserver.StartMariaDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Stop() })
	h := newHarnessOn(t, &localserver.Servers{MySQL: my, ClickHouse: srv.ClickHouse}, mysqlSection(my)+fmt.Sprintf("clickhouse: {addr: [%q], user: %q, password: %q}\n",
		srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password), 1, "")
	return h, my
}

func mysqlSection(s *localserver.Server) string {
	return fmt.Sprintf("mysql: {addr: %q, user: %q, password: %q, server_id: 4242}\n", s.Addr(), s.User, s.Password)
}

// failOver kills the primary and the daemon together, promotes the
// replica and points the config (mysql.addr) and the harness at it.
func (tp *topology) failOver(d *daemon) {
	h := tp.h
	h.t.Helper()
	if d != nil {
		if err := d.cmd.Process.Kill(); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := tp.primary.Kill(); err != nil {
		h.t.Fatal(err)
	}
	if d != nil {
		<-d.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tp.replica.Promote(ctx); err != nil {
		h.t.Fatal(err)
	}
	data, err := os.ReadFile(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	conf := strings.Replace(string(data), mysqlSection(tp.primary), mysqlSection(tp.replica), 1)
	if conf == string(data) {
		h.t.Fatal("the config's mysql section was not found")
	}
	if err := os.WriteFile(h.path, []byte(conf), 0o600); err != nil {
		h.t.Fatal(err)
	}
	if h.cfg, err = config.Load(h.path); err != nil {
		h.t.Fatal(err)
	}
	h.my.Close()
	if h.my, err = sql.Open("mysql", tp.replica.DSN("")); err != nil {
		h.t.Fatal(err)
	}
	h.srv = &localserver.Servers{MySQL: tp.replica, ClickHouse: h.srv.ClickHouse}
}

// TestFaultFailoverToPromotedReplica follows a primary through the mixed
// workload (DDL included), SIGKILLs the primary and the daemon together,
// promotes the replica, points mysql.addr at it, and goes on writing
// there (DDL again): the daemon resumes from its GTIDs with no flag and
// no re-copy, and ClickHouse ends equal to the new primary. A second
// failover, back to a fresh replica of the new primary, works the same.
func TestFaultFailoverToPromotedReplica(t *testing.T) {
	tp := newTopology(t)
	h := tp.h
	a := h.dbs[0]
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	// The primary's binlog is files ahead of the replica's (rotations are
	// not replicated): without versions above the old history's, the new
	// primary's changes would lose to older ones.
	h.exec("FLUSH BINARY LOGS", "FLUSH BINARY LOGS", "FLUSH BINARY LOGS")
	w := h.startWorkload(a, 11, time.Millisecond)
	d := h.startDaemon(logPath)
	h.waitCheckpointPast(d, logPath, source.Position{}, 60*time.Second)
	w.waitIters(150, 60*time.Second) // past the first DDL
	w.stopNow()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tp.replica.WaitReplicaCaughtUp(ctx, tp.primary); err != nil {
		t.Fatal(err)
	}
	tp.failOver(d)

	// The workload goes on on the new primary: more rows, more DDL.
	after := &continuation{h: h, db: a, base: 10_000_000}
	after.run(t, 0, 120, "ALTER TABLE DB.k1 ADD COLUMN promoted INT NOT NULL DEFAULT 7 AFTER v")
	d = h.startDaemon(logPath)
	after.run(t, 120, 240, "ALTER TABLE DB.k2 MODIFY COLUMN amount DECIMAL(16,4)")
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	if !logHas(logPath, "the binlog history changed") {
		t.Error("the daemon did not say it followed the binlog history onto the promoted replica")
	}
	h.verifyEqual("k1", "k2")
	h.assertEqual(a, "k1", []string{"id", "added", "v", "promoted", "s"})
	h.assertEqual(a, "k2", []string{"id", "amount", "at"})

	// Twice in a row: a replica of the new primary, promoted in turn.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	third, err := localserver.StartReplica(ctx2, tp.replica, localserver.MariaDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = third.Stop() })
	after.run(t, 240, 300, "")
	if err := third.WaitReplicaCaughtUp(ctx2, tp.replica); err != nil {
		t.Fatal(err)
	}
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	tp.primary, tp.replica = tp.replica, third
	tp.failOver(d)
	d = h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	after.run(t, 300, 360, "")
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	h.verifyEqual("k1", "k2")
	h.assertEqual(a, "k1", []string{"id", "added", "v", "promoted", "s"})
	if t.Failed() {
		data, _ := os.ReadFile(logPath)
		t.Logf("daemon log (tail):\n%s", tail(string(data), 6000))
	}
}

// stopNow stops the workload after its current transaction, whatever DDL
// it has run.
func (w *workload) stopNow() {
	w.h.t.Helper()
	w.stop.Store(true)
	w.wg.Wait()
	if w.err != nil {
		w.h.t.Fatal(w.err)
	}
}

// continuation writes transactions to the workload's tables k1 and k2 on
// whatever server the harness points at: inserts above base, updates and
// deletes of rows old and new, key changes.
type continuation struct {
	h    *harness
	db   string
	base int
}

// run runs iterations from..to, the DDL (DB. for the database) half-way.
func (c *continuation) run(t *testing.T, from, to int, ddl string) {
	t.Helper()
	for i := from; i < to; i++ {
		id := c.base + i
		stmts := []string{
			fmt.Sprintf("INSERT INTO %s.k1 (id, v, s) VALUES (%d, %d, 'after %d')", c.db, id, i, i),
			fmt.Sprintf("INSERT INTO %s.k2 VALUES (%d, %d.25, NOW(3))", c.db, id, i),
			fmt.Sprintf("UPDATE %s.k1 SET v = v + 1, s = 'touched %d' WHERE id = %d", c.db, i, 1+i%97),
			fmt.Sprintf("UPDATE %s.k2 SET amount = amount + 1 WHERE id = %d", c.db, c.base+i/2),
			fmt.Sprintf("DELETE FROM %s.k2 WHERE id = %d", c.db, 3+i%89),
			fmt.Sprintf("UPDATE IGNORE %s.k1 SET id = id + 5000000 WHERE id = %d", c.db, 5+i%83),
		}
		tx, err := c.h.my.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stmts {
			if _, err := tx.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if ddl != "" && i == (from+to)/2 {
			c.h.exec(strings.ReplaceAll(ddl, "DB.", c.db+"."))
		}
	}
}

// TestFaultFailoverToReplicaThatMissedTransactions promotes a replica
// that stopped replicating before the primary's last transactions, which
// the daemon had applied: the daemon stops, naming the missing GTIDs and
// the tables they changed; the repair it names (fullsync -recreate
// -checkpoint -tables, the table it names copied again) then lets it go on
// from the new primary, and ClickHouse ends equal to it.
func TestFaultFailoverToReplicaThatMissedTransactions(t *testing.T) {
	tp := newTopology(t)
	h := tp.h
	a := h.dbs[0]
	// The old primary's binlog files ahead of the replica's.
	h.exec("FLUSH BINARY LOGS", "FLUSH BINARY LOGS", "FLUSH BINARY LOGS")
	h.exec("CREATE TABLE "+a+".early (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+a+".late (id INT PRIMARY KEY, v INT)",
		"INSERT INTO "+a+".early VALUES (1, 1), (2, 2)", "INSERT INTO "+a+".late VALUES (1, 1)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tp.replica.WaitReplicaCaughtUp(ctx, tp.primary); err != nil {
		t.Fatal(err)
	}
	if err := tp.replica.StopReplication(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := tp.primary.GTIDPositions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The replica misses these three transactions; the daemon applies them.
	h.exec("INSERT INTO "+a+".late VALUES (2, 2)", "UPDATE "+a+".late SET v = 10 WHERE id = 1", "DELETE FROM "+a+".late WHERE id = 2")
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	h.assertEqual(a, "late", []string{"id", "v"})
	lost, err := tp.primary.GTIDPositions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tp.failOver(d)

	logs, err := h.runExpectingError(time.Minute)
	if err == nil {
		t.Fatalf("the daemon went on from a replica that lacks transactions it applied; logs:\n%s", tail(logs, 4000))
	}
	seq := func(gtid string) string { return gtid[strings.LastIndexByte(gtid, '-')+1:] }
	from := fmt.Sprint(mustAtoi(t, seq(before.Binlog)) + 1)
	for _, want := range []string{
		"lacks transactions binlog2ch read",
		"domain 0 sequence numbers " + from + " to " + seq(lost.Binlog) + " (the last " + lost.Binlog + ")",
		"tables they may have changed: " + a + ".late.",
		"binlog2ch fullsync -recreate -checkpoint -tables " + a + ".late -config FILE",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}

	// Written on the new primary before the repair: applied from its binlog
	// (early) or by the copy (late).
	h.exec("UPDATE "+a+".early SET v = 11 WHERE id = 2", "UPDATE "+a+".late SET v = 12 WHERE id = 1")
	// The repair the message names: copy the table it names again from
	// the new primary; not one table fewer.
	cfg := *h.cfg
	_, err = h.fullSync(&cfg, &syncBuffer{}, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "early"}}, Recreate: true, SetCheckpoint: true})
	if err == nil || !strings.Contains(err.Error(), "may have changed "+a+".late too") {
		t.Fatalf("a repair without the table the gap names: %v", err)
	}
	statuses, err := h.fullSync(&cfg, &syncBuffer{}, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "late"}}, Recreate: true, SetCheckpoint: true})
	if err != nil || len(statuses) != 1 {
		t.Fatalf("repair: %v, %+v", err, statuses)
	}
	// The new primary goes on; both tables change, the one not copied
	// again too (its new versions must outrank the old primary's).
	h.exec("INSERT INTO "+a+".early VALUES (3, 3)", "UPDATE "+a+".early SET v = 20 WHERE id = 1", "UPDATE "+a+".late SET v = 30 WHERE id = 1", "INSERT INTO "+a+".late VALUES (4, 4)")
	run := h.start()
	h.waitCaughtUp(run, 90*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	h.verifyEqual("early", "late")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestFaultBinlogHistoryRestarted: the daemon stopped, RESET MASTER, new
// writes: the restart names the restarted history (not
// max_allowed_packet, not a purge) and the re-copy, and never applies the
// new binlog from the old offset.
func TestFaultBinlogHistoryRestarted(t *testing.T) {
	h, _ := newPrivateHarness(t)
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY, s VARCHAR(200))")
	run := h.start()
	for i := 0; i < 20; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d, REPEAT('x', %d))", a, i, 10+i*7))
	}
	h.waitCaughtUp(run, 60*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil || cp == nil || cp.GTID == "" {
		t.Fatalf("the checkpoint before RESET MASTER: %+v, %v; want it with GTIDs", cp, err)
	}
	h.exec("RESET MASTER")
	// The new history grows past the old checkpoint's offset, and its
	// GTIDs, numbered from 1 again, past the checkpoint's: they would seem
	// to contain them.
	for i := 100; i < 160; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d, REPEAT('y', %d))", a, i, 10+i))
	}
	logs, err := h.runExpectingError(time.Minute)
	if err == nil {
		t.Fatalf("the daemon went on after RESET MASTER; logs:\n%s", tail(logs, 4000))
	}
	for _, want := range []string{"RESET MASTER", "is not the binlog binlog2ch's checkpoint was saved on", "binlog2ch fullsync -recreate -checkpoint"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "max_allowed_packet") {
		t.Errorf("the error sends the operator the wrong way: %v", err)
	}
	var n uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count() FROM `"+a+"`.t WHERE id >= 100").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows of the new history reached ClickHouse", n)
	}
}

// TestFaultFailoverDuringLargeTransaction: the daemon has written part of
// a large transaction (beyond its checkpoint) when it and the primary are
// killed; the promoted replica has the transaction, the daemon reads it
// again from there, and the new primary's later changes to those rows win
// over the versions written from the old primary.
func TestFaultFailoverDuringLargeTransaction(t *testing.T) {
	tp := newTopology(t)
	h := tp.h
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".big (id INT PRIMARY KEY, v INT, s VARCHAR(40))")
	// The primary's binlog files ahead of the replica's, as in a real
	// failover where the two rotated independently.
	h.exec("FLUSH BINARY LOGS", "FLUSH BINARY LOGS")
	h.exec(fmt.Sprintf("INSERT INTO %s.big SELECT seq, 0, CONCAT('row ', seq) FROM %s.seq_1_to_30000", a, a))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tp.replica.WaitReplicaCaughtUp(ctx, tp.primary); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	// Rows events hold about 8 KiB, a few hundred rows: the reader stops
	// a third of the way into the transaction.
	d := h.startDaemon(logPath, envPauseAfterRows+"=40")
	waitFor(t, 60*time.Second, "part of the transaction in ClickHouse", func() bool {
		var n uint64
		err := h.ch.QueryRow(context.Background(), "SELECT count() FROM system.parts WHERE database = ? AND table = 'big' AND active", a).Scan(&n)
		return err == nil && n > 0
	})
	raw, _ := h.chCounts(a, "big")
	if raw >= 30000 {
		t.Fatalf("the whole transaction went through before the pause (%d rows)", raw)
	}
	tp.failOver(d)
	h.exec("UPDATE "+a+".big SET v = 1, s = 'after failover' WHERE id % 3 = 0", "DELETE FROM "+a+".big WHERE id % 7 = 0")
	d = h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, 90*time.Second)
	t.Logf("%d rows of the transaction were in ClickHouse at the failover", raw)
	h.verifyEqual("big")
	h.assertEqual(a, "big", []string{"id", "v", "s"})
}

// TestFaultFailoverDuringInitialSnapshot: an initial snapshot begun on
// the old primary is not carried over to the new one: the daemon stops
// with the way on.
func TestFaultFailoverDuringInitialSnapshot(t *testing.T) {
	tp := newTopology(t)
	h := tp.h
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".r (id INT PRIMARY KEY, s VARCHAR(64))")
	h.exec(fmt.Sprintf("INSERT INTO %s.r SELECT seq, CONCAT('row ', seq) FROM %s.seq_1_to_20000", a, a))
	if err := os.Remove(filepath.Join(h.cfg.StateDir, "checkpoint.json")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tp.replica.WaitReplicaCaughtUp(ctx, tp.primary); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.path, append(data, []byte("fullsync: {chunk_rows: 1000, workers: 1}\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath, envPauseAfterChunks+"=3")
	waitFor(t, 60*time.Second, "the initial snapshot begun", func() bool {
		st, err := snapshot.Load(h.cfg.StateDir, snapshot.InitialFile)
		return err == nil && st != nil && progressOf(st, a+".r") != nil && progressOf(st, a+".r").Rows > 0
	})
	tp.failOver(d)
	logs, err := h.runExpectingError(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "does not carry an unfinished copy over to another server") || !strings.Contains(err.Error(), "drop its tables in ClickHouse") {
		t.Fatalf("failover during the initial snapshot: %v\n%s", err, tail(logs, 3000))
	}
}

// TestSavepoints: a transaction with SAVEPOINT and ROLLBACK TO, which
// MariaDB writes into the binlog inside the transaction, replicates what
// was committed; the checkpoint never lands inside it (a restart there
// would begin without its table maps).
func TestSavepoints(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY, v INT)")
	run := h.start()
	conn, err := h.my.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"BEGIN", "INSERT INTO " + a + ".t VALUES (1, 1)", "SAVEPOINT a", "INSERT INTO " + a + ".t VALUES (2, 2)",
		"ROLLBACK TO SAVEPOINT a", "INSERT INTO " + a + ".t VALUES (3, 3)", "SAVEPOINT b", "RELEASE SAVEPOINT b", "COMMIT"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	h.waitCaughtUp(run, 60*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	h.assertEqual(a, "t", []string{"id", "v"})
	// The server wrote the savepoint inside the transaction: the case is
	// real, not only the unit test's.
	var n int
	rows, err := h.my.Query("SHOW BINLOG EVENTS IN '" + mustCheckpoint(t, h).File + "'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(vals[len(vals)-1].String, "SAVEPOINT") {
			n++
		}
	}
	if n == 0 {
		t.Error("no SAVEPOINT event in the binlog")
	}
}

func mustCheckpoint(t *testing.T, h *harness) source.Position {
	t.Helper()
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil || cp == nil {
		t.Fatalf("checkpoint: %v, %v", cp, err)
	}
	return cp.Position
}

// TestFullSyncBelowVersionCeiling: a fullsync whose position is past run's
// saved version ceiling (run far behind, or stopped long ago) is refused:
// its rows' versions would reach where a failover starts the next history.
func TestFullSyncBelowVersionCeiling(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".t (id INT PRIMARY KEY)")
	cp, err := state.LoadFile(h.cfg.StateDir)
	if err != nil || cp == nil {
		t.Fatal(cp, err)
	}
	cp.Ceiling = source.MustFileIndex(cp.File) // run's ceiling: this very file
	if err := state.SaveFile(h.cfg.StateDir, *cp); err != nil {
		t.Fatal(err)
	}
	cfg := *h.cfg
	_, err = h.fullSync(&cfg, &syncBuffer{}, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "t"}}})
	if err == nil || !strings.Contains(err.Error(), "let it catch up first") {
		t.Fatalf("a copy past run's version ceiling: %v", err)
	}
	cp.Ceiling += router.CeilingGap
	if err := state.SaveFile(h.cfg.StateDir, *cp); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fullSync(&cfg, &syncBuffer{}, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "t"}}}); err != nil {
		t.Fatalf("a copy below run's ceiling: %v", err)
	}
}
