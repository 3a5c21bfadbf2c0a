// Package sink writes into ClickHouse: one Writer per ClickHouse table
// turns that table's rows, in binlog order, into columnar batches and
// sends them through the native inserter pool (clickhouse-go when a block
// needs converting), straight to a cluster's shards when so configured,
// and applies the table's DDL. A writer reports how far its rows are
// durable (Flushed); it never reads the binlog, never saves a checkpoint,
// and knows no other table.
package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/budget"
	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/retry"
	"github.com/binlog2ch/binlog2ch/schema"
)

// LiveTable reads a MySQL table's current definition, for what the binlog's
// table map lacks (see binlog.Enrich).
type LiveTable func(ctx context.Context, name schema.TableName) (*schema.Table, error)

// ClickHouse is the target every writer shares: the connections, the
// server's capabilities, the cluster's layout, the metrics.
type ClickHouse struct {
	cfg    *config.Config
	log    *slog.Logger
	conn   driver.Conn
	caps   schema.Capabilities
	ins    *chconn.Pool  // native-protocol INSERTs
	layout chconn.Layout // the cluster's shards, for rows routed to them (shards.go)
	m      *metrics.Metrics
	live   LiveTable
	reg    *chtables.Registry // nil: tables are not tracked (no state_dir)
	tables *chtables.Manager  // the ClickHouse tables binlog2ch manages
	up     atomic.Bool        // the last insert, DDL or ping succeeded
	// settings are those binlog2ch may send that the server knows;
	// driverSettings those of clickhouse-go's inserts (settings.go).
	settings       chsettings.Known
	driverSettings clickhouse.Settings
	driverToken    bool // clickhouse-go's inserts take insert_deduplication_token
	// streamOK: the server takes the squashing minimums that keep a stream
	// of batches one part (stream.go).
	streamOK bool
	// afterStreamBlock, in tests, runs after each block a stream sent.
	afterStreamBlock func(s *chnative.Stream, blocks int)
	// beforeStreamEnd, in tests, runs before a stream's data ends.
	beforeStreamEnd func(s *chnative.Stream)
	// blockWait, in tests, runs when a writer holding blocks waits for
	// one to come back, newBlock when it made one more; beforeSendOne
	// before a batch of its own is sent.
	blockWait, newBlock func(blocks int)
	beforeSendOne       func()
	// dropHook runs when a writer drops its table (OnDrop).
	dropHook func(db, table string)
	// budget is the insert rate all writers share (budget.go); caughtUp:
	// the reader has read the binlog's newest events.
	budget   *budget.Budget
	caughtUp atomic.Bool
	// mem is the writers' batch memory (budget.Memory).
	mem *budget.Memory
	// cascadeColumns is told when a writer changes its table's columns
	// (cascade.go).
	cascadeColumns func(schema.TableName)

	// MaxBackoff caps the retry backoff.
	MaxBackoff time.Duration
}

// New connects to the ClickHouse servers and reads what they support.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, m *metrics.Metrics, live LiveTable) (*ClickHouse, error) {
	// The settings that go with each insert are set once the server's
	// are known (useSettings).
	ins := chconn.NewPool(chnative.Options{Addr: cfg.ClickHouse.Addr, User: cfg.ClickHouse.User, Password: cfg.ClickHouse.Password.Reveal(),
		TLS: cfg.ClickHouseTLS(), Compression: chconn.Compression(cfg.ClickHouse.Compression)})
	c := &ClickHouse{cfg: cfg, log: log, ins: ins, m: m, live: live, MaxBackoff: 30 * time.Second}
	c.layout = chconn.Layout{Cluster: cfg.ClickHouse.Cluster, Log: log, Read: func(ctx context.Context) (*chconn.Topology, error) {
		return chconn.ReadTopology(ctx, c.conn, cfg.ClickHouse.Cluster, cfg.ClickHouse.ClusterHosts, cfg.ClickHouse.Addr)
	}}
	var granted func(string)
	var waiting func(int)
	if m != nil {
		granted = func(reason string) { m.BudgetGranted.WithLabelValues(reason).Inc() }
		waiting = func(n int) { m.BudgetWaiting.Set(float64(n)) }
		m.BudgetRate.Set(cfg.Batch.MaxInsertsPerSecond)
	}
	c.budget = budget.New(cfg.Batch.MaxInsertsPerSecond, max(1, int(cfg.Batch.MaxInsertsPerSecond)), granted, waiting)
	c.mem = budget.NewMemory(cfg.Batch.MaxBufferBytes)
	if m != nil {
		c.ins.Metrics = m
		c.mem.Gauge = m.BufferBytes.Set
		m.BufferLimitBytes.Set(float64(cfg.Batch.MaxBufferBytes))
	}
	var err error
	// With the checkpoint in ClickHouse, hosts take turns and each keeps
	// its own registry: one host's may list a table another dropped with
	// MySQL's DROP, which is then a stop (a copy too many), never a silent
	// partial table.
	if cfg.StateDir != "" {
		if c.reg, err = chtables.LoadRegistry(cfg.StateDir); err != nil {
			return nil, err
		}
	}
	if c.conn, err = chconn.Open(ctx, cfg, log); err != nil {
		return nil, err
	}
	c.tables = chtables.New(c.conn, cfg, log, c.reg, c.Retry)
	if c.caps, err = schema.DetectCapabilities(ctx, c.conn); err != nil {
		c.Close()
		return nil, err
	}
	known, err := chsettings.Read(ctx, c.conn)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.useSettings(known)
	c.ins.Opts.Settings = c.nativeSettings
	c.up.Store(true)
	return c, nil
}

// Close closes the connections.
func (c *ClickHouse) Close() {
	c.ins.Close()
	c.conn.Close()
}

// SetCaughtUp says whether the reader has read the binlog's newest
// events: writers then send a batch live_flush_interval after its first
// row when nothing more is queued for its table.
func (c *ClickHouse) SetCaughtUp(v bool) {
	if c.caughtUp.Load() != v {
		c.caughtUp.Store(v)
	}
}

// Conn is the clickhouse-go connection, for queries outside the writers
// (the checkpoint store, the snapshot's checks).
func (c *ClickHouse) Conn() driver.Conn { return c.conn }

// Caps is what the server supports.
func (c *ClickHouse) Caps() schema.Capabilities { return c.caps }

// Up reports whether the last insert, DDL or ping succeeded.
func (c *ClickHouse) Up() bool { return c.up.Load() }

// Ping asks the server whether it answers, and notes it for Up.
func (c *ClickHouse) Ping(ctx context.Context) error {
	err := c.conn.Ping(ctx)
	c.up.Store(err == nil)
	return err
}

// IdleConns is how many native connections wait in the pool: one after a
// clean insert.
func (c *ClickHouse) IdleConns() int { return c.ins.Idle() }

// permanentError marks an error retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// transientCodes are ClickHouse error codes that retrying can fix.
var transientCodes = map[int32]bool{
	3: true, 159: true, 164: true, 202: true, 209: true, 210: true, 241: true, 242: true,
	252: true, 285: true, 319: true, 425: true, 999: true,
}

// transient reports whether retrying may fix err: connection problems and
// overload do; a ClickHouse exception about the statement itself does not.
func transient(err error) bool {
	var p permanentError
	var enc *chconn.EncodeError
	var layout *chconn.LayoutError
	if errors.As(err, &p) || errors.As(err, &enc) || errors.As(err, &layout) {
		return false
	}
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return transientCodes[ex.Code]
	}
	var nex *chnative.Exception
	if errors.As(err, &nex) {
		return transientCodes[nex.Code]
	}
	return true
}

// Retry runs op until it succeeds, with capped exponential backoff, logging
// each failure once. It gives up when ctx ends or on an error retrying
// cannot fix (a ClickHouse exception about the statement itself).
func (c *ClickHouse) Retry(ctx context.Context, log *slog.Logger, stage, what string, op func(context.Context) error) error {
	out := retry.Do(ctx, retry.Policy{
		First: 100 * time.Millisecond, Max: c.MaxBackoff, Log: log, What: what,
		Transient: func(err error) bool {
			// Every failure counts; one retrying may fix says the server is
			// not up.
			c.m.Errors.WithLabelValues(stage).Inc()
			t := transient(err)
			if t {
				c.up.Store(false)
			}
			return t
		},
	}, op)
	switch {
	case out.Err == nil:
		c.up.Store(true)
		if out.Attempts > 1 {
			log.Info(what+" succeeded after retrying", "attempts", out.Attempts)
		}
		return nil
	case out.Interrupted:
		return fmt.Errorf("%s: %w (gave up: %v)", what, out.Err, ctx.Err())
	}
	return out.Err
}
