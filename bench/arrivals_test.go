package bench

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestArrivalObservers: both ways of observing rows arrive in ClickHouse
// (the tables' directories, system.parts polls) see every row inserted
// after they start, table by table, and none from before (the warm-up
// rows); awaitAll returns once every row is in.
func TestArrivalObservers(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()},
		Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, kind := range []string{"watcher", "sampler"} {
		t.Run(kind, func(t *testing.T) {
			r := &run{ch: conn, db: servertest.Name("b2c_arrivals"), log: io.Discard}
			if err := conn.Exec(ctx, "CREATE DATABASE "+r.db); err != nil {
				t.Fatal(err)
			}
			defer conn.Exec(ctx, "DROP DATABASE IF EXISTS "+r.db)
			names := []string{"t_1", "t_2", "t_3"}
			insert := func(table string, ids ...uint64) {
				t.Helper()
				b, err := conn.PrepareBatch(ctx, fmt.Sprintf("INSERT INTO %s.%s (id, v)", r.db, table))
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if err := b.Append(id, "x"); err != nil {
						t.Fatal(err)
					}
				}
				if err := b.Send(); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range names {
				if err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s.%s (id UInt64, v String) ENGINE = MergeTree ORDER BY id", r.db, n)); err != nil {
					t.Fatal(err)
				}
				insert(n, 1) // the warm-up row: before the observer, not seen
			}
			var obs partArrivals
			if kind == "watcher" {
				w, err := r.newPartWatcher(ctx, "^t_[0-9]+$", len(names))
				if err != nil {
					if srv.ClickHouse.External {
						t.Skipf("the external ClickHouse's directories are not readable here: %v", err)
					}
					t.Fatal(err)
				}
				obs = w
			} else {
				s, err := r.newPartSampler(ctx, "^t_[0-9]+$", names)
				if err != nil {
					t.Fatal(err)
				}
				obs = s
			}
			defer obs.stop()
			insert("t_1", 2, 3, 4)
			insert("t_2", 2, 3, 4, 5)
			insert("t_1", 5, 6)
			want := map[string]uint64{"t_1": 5, "t_2": 4}
			if _, err := obs.awaitAll(ctx, want, 3+9, func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			obs.stop()
			got := map[string]uint64{}
			parts := 0
			for _, a := range obs.arrivals() {
				got[a.table] += a.rows
				parts++
			}
			if got["t_1"] != 5 || got["t_2"] != 4 || got["t_3"] != 0 {
				t.Fatalf("arrived %v, want %v", got, want)
			}
			if kind == "watcher" && parts != 3 {
				t.Fatalf("the watcher saw %d parts, want 3", parts)
			}
		})
	}
}
