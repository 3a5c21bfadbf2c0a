package sink

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chconn"
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
	var topo *chconn.Topology
	err = c.Retry(ctx, log, metrics.StageSchema, "read the cluster's layout", func(ctx context.Context) (err error) {
		topo, err = c.layout.Get(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := topo.Reachable(ctx, c.ins); err != nil {
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
	var topo *chconn.Topology
	err := w.c.Retry(ctx, w.log, metrics.StageInsert, "read the cluster's layout", func(ctx context.Context) (err error) {
		topo, err = w.c.layout.Get(ctx)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case len(topo.Shards) == 1:
		return w.sendPart(ctx, topo.Shards[0], job, nil)
	case rt.hasher == nil:
		slot := (rt.next.Add(1) - 1) % uint32(len(topo.Slots))
		return w.sendPart(ctx, topo.Shards[topo.Slots[slot]], job, nil)
	}
	if sc.hashes, err = rt.hasher.Hashes(b, sc.hashes); err != nil {
		return permanent(err)
	}
	for len(sc.sel) < len(topo.Shards) {
		sc.sel = append(sc.sel, nil)
	}
	sel := sc.sel[:len(topo.Shards)]
	for i := range sel {
		sel[i] = sel[i][:0]
	}
	nslots := uint64(len(topo.Slots))
	for row, h := range sc.hashes {
		s := topo.Slots[h%nslots]
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
			if err := w.sendPart(ctx, topo.Shards[i], job, rows); err != nil {
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
func (w *Writer) sendPart(ctx context.Context, sh *chconn.Shard, job *sendJob, sel []uint32) error {
	b := job.block
	t := b.Target()
	rows := b.Rows()
	if sel != nil {
		rows = len(sel)
	}
	return w.c.Retry(ctx, w.log, metrics.StageInsert, "insert into ClickHouse shard "+strconv.Itoa(sh.Num), w.counted(func(ctx context.Context) error {
		if w.native(t) {
			addr := sh.Addr()
			err := w.c.ins.Insert(ctx, addr, t.InsertLocalSQL(), b, sel, chsettings.PartToken(batchToken(job), sel))
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
						sh.Failed(addr)
					}
					return fmt.Errorf("%s: %w", addr, err)
				}
				w.c.m.ShardRows.WithLabelValues(strconv.Itoa(sh.Num)).Add(float64(rows))
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
