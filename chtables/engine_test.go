package chtables

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
)

// newTestManager starts a private ClickHouse server (stopped after the
// test) and returns a Manager of its tables, each statement tried once,
// with reg as its registry, and its connection.
func newTestManager(t *testing.T, reg *Registry) (*Manager, driver.Conn) {
	t.Helper()
	s, err := localserver.StartClickHouse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{s.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	once := func(ctx context.Context, _ *slog.Logger, _, _ string, op func(context.Context) error) error {
		return op(ctx)
	}
	return New(conn, nil, slog.Default(), reg, once), conn
}

// TestEngineWhileTablesDrop reads a table's engine while another table of
// its database is created and dropped over and over. 18.16 lists the
// other table in system.tables, then fails to read its definition (code
// 60 naming that table); Engine reads again. A cluster's Distributed
// tables are recreated whenever columns change, so a writer reading its
// sharding key met another writer's DROP this way (CI, TestClusterTwoShards).
func TestEngineWhileTablesDrop(t *testing.T) {
	ctx := context.Background()
	m, conn := newTestManager(t, nil)
	exec := func(q string) {
		if err := conn.Exec(ctx, q); err != nil {
			t.Error(q, err)
		}
	}
	exec("CREATE DATABASE d")
	exec("CREATE TABLE d.kept (id Int32) ENGINE = MergeTree ORDER BY id")

	var stop atomic.Bool
	var wg sync.WaitGroup
	var cycles atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			exec("CREATE TABLE d.churn (id Int32) ENGINE = MergeTree ORDER BY id")
			exec("DROP TABLE d.churn")
			cycles.Add(1)
		}
	}()
	raw := 0 // reads that met a DROP: the test saw the race it is about
	for i := 0; i < 1500 && !t.Failed(); i++ {
		var engine string
		if err := conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = 'd' AND name = 'kept'").Scan(&engine); droppedMeanwhile(err) {
			raw++
		}
		engine, err := m.Engine(ctx, "d", "kept")
		if err != nil || engine == "" {
			t.Errorf("engine of d.kept while d.churn is dropped and created: %q, %v", engine, err)
		}
		if ok, err := m.TableExists(ctx, "d", "kept"); !ok || err != nil {
			t.Errorf("d.kept exists while d.churn is dropped and created: %v, %v", ok, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d create/drop cycles; %d plain reads met a DROP", cycles.Load(), raw)
	if engine, err := m.Engine(ctx, "d", "churn"); engine != "" || err != nil {
		t.Errorf("engine of d.churn, dropped: %q, %v; want none", engine, err)
	}
}
