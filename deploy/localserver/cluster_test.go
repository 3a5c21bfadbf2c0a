package localserver

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

func chConn(t *testing.T, s *Server) clickhouse.Conn {
	t.Helper()
	c, err := clickhouse.Open(&clickhouse.Options{Addr: []string{s.Addr()}, Auth: clickhouse.Auth{Username: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestClusterReplicates starts one shard of two replicas and checks what
// binlog2ch relies on: ON CLUSTER DDL reaches both servers (CREATE, ALTER,
// TRUNCATE, RENAME, DROP), a replicated table copies rows between them, a
// Distributed table reads them, and 18.16 refuses ALTER ... ON CLUSTER on
// that Distributed table (so binlog2ch recreates it instead).
func TestClusterReplicates(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := StartCluster(ctx, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Logf("cluster up in %s", time.Since(start))
	a, b := chConn(t, c.Shards[0][0]), chConn(t, c.Shards[0][1])
	exec := func(q string) {
		t.Helper()
		if err := a.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE IF NOT EXISTS d ON CLUSTER binlog2ch")
	exec("CREATE TABLE IF NOT EXISTS d.t ON CLUSTER binlog2ch (k UInt64, v String, _version UInt64) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', _version) ORDER BY k")
	exec("CREATE TABLE IF NOT EXISTS d.t_all ON CLUSTER binlog2ch AS d.t ENGINE = Distributed(binlog2ch, d, t, cityHash64(k))")
	exec("ALTER TABLE d.t ON CLUSTER binlog2ch ADD COLUMN w String")
	if err := a.Exec(ctx, "ALTER TABLE d.t_all ON CLUSTER binlog2ch ADD COLUMN w String"); err == nil || !strings.Contains(err.Error(), "isn't replicated") {
		t.Errorf("ALTER ON CLUSTER of a Distributed table: got %v, want 18.16's code 371 (binlog2ch relies on recreating it)", err)
	}
	batch, err := a.PrepareBatch(ctx, "INSERT INTO d.t (k, v, _version, w)")
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Append(uint64(1), "one", uint64(1), "x"); err != nil {
		t.Fatal(err)
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	var n uint64
	deadline := time.Now().Add(20 * time.Second)
	for n == 0 && time.Now().Before(deadline) {
		if err := b.QueryRow(ctx, "SELECT count() FROM d.t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n != 1 {
		t.Fatalf("the second replica has %d rows, want 1", n)
	}
	if err := b.QueryRow(ctx, "SELECT count() FROM d.t_all FINAL").Scan(&n); err != nil || n != 1 {
		t.Fatalf("through the Distributed table: %d rows (%v), want 1", n, err)
	}
	exec("TRUNCATE TABLE IF EXISTS d.t ON CLUSTER binlog2ch")
	exec("RENAME TABLE d.t TO d.t2 ON CLUSTER binlog2ch")
	exec("DROP TABLE IF EXISTS d.t2 ON CLUSTER binlog2ch")
	if err := b.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = 'd' AND name LIKE 't%' AND engine != 'Distributed'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the second replica still has %d local tables after DROP ON CLUSTER (%v)", n, err)
	}
	zk := c.ZooKeeper
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(zk.Dir); !os.IsNotExist(err) {
		t.Errorf("ZooKeeper's directory %s is left after Stop", zk.Dir)
	}
}
