package chconn

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// topologyTTL is how long the cluster's layout read from system.clusters
// is used before it is read again: a layout change (shards added, weights
// changed) reaches the Distributed table on the servers' config reload,
// and routing must follow it.
const topologyTTL = 10 * time.Second

// Topology is the cluster's layout, as the Distributed table routes by it.
type Topology struct {
	Shards []*Shard
	// Slots maps hash % len(slots) to a shard index: each shard appears
	// weight times, in shard order, as in ClickHouse's Cluster.
	Slots []int
	read  time.Time

	reachOnce sync.Once
	reachErr  error // a shard none of whose replicas answered
}

// Reachable checks once per layout that this host reaches a replica of
// every shard: the hosts are as remote_servers names them, which the
// servers resolve and the daemon may not (a container's name, localhost).
func (t *Topology) Reachable(ctx context.Context, ins *Pool) error {
	t.reachOnce.Do(func() {
		for _, s := range t.Shards {
			var errs []string
			for _, addr := range s.Replicas {
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				c, err := ins.Get(dctx, addr)
				cancel()
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", addr, err))
					continue
				}
				ins.Put(addr, c)
				break
			}
			if len(errs) == len(s.Replicas) {
				t.reachErr = fmt.Errorf("no replica of shard %d answers from this host (%s); map them to addresses this host reaches in clickhouse.cluster_hosts, or set clickhouse.cluster_insert: distributed", s.Num, strings.Join(errs, "; "))
				return
			}
		}
	})
	return t.reachErr
}

// Shard is one shard's replicas.
type Shard struct {
	Num      int      // shard_num
	Weight   int      // shard_weight
	Replicas []string // host:port, in replica_num order
	// pick is the replica inserts go to; it moves on when one fails, so
	// a replica that is down costs one retry, not every insert.
	pick atomic.Uint32
}

// Addr is the replica inserts go to now.
func (s *Shard) Addr() string {
	return s.Replicas[int(s.pick.Load())%len(s.Replicas)]
}

// Failed moves inserts on from addr to the next replica, unless another
// insert did so already.
func (s *Shard) Failed(addr string) {
	p := s.pick.Load()
	if s.Replicas[int(p)%len(s.Replicas)] == addr {
		s.pick.CompareAndSwap(p, p+1)
	}
}

// sameLayout reports whether two topologies route and connect alike.
func (t *Topology) sameLayout(o *Topology) bool {
	return slices.EqualFunc(t.Shards, o.Shards, func(a, b *Shard) bool {
		return a.Num == b.Num && a.Weight == b.Weight && slices.Equal(a.Replicas, b.Replicas)
	})
}

// Layout caches a cluster's topology between reads of system.clusters.
type Layout struct {
	Cluster string
	Log     *slog.Logger
	// Read reads the topology (ReadTopology, on the sink's connection).
	Read       func(context.Context) (*Topology, error)
	mu         sync.Mutex
	topo       *Topology
	refreshing bool
}

// Get returns the cluster's layout. The first call reads it; after
// topologyTTL it is read again in the background while inserts go on by
// the one they have (a server that does not answer must not stall them),
// and a failed read keeps the last layout: the server answering
// system.clusters may be the one that is down.
func (l *Layout) Get(ctx context.Context) (*Topology, error) {
	l.mu.Lock()
	old := l.topo
	if old == nil {
		defer l.mu.Unlock()
		t, err := l.Read(ctx)
		if err != nil {
			return nil, err
		}
		l.topo = t
		return t, nil
	}
	stale := time.Since(old.read) >= topologyTTL && !l.refreshing
	if stale {
		l.refreshing = true
	}
	l.mu.Unlock()
	if stale {
		go l.refresh(context.WithoutCancel(ctx), old)
	}
	return old, nil
}

func (l *Layout) refresh(ctx context.Context, old *Topology) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t, err := l.Read(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshing = false
	switch {
	case err != nil:
		l.Log.Warn("cannot read the cluster's layout; routing by the last one read", "cluster", l.Cluster, "error", err)
		old.read = time.Now()
	case old.sameLayout(t):
		old.read = t.read
	case slices.Equal(old.Slots, t.Slots) && len(old.Shards) == len(t.Shards):
		l.Log.Info("the cluster's replicas changed", "cluster", l.Cluster)
		l.topo = t
	default:
		l.Log.Warn("the cluster's shards changed; rows now go where the Distributed table sends them. Rows of a key written before may be on another shard, where FINAL cannot collapse them with the new ones",
			"cluster", l.Cluster, "shards", len(t.Shards))
		l.topo = t
	}
}

// LayoutError is a cluster whose layout no retry can fix.
type LayoutError struct{ Msg string }

func (e *LayoutError) Error() string { return e.Msg }

// ReadTopology reads cluster's layout from system.clusters through conn,
// its hosts mapped by hosts (clickhouse.cluster_hosts); addrs are the
// configured servers, for messages.
func ReadTopology(ctx context.Context, conn driver.Conn, cluster string, hosts map[string]string, addrs []string) (*Topology, error) {
	rows, err := conn.Query(ctx, "SELECT shard_num, shard_weight, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", cluster)
	if err != nil {
		return nil, fmt.Errorf("read cluster %s from system.clusters: %w", cluster, err)
	}
	defer rows.Close()
	t := &Topology{read: time.Now()}
	for rows.Next() {
		var num, weight uint32
		var host string
		var port uint16
		if err := rows.Scan(&num, &weight, &host, &port); err != nil {
			return nil, err
		}
		if n := len(t.Shards); n == 0 || t.Shards[n-1].Num != int(num) {
			t.Shards = append(t.Shards, &Shard{Num: int(num), Weight: int(weight)})
		}
		s := t.Shards[len(t.Shards)-1]
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if to, ok := hosts[addr]; ok {
			addr = to
		}
		s.Replicas = append(s.Replicas, addr)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(t.Shards) == 0 {
		return nil, &LayoutError{fmt.Sprintf("cluster %s is not in system.clusters of ClickHouse %v: define it in the servers' remote_servers", cluster, addrs)}
	}
	t.Slots = SlotsOf(t.Shards)
	if len(t.Slots) == 0 {
		return nil, &LayoutError{fmt.Sprintf("cluster %s: every shard has weight 0", cluster)}
	}
	return t, nil
}

// SlotsOf lists each shard's index weight times, in shard order.
func SlotsOf(shards []*Shard) []int {
	var slots []int
	for i, s := range shards {
		for range s.Weight {
			slots = append(slots, i)
		}
	}
	return slots
}
