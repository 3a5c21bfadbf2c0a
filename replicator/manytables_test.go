package replicator

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// manyTables creates n small tables (an INT primary key, a few columns,
// rows rows each) spread round-robin over the harness's databases, over
// four connections, and returns their names.
func (h *harness) manyTables(n, rows int) []schema.TableName {
	h.t.Helper()
	names := make([]schema.TableName, n)
	for i := range names {
		names[i] = schema.TableName{Database: h.dbs[i%len(h.dbs)], Table: fmt.Sprintf("t%04d", i)}
	}
	const conns = 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := h.my.Conn(context.Background())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for i := c; i < n; i += conns {
				t := "`" + names[i].Database + "`.`" + names[i].Table + "`"
				var vals []string
				for r := 1; r <= rows; r++ {
					vals = append(vals, fmt.Sprintf("(%d, %d, 'row %d of %d', '2024-01-%02d 12:00:00', %d.%02d)", r, i*r, r, i, 1+r%28, i, r))
				}
				qs := []string{"CREATE TABLE " + t + " (id INT PRIMARY KEY, a INT NOT NULL, s VARCHAR(32), d DATETIME, v DECIMAL(10,2))"}
				if rows > 0 {
					qs = append(qs, "INSERT INTO "+t+" VALUES "+strings.Join(vals, ", "))
				}
				for _, q := range qs {
					if _, err := conn.ExecContext(context.Background(), q); err != nil {
						errs <- fmt.Errorf("%s: %w", q, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	return names
}

// queryCounts are the servers' statement counters: MySQL's global status
// (Questions, Com_select, Com_stmt_*) and ClickHouse's system.events
// (Query, SelectQuery, InsertQuery). Reading them counts too: one
// statement each side per read.
type queryCounts struct {
	my map[string]uint64
	ch map[string]uint64
}

func (h *harness) queryCounts() queryCounts {
	h.t.Helper()
	q := queryCounts{my: map[string]uint64{}, ch: map[string]uint64{}}
	rows, err := h.my.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_select', 'Com_stmt_prepare', 'Com_stmt_execute', 'Com_stmt_close', 'Connections', 'Connection_errors_max_connections')")
	if err != nil {
		h.t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var v uint64
		if err := rows.Scan(&k, &v); err != nil {
			h.t.Fatal(err)
		}
		q.my[k] = v
	}
	rows.Close()
	res, err := h.ch.Query(context.Background(), "SELECT event, value FROM system.events WHERE event IN ('Query', 'SelectQuery', 'InsertQuery')")
	if err != nil {
		h.t.Fatal(err)
	}
	for res.Next() {
		var k string
		var v uint64
		if err := res.Scan(&k, &v); err != nil {
			h.t.Fatal(err)
		}
		q.ch[k] = v
	}
	res.Close()
	return q
}

// since is what the counters grew by from before, less the reads of them.
func (q queryCounts) since(before queryCounts) queryCounts {
	d := queryCounts{my: map[string]uint64{}, ch: map[string]uint64{}}
	for k, v := range q.my {
		d.my[k] = v - before.my[k]
	}
	d.my["Questions"]-- // SHOW GLOBAL STATUS
	for k, v := range q.ch {
		d.ch[k] = v - before.ch[k]
	}
	d.ch["Query"]-- // the system.events read
	d.ch["SelectQuery"]--
	return d
}

func (q queryCounts) String() string {
	return fmt.Sprintf("MySQL: %d questions, %d Com_select, %d Com_stmt_prepare, %d Com_stmt_execute, %d connections (%d refused: too many); ClickHouse: %d queries (%d SELECT, %d INSERT)",
		q.my["Questions"], q.my["Com_select"], q.my["Com_stmt_prepare"], q.my["Com_stmt_execute"], q.my["Connections"], q.my["Connection_errors_max_connections"],
		q.ch["Query"], q.ch["SelectQuery"], q.ch["InsertQuery"])
}

// TestStartupManyTables: `run`'s first start over 300 small tables in
// three databases copies every one, reading their definitions, row
// estimates and ClickHouse's tables with a few statements for all of them
// rather than a few per table; a table listed but dropped since is
// skipped. Then a row into every table at once starts 300 writers while
// the first one's definition read is held: the others' definitions come
// in one more read, over the daemon's few connections. A table created
// meanwhile replicates as before, and verify finds both sides equal.
func TestStartupManyTables(t *testing.T) {
	const n = 300
	h := newHarness(t, 3, "batch: {flush_interval: 100ms, max_inserts_per_second: 2000}\ncheckpoint: {interval: 100ms}\n")
	names := h.manyTables(n, 3)
	ctx := context.Background()

	// No checkpoint and an initial snapshot begun here, as a first start
	// that listed one table more, dropped before it was copied.
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	r := h.newReplicator(io.Discard)
	pos, gtids, err := source.CurrentGTIDPosition(ctx, r.my, r.server.Flavor)
	server := r.server.ID
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	gone := schema.TableName{Database: h.dbs[0], Table: "gone"}
	st := &snapshot.State{Server: server, Position: pos, GTID: gtids, Started: time.Now().UTC(), Tables: map[string]*snapshot.TableProgress{},
		List: append(slices.Clone(names), gone)}
	if err := snapshot.Save(h.cfg.StateDir, snapshot.InitialFile, st); err != nil {
		t.Fatal(err)
	}

	before := h.queryCounts()
	held := make(chan int, 1) // tables in the held first read
	var reads atomic.Int32
	var run *running
	run = h.startWith(testHooks{beforeDefinitions: func(tables int) {
		if reads.Add(1) > 1 {
			return
		}
		held <- tables
		// Until every other writer waits for the next read.
		for deadline := time.Now().Add(time.Minute); tables+run.r.loader.Queued() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("only %d writers asked for their definitions within a minute", tables+run.r.loader.Queued())
				return
			}
		}
	}})
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if st, err = snapshot.Load(h.cfg.StateDir, snapshot.InitialFile); err != nil {
			t.Fatal(err)
		}
		if st.Complete {
			break
		}
		select {
		case err := <-run.done:
			run.cancel = nil
			t.Fatalf("replicator stopped: %v\nlogs:\n%s", err, tail(run.logs.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the initial snapshot did not end within 2 minutes; logs:\n%s", tail(run.logs.String(), 4000))
		}
	}
	snap := h.queryCounts().since(before)
	t.Logf("initial snapshot of %d tables: %s", n, snap)
	for _, name := range names {
		if p := st.Tables[name.String()]; p == nil || !p.Complete || p.Rows != 3 {
			t.Fatalf("%s: progress %+v", name, p)
		}
	}
	if p := st.Tables[gone.String()]; p == nil || !p.Complete || !strings.Contains(run.logs.String(), "table no longer exists") {
		t.Errorf("the dropped table: progress %+v, no warning", p)
	}
	addr := run.r.MetricsAddr()
	if copied, est := scrape(t, addr, "binlog2ch_snapshot_rows_copied{"), scrape(t, addr, "binlog2ch_snapshot_rows_estimated{"); copied != 3*n || est < 3*n {
		t.Errorf("snapshot metrics: %v rows copied, %v estimated; want %d and at least that", copied, est, 3*n)
	}
	if !strings.Contains(run.logs.String(), "msg=\"copy progress\" component=snapshot tables=301 prepared=") {
		t.Errorf("no progress line counting the tables:\n%s", tail(run.logs.String(), 3000))
	}
	// The copy reads each table with two statements (a walk of its key,
	// its one range) and writes it with two (CREATE TABLE, INSERT); the
	// rest, reading every table's definition, estimate and target, must
	// not grow with the tables.
	if got, most := snap.my["Com_select"], uint64(2*n+n/10+40); got > most {
		t.Errorf("the snapshot made MySQL run %d SELECTs; want at most %d (2 per table to read it, %d for all else)", got, most, most-2*n)
	}
	if got, most := snap.ch["Query"], uint64(2*n+n/10+40); got > most {
		t.Errorf("the snapshot sent ClickHouse %d queries; want at most %d (2 per table to write it, %d for all else)", got, most, most-2*n)
	}
	h.waitCaughtUp(run, time.Minute)

	// A row into every table at once: a writer each, all starting while
	// the first one's definition read is held.
	before = h.queryCounts()
	h.insertEach(names, 100)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatalf("no writer read its definition; logs:\n%s", tail(run.logs.String(), 4000))
	}
	for deadline := time.Now().Add(2 * time.Minute); h.chRowsIn(h.dbs) < 4*n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rows did not arrive within 2 minutes; logs:\n%s", tail(run.logs.String(), 4000))
		}
	}
	live := h.queryCounts().since(before)
	t.Logf("a row into each of %d tables: %s; %d definition reads", n, live, reads.Load())
	if got := reads.Load(); got != 2 {
		t.Errorf("the writers' definitions took %d reads; want 2 (the held one, then all the others)", got)
	}
	if live.my["Com_select"] > 10 || live.my["Connections"] > 8 || live.my["Connection_errors_max_connections"] > 0 {
		t.Errorf("%d writers starting at once: %s; want at most 10 SELECTs over at most 8 new connections", n, live)
	}

	// A table created later takes the per-table path.
	h.exec("CREATE TABLE "+h.dbs[1]+".late (id INT PRIMARY KEY, s VARCHAR(10))", "INSERT INTO "+h.dbs[1]+".late VALUES (1, 'a'), (2, 'b')")
	h.waitCaughtUp(run, time.Minute)
	want := []string{"late"}
	for _, name := range names {
		want = append(want, name.Table)
	}
	h.verifyEqual(want...)
}
