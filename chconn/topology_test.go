package chconn

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/chnative"
)

// TestTopologySlots: slots follow shard weights in shard order, as
// ClickHouse's Cluster lays them out.
func TestTopologySlots(t *testing.T) {
	s1 := &Shard{Num: 1, Weight: 1, Replicas: []string{"a:9000", "b:9000"}}
	s2 := &Shard{Num: 2, Weight: 2, Replicas: []string{"c:9000"}}
	topo := &Topology{Shards: []*Shard{s1, s2}}
	topo.Slots = SlotsOf(topo.Shards)
	if got := topo.Slots; len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 1 {
		t.Errorf("slots %v, want [0 1 1]", got)
	}
	if s1.Addr() != "a:9000" {
		t.Fatalf("first replica %s", s1.Addr())
	}
	s1.Failed("a:9000")
	s1.Failed("a:9000") // a second insert that failed on the same replica
	if s1.Addr() != "b:9000" {
		t.Errorf("after a failure inserts go to %s, want b:9000", s1.Addr())
	}
	s1.Failed("b:9000")
	if s1.Addr() != "a:9000" {
		t.Errorf("after both failed inserts go to %s, want a:9000 again", s1.Addr())
	}
}

// TestUnreachableShard: a shard none of whose replicas this host reaches
// is reported with the addresses and what to do.
func TestUnreachableShard(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	topo := &Topology{Shards: []*Shard{{Num: 2, Weight: 1, Replicas: []string{addr}}}}
	err = topo.Reachable(context.Background(), NewPool(chnative.Options{User: "default"}))
	if err == nil || !strings.Contains(err.Error(), "no replica of shard 2 answers from this host ("+addr) ||
		!strings.Contains(err.Error(), "clickhouse.cluster_hosts, or set clickhouse.cluster_insert: distributed") {
		t.Errorf("got %v", err)
	}
}
