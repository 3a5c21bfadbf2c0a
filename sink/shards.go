package sink

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

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
)

// Client-side routing (clickhouse.cluster_insert: shards): each block is
// split by the Distributed table's own sharding key, computed here as
// ClickHouse computes it, and each part goes straight into one replica of
// its shard's local table, the shards in parallel. A block counts as sent
// (and the checkpoint may pass it) only once every part is stored.

// topologyTTL is how long the cluster's layout read from system.clusters
// is used before it is read again: a layout change (shards added, weights
// changed) reaches the Distributed table on the servers' config reload,
// and routing must follow it.
const topologyTTL = 10 * time.Second

// topology is the cluster's layout, as the Distributed table routes by it.
type topology struct {
	shards []*shardHosts
	// slots maps hash % len(slots) to a shard index: each shard appears
	// weight times, in shard order, as in ClickHouse's Cluster.
	slots []int
	read  time.Time

	reachOnce sync.Once
	reachErr  error // a shard none of whose replicas answered
}

// reachable checks once per layout that this host reaches a replica of
// every shard: the hosts are as remote_servers names them, which the
// servers resolve and the daemon may not (a container's name, localhost).
func (t *topology) reachable(ctx context.Context, ins *inserters) error {
	t.reachOnce.Do(func() {
		for _, s := range t.shards {
			var errs []string
			for _, addr := range s.replicas {
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				c, err := ins.get(dctx, addr)
				cancel()
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", addr, err))
					continue
				}
				ins.put(addr, c)
				break
			}
			if len(errs) == len(s.replicas) {
				t.reachErr = fmt.Errorf("no replica of shard %d answers from this host (%s); map them to addresses this host reaches in clickhouse.cluster_hosts, or set clickhouse.cluster_insert: distributed", s.num, strings.Join(errs, "; "))
				return
			}
		}
	})
	return t.reachErr
}

// shardHosts is one shard's replicas.
type shardHosts struct {
	num      int      // shard_num
	weight   int      // shard_weight
	replicas []string // host:port, in replica_num order
	// pick is the replica inserts go to; it moves on when one fails, so
	// a replica that is down costs one retry, not every insert.
	pick atomic.Uint32
}

func (s *shardHosts) addr() string {
	return s.replicas[int(s.pick.Load())%len(s.replicas)]
}

// failed moves inserts on from addr to the next replica, unless another
// insert did so already.
func (s *shardHosts) failed(addr string) {
	p := s.pick.Load()
	if s.replicas[int(p)%len(s.replicas)] == addr {
		s.pick.CompareAndSwap(p, p+1)
	}
}

// sameLayout reports whether two topologies route and connect alike.
func (t *topology) sameLayout(o *topology) bool {
	return slices.EqualFunc(t.shards, o.shards, func(a, b *shardHosts) bool {
		return a.num == b.num && a.weight == b.weight && slices.Equal(a.replicas, b.replicas)
	})
}

// clusterLayout caches the topology between reads.
type clusterLayout struct {
	mu         sync.Mutex
	topo       *topology
	refreshing bool
}

// topology returns the cluster's layout. The first call reads it; after
// topologyTTL it is read again in the background while inserts go on by
// the one they have (a server that does not answer must not stall them),
// and a failed read keeps the last layout: the server answering
// system.clusters may be the one that is down.
func (c *ClickHouse) topology(ctx context.Context) (*topology, error) {
	l := &c.layout
	l.mu.Lock()
	old := l.topo
	if old == nil {
		defer l.mu.Unlock()
		t, err := c.readTopology(ctx)
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
		go c.refreshTopology(context.WithoutCancel(ctx), old)
	}
	return old, nil
}

func (c *ClickHouse) refreshTopology(ctx context.Context, old *topology) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t, err := c.readTopology(ctx)
	l := &c.layout
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshing = false
	switch {
	case err != nil:
		c.log.Warn("cannot read the cluster's layout; routing by the last one read", "cluster", c.cfg.ClickHouse.Cluster, "error", err)
		old.read = time.Now()
	case old.sameLayout(t):
		old.read = t.read
	case slices.Equal(old.slots, t.slots) && len(old.shards) == len(t.shards):
		c.log.Info("the cluster's replicas changed", "cluster", c.cfg.ClickHouse.Cluster)
		l.topo = t
	default:
		c.log.Warn("the cluster's shards changed; rows now go where the Distributed table sends them. Rows of a key written before may be on another shard, where FINAL cannot collapse them with the new ones",
			"cluster", c.cfg.ClickHouse.Cluster, "shards", len(t.shards))
		l.topo = t
	}
}

func (c *ClickHouse) readTopology(ctx context.Context) (*topology, error) {
	name := c.cfg.ClickHouse.Cluster
	rows, err := c.conn.Query(ctx, "SELECT shard_num, shard_weight, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", name)
	if err != nil {
		return nil, fmt.Errorf("read cluster %s from system.clusters: %w", name, err)
	}
	defer rows.Close()
	t := &topology{read: time.Now()}
	for rows.Next() {
		var num, weight uint32
		var host string
		var port uint16
		if err := rows.Scan(&num, &weight, &host, &port); err != nil {
			return nil, err
		}
		if n := len(t.shards); n == 0 || t.shards[n-1].num != int(num) {
			t.shards = append(t.shards, &shardHosts{num: int(num), weight: int(weight)})
		}
		s := t.shards[len(t.shards)-1]
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if to, ok := c.cfg.ClickHouse.ClusterHosts[addr]; ok {
			addr = to
		}
		s.replicas = append(s.replicas, addr)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(t.shards) == 0 {
		return nil, permanent(fmt.Errorf("cluster %s is not in system.clusters of ClickHouse %v: define it in the servers' remote_servers", name, c.cfg.ClickHouse.Addr))
	}
	t.slots = slotsOf(t.shards)
	if len(t.slots) == 0 {
		return nil, permanent(fmt.Errorf("cluster %s: every shard has weight 0", name))
	}
	return t, nil
}

// slotsOf lists each shard's index weight times, in shard order.
func slotsOf(shards []*shardHosts) []int {
	var slots []int
	for i, s := range shards {
		for range s.weight {
			slots = append(slots, i)
		}
	}
	return slots
}

// route is how one table's rows reach the shards.
type route struct {
	// hasher computes the sharding key; nil for a table without a key
	// (sharded by rand()), whose blocks go whole to one shard after
	// another.
	hasher *block.KeyHasher
	next   atomic.Uint32
}

// routeFor decides how the rows of blocks like b (its target's) reach a
// cluster: a route straight to the shards, or nil for through the
// Distributed table (no cluster, cluster_insert: distributed, or a table
// the routing cannot serve, which is logged with the reason).
func (c *ClickHouse) routeFor(ctx context.Context, log *slog.Logger, b *block.Block) (*route, error) {
	t := b.Target()
	if t.Options.Cluster == nil || c.cfg.ClickHouse.ClusterInsert != config.ClusterInsertShards {
		return nil, nil
	}
	through := func(reason string) (*route, error) {
		log.Warn("rows of this table go through its Distributed table, not straight to the shards", "reason", reason)
		return nil, nil
	}
	if !b.NativeOK() {
		return through("it has columns binlog2ch writes through clickhouse-go (such as LowCardinality)")
	}
	var engine string
	err := c.Retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) (err error) {
		engine, err = c.tables.Engine(ctx, t.Database, t.ReadName())
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("read the sharding key of %s.%s: %w", t.Database, t.ReadName(), err)
	case engine == "":
		return through(fmt.Sprintf("its Distributed table %s.%s does not exist", t.Database, t.ReadName()))
	}
	cols, keyless, err := chtables.ShardingColumns(engine)
	if err != nil {
		return through(err.Error())
	}
	var topo *topology
	err = c.Retry(ctx, log, metrics.StageSchema, "read the cluster's layout", func(ctx context.Context) (err error) {
		topo, err = c.topology(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := topo.reachable(ctx, c.ins); err != nil {
		return through(err.Error())
	}
	rt := &route{}
	if keyless {
		log.Info("rows go straight to the shards' local tables, each batch to one shard in turn (the sharding key is rand())")
		return rt, nil
	}
	if rt.hasher, err = block.NewKeyHasher(t, cols); err != nil {
		return through(err.Error())
	}
	query, want, err := rt.hasher.KeyHashProbe()
	if err != nil {
		return through(err.Error())
	}
	var got []uint64
	err = c.Retry(ctx, log, metrics.StageSchema, "check ClickHouse's key hash", func(ctx context.Context) error {
		return c.conn.QueryRow(ctx, query).Scan(&got)
	})
	switch {
	case err != nil && transient(err):
		return nil, fmt.Errorf("check ClickHouse's key hash: %w", err)
	case err != nil:
		return through(fmt.Sprintf("ClickHouse cannot hash the key columns (%s): %v", keyText(cols), err))
	case !slices.Equal(got, want):
		return through(fmt.Sprintf("ClickHouse %s hashes (%s) differently from binlog2ch (%v, binlog2ch %v)", c.caps.Version, keyText(cols), got, want))
	}
	log.Info("rows go straight to the shards' local tables", "sharding_key", "cityHash64("+keyText(cols)+")")
	return rt, nil
}

// keyText is the sharding key's arguments, for messages.
func keyText(args []block.KeyArg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Column
		if a.Reinterpret {
			parts[i] = "reinterpretAsString(" + a.Column + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// shardScratch is one sender's buffers for splitting blocks, reused from
// block to block.
type shardScratch struct {
	hashes []uint64
	sel    [][]uint32 // per shard, the block's rows that go there
}

// sendShards sends block b to the shards' local tables, split by route
// rt, the shards in parallel, and returns once every shard stored its
// rows. Each shard's rows are encoded from the block itself (no copy).
func (w *Writer) sendShards(ctx context.Context, job *sendJob) error {
	b, rt, sc := job.block, job.route, job.scratch
	var topo *topology
	err := w.c.Retry(ctx, w.log, metrics.StageInsert, "read the cluster's layout", func(ctx context.Context) (err error) {
		topo, err = w.c.topology(ctx)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case len(topo.shards) == 1:
		return w.sendPart(ctx, topo.shards[0], job, nil)
	case rt.hasher == nil:
		slot := (rt.next.Add(1) - 1) % uint32(len(topo.slots))
		return w.sendPart(ctx, topo.shards[topo.slots[slot]], job, nil)
	}
	if sc.hashes, err = rt.hasher.Hashes(b, sc.hashes); err != nil {
		return permanent(err)
	}
	for len(sc.sel) < len(topo.shards) {
		sc.sel = append(sc.sel, nil)
	}
	sel := sc.sel[:len(topo.shards)]
	for i := range sel {
		sel[i] = sel[i][:0]
	}
	nslots := uint64(len(topo.slots))
	for row, h := range sc.hashes {
		s := topo.slots[h%nslots]
		sel[s] = append(sel[s], uint32(row))
	}
	// The shards' goroutines encode from b at once: its encoders are built
	// here, before them (NativeOK builds them on first use).
	if !b.NativeOK() {
		return permanent(fmt.Errorf("%s: block has columns without a native encoder", b.Target().FullName()))
	}
	// A shard that fails for good cancels the others' retries: the writer
	// stops on it, and the block is sent again whole after a restart.
	// The first error is the cause; the others' are their cancellation.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		cause error
	)
	for i, rows := range sel {
		if len(rows) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.sendPart(ctx, topo.shards[i], job, rows); err != nil {
				once.Do(func() { cause = err })
				cancel()
			}
		}()
	}
	wg.Wait()
	return cause
}

// sendPart sends the rows sel of b (every row when nil) to one of the
// shard's replicas, moving on to the next replica after a failure, until
// one stores them. Rows whose columns the shard's table does not match go
// through the Distributed table instead, whose clickhouse-go insert
// converts.
func (w *Writer) sendPart(ctx context.Context, sh *shardHosts, job *sendJob, sel []uint32) error {
	b := job.block
	t := b.Target()
	rows := b.Rows()
	if sel != nil {
		rows = len(sel)
	}
	return w.c.Retry(ctx, w.log, metrics.StageInsert, "insert into ClickHouse shard "+strconv.Itoa(sh.num), w.counted(func(ctx context.Context) error {
		if w.native(t) {
			addr := sh.addr()
			err := w.c.ins.insertNative(ctx, addr, t.InsertLocalSQL(), b, sel, chsettings.PartToken(batchToken(job), sel))
			// A protocol surprise sends these rows, all of them, through
			// the Distributed table, which puts them on this same shard
			// (see protocolSurprise on rows the shard may already hold).
			if w.protocolSurprise(err) {
				if _, err := w.ambiguous(ctx, job, err, true); err != nil {
					return err
				}
			} else if !w.refuseNative(t, err) {
				if err != nil {
					// Another replica may take the rows; not after a
					// cancel or an error about the statement itself.
					if transient(err) && ctx.Err() == nil {
						sh.failed(addr)
					}
					return fmt.Errorf("%s: %w", addr, err)
				}
				w.c.m.ShardRows.WithLabelValues(strconv.Itoa(sh.num)).Add(float64(rows))
				return nil
			}
		}
		if sel == nil {
			return w.insertDriver(ctx, b, "") // the Distributed table: no token
		}
		part, err := b.Subset(sel)
		if err != nil {
			return permanent(err)
		}
		return w.insertDriver(ctx, part, "")
	}))
}
