package localserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReplicaFailover walks through what the failover tests need: a replica
// that converges from the primary's whole binlog, logs the primary's GTIDs,
// can be paused to miss transactions, and after the primary is SIGKILLed is
// promoted and writes GTIDs with its own server id in the same domain.
func TestReplicaFailover(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	// Generous: only bounds a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	primary := startForTest(t, func() (*Server, error) { return StartMariaDB(ctx) })
	pdb := openDB(t, primary)
	mustExec(t, pdb, "CREATE DATABASE f",
		"CREATE TABLE f.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO f.t VALUES (1, 'before')",
		"INSERT INTO f.t VALUES (2, 'before')")

	replica := startForTest(t, func() (*Server, error) { return StartReplica(ctx, primary, MariaDBOptions{}) })
	if replica.ServerID == primary.ServerID || primary.ServerID != DefaultServerID {
		t.Fatalf("server ids: primary %d, replica %d", primary.ServerID, replica.ServerID)
	}
	rdb := openDB(t, replica)
	for _, c := range []struct {
		db   *sql.DB
		want uint32
	}{{pdb, primary.ServerID}, {rdb, replica.ServerID}} {
		var id uint32
		var logSlaveUpdates, strict int
		var basename string
		if err := c.db.QueryRowContext(ctx, "SELECT @@server_id, @@log_slave_updates, @@gtid_strict_mode, @@log_bin_basename").
			Scan(&id, &logSlaveUpdates, &strict, &basename); err != nil {
			t.Fatal(err)
		}
		if id != c.want || logSlaveUpdates != 1 || strict != 1 || !strings.HasSuffix(basename, "/binlog") {
			t.Fatalf("server_id %d (want %d), log_slave_updates %d, gtid_strict_mode %d, log_bin_basename %s",
				id, c.want, logSlaveUpdates, strict, basename)
		}
	}

	mustExec(t, pdb, "INSERT INTO f.t VALUES (3, 'after')")
	if err := replica.WaitReplicaCaughtUp(ctx, primary); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, rdb, 1, 2, 3)
	pp, rp := positions(t, primary), positions(t, replica)
	t.Logf("caught up: primary %+v, replica %+v", pp, rp)
	if rp.Binlog != pp.Binlog || rp.Slave != pp.Binlog || rp.Current != pp.Binlog {
		t.Fatalf("replica positions %+v, want all %q (log_slave_updates keeps the primary's GTIDs)", rp, pp.Binlog)
	}
	pg, rg := binlogGTIDs(t, pdb), binlogGTIDs(t, rdb)
	if len(pg) != 5 || !reflect.DeepEqual(pg, rg) {
		t.Fatalf("binlog GTIDs: primary %v, replica %v; want the same 5", pg, rg)
	}
	for _, g := range rg {
		if !strings.HasPrefix(g, fmt.Sprintf("0-%d-", primary.ServerID)) {
			t.Fatalf("replica's binlog has GTID %s, not the primary's", g)
		}
	}

	// A paused replica misses the primary's transactions, then catches up.
	if err := replica.StopReplication(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pdb, "INSERT INTO f.t VALUES (4, 'paused')")
	wantIDs(t, rdb, 1, 2, 3)
	if got := positions(t, replica); got != rp {
		t.Fatalf("paused replica moved from %+v to %+v", rp, got)
	}
	if err := replica.StartReplication(ctx); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitReplicaCaughtUp(ctx, primary); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, rdb, 1, 2, 3, 4)

	// A restarted replica resumes replication by itself.
	if err := replica.Kill(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pdb, "INSERT INTO f.t VALUES (5, 'restart')")
	if err := replica.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitReplicaCaughtUp(ctx, primary); err != nil {
		t.Fatal(err)
	}
	rdb = openDB(t, replica) // the old pool's connections died with the server
	wantIDs(t, rdb, 1, 2, 3, 4, 5)

	// The replica misses the primary's last transactions, then the
	// primary dies.
	if err := replica.StopReplication(ctx); err != nil {
		t.Fatal(err)
	}
	applied := positions(t, replica)
	mustExec(t, pdb, "INSERT INTO f.t VALUES (6, 'lost')", "INSERT INTO f.t VALUES (7, 'lost')")
	lost := positions(t, primary)
	wantIDs(t, rdb, 1, 2, 3, 4, 5)
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}

	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	var readOnly int
	if err := rdb.QueryRowContext(ctx, "SELECT @@read_only").Scan(&readOnly); err != nil {
		t.Fatal(err)
	}
	if readOnly != 0 {
		t.Fatal("promoted replica is read_only")
	}
	if st, err := replica.slaveStatus(ctx); err != nil || st != nil {
		t.Fatalf("promoted replica still has a primary: %v %v", st, err)
	}
	mustExec(t, rdb, "INSERT INTO f.t VALUES (8, 'promoted')")
	wantIDs(t, rdb, 1, 2, 3, 4, 5, 8)
	got := positions(t, replica)
	t.Logf("applied before the failover %+v; the dead primary's last %+v; promoted %+v", applied, lost, got)
	// Strict mode continues the domain's sequence from the replica's own
	// binlog, so the first promoted GTID reuses a sequence number the dead
	// primary had used for a transaction the replica never saw.
	want := fmt.Sprintf("0-%d-%d", replica.ServerID, seqNo(t, applied.Binlog)+1)
	wantState := fmt.Sprintf("0-%d-%d,%s", primary.ServerID, seqNo(t, applied.Binlog), want)
	if got.Binlog != want || got.Current != want || got.BinlogState != wantState || got.Slave != applied.Binlog {
		t.Fatalf("promoted positions %+v, want binlog and current %s, binlog state %s, slave %s", got, want, wantState, applied.Binlog)
	}
	if seqNo(t, want) > seqNo(t, lost.Binlog) {
		t.Fatalf("promoted GTID %s does not overlap the lost %s", want, lost.Binlog)
	}
	if g := binlogGTIDs(t, rdb); g[len(g)-1] != want {
		t.Fatalf("promoted replica's binlog ends with GTID %s, want %s", g[len(g)-1], want)
	}
}

// TestPromoteAppliesReceivedTransactions: a transaction the replica has
// received but not applied when its primary dies survives the promotion.
func TestPromoteAppliesReceivedTransactions(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	primary := startForTest(t, func() (*Server, error) { return StartMariaDB(ctx) })
	pdb := openDB(t, primary)
	mustExec(t, pdb, "CREATE DATABASE f", "CREATE TABLE f.t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO f.t VALUES (1, 'old')")
	replica := startForTest(t, func() (*Server, error) { return StartReplica(ctx, primary, MariaDBOptions{ServerID: 42}) })
	if err := replica.WaitReplicaCaughtUp(ctx, primary); err != nil {
		t.Fatal(err)
	}
	rdb := openDB(t, replica)

	// A row lock on the replica holds its SQL thread back while the IO
	// thread receives the primary's update.
	lock, err := rdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, "SELECT * FROM f.t WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pdb, "UPDATE f.t SET v = 'new' WHERE id = 1")
	sent := positions(t, primary).Binlog
	waitFor(ctx, t, "the replica receives "+sent, func() bool {
		st, err := replica.slaveStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st["Gtid_IO_Pos"] == sent
	})
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}

	promoted := make(chan error, 1)
	go func() { promoted <- replica.Promote(ctx) }()
	// Release the lock only once Promote waits for the relay log (or has
	// returned without waiting, which the checks below catch).
	var promoteErr error
	done := false
	waitFor(ctx, t, "Promote waits for the relay log", func() bool {
		select {
		case promoteErr = <-promoted:
			done = true
			return true
		default:
		}
		var n int
		if err := rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT MASTER_GTID_WAIT%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !done {
		promoteErr = <-promoted
	}
	if promoteErr != nil {
		t.Fatal(promoteErr)
	}
	var v string
	if err := rdb.QueryRowContext(ctx, "SELECT v FROM f.t WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if got := positions(t, replica); v != "new" || got.Binlog != sent {
		t.Fatalf("after Promote: v = %q, positions %+v; want 'new' at %s", v, got, sent)
	}
}

// waitFor polls cond until it holds; ctx's deadline only bounds a hang.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestStartReplicaRejectsItsPrimarysServerID(t *testing.T) {
	ext, err := external(EnvMySQL, "mysql://root@127.0.0.1:3306", "mysql", 3306)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartReplica(context.Background(), ext, MariaDBOptions{}); err == nil {
		t.Fatal("replica of an external server accepted")
	}
	p := &Server{name: "MariaDB", ServerID: 9}
	if _, err := StartReplica(context.Background(), p, MariaDBOptions{ServerID: 9}); err == nil || !strings.Contains(err.Error(), "server id 9") {
		t.Fatalf("replica with its primary's server id: %v", err)
	}
	if id := nextReplicaID(p.ServerID); id == p.ServerID || id == DefaultServerID {
		t.Fatalf("picked server id %d", id)
	}
}

// startForTest starts a server, stops it when the test ends, and checks its
// directory is gone then, also after a Kill.
func startForTest(t *testing.T, start func() (*Server, error)) *Server {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop %s: %v", s.Addr(), err)
		}
		if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("directory %s still exists after Stop", s.Dir)
		}
	})
	return s
}

func openDB(t *testing.T, s *Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func wantIDs(t *testing.T, db *sql.DB, want ...int) {
	t.Helper()
	rows, err := db.Query("SELECT id FROM f.t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
}

func positions(t *testing.T, s *Server) GTIDPositions {
	t.Helper()
	p, err := s.GTIDPositions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// binlogGTIDs lists the GTID of every transaction in a server's binlog
// files, in order. MariaDB shows a Gtid event's as "BEGIN GTID 0-7-2" (DML)
// or "GTID 0-7-1" (DDL).
func binlogGTIDs(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var files []string
	forRows(t, db, "SHOW BINARY LOGS", func(r map[string]string) { files = append(files, r["Log_name"]) })
	var gtids []string
	for _, f := range files {
		forRows(t, db, "SHOW BINLOG EVENTS IN '"+f+"'", func(r map[string]string) {
			if r["Event_type"] == "Gtid" {
				fields := strings.Fields(r["Info"])
				gtids = append(gtids, fields[len(fields)-1])
			}
		})
	}
	return gtids
}

func forRows(t *testing.T, db *sql.DB, q string, fn func(map[string]string)) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := make(map[string]string, len(cols))
		for i, c := range cols {
			r[c] = vals[i].String
		}
		fn(r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// seqNo is the sequence number of a one-domain GTID position.
func seqNo(t *testing.T, pos string) uint64 {
	t.Helper()
	parts := strings.Split(pos, "-")
	if len(parts) != 3 {
		t.Fatalf("GTID position %q is not one domain-server-seq", pos)
	}
	n, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		t.Fatalf("GTID position %q: %v", pos, err)
	}
	return n
}
