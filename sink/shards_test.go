package sink

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
	s1 := &shardHosts{num: 1, weight: 1, replicas: []string{"a:9000", "b:9000"}}
	s2 := &shardHosts{num: 2, weight: 2, replicas: []string{"c:9000"}}
	topo := &topology{shards: []*shardHosts{s1, s2}}
	topo.slots = slotsOf(topo.shards)
	if got := topo.slots; len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 1 {
		t.Errorf("slots %v, want [0 1 1]", got)
	}
	if s1.addr() != "a:9000" {
		t.Fatalf("first replica %s", s1.addr())
	}
	s1.failed("a:9000")
	s1.failed("a:9000") // a second insert that failed on the same replica
	if s1.addr() != "b:9000" {
		t.Errorf("after a failure inserts go to %s, want b:9000", s1.addr())
	}
	s1.failed("b:9000")
	if s1.addr() != "a:9000" {
		t.Errorf("after both failed inserts go to %s, want a:9000 again", s1.addr())
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
	topo := &topology{shards: []*shardHosts{{num: 2, weight: 1, replicas: []string{addr}}}}
	err = topo.reachable(context.Background(), &inserters{opts: chnative.Options{User: "default"}, idle: map[string][]idleConn{}})
	if err == nil || !strings.Contains(err.Error(), "no replica of shard 2 answers from this host ("+addr) ||
		!strings.Contains(err.Error(), "clickhouse.cluster_hosts, or set clickhouse.cluster_insert: distributed") {
		t.Errorf("got %v", err)
	}
}
