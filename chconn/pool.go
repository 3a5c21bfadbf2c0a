// Package chconn is how binlog2ch reaches ClickHouse servers:
// clickhouse-go's connection (connect.go), native-protocol connections for
// inserts pooled per server address, the check of the columns a server
// expects against a block's, and a cluster's shards and replicas
// (system.clusters), where blocks split by their sharding key go. It sends
// what it is given and never retries: the sink decides that.
package chconn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

const (
	// maxIdleInserters bounds the native connections kept open between
	// inserts; ClickHouse holds a thread per open connection.
	maxIdleInserters = 8
	// maxIdleTime is how long an idle connection is kept: longer, and the
	// server (or a load balancer) may have dropped it, which would turn
	// the next insert into a failure and a retry.
	maxIdleTime = 30 * time.Second
)

// Pool is a pool of native-protocol connections for INSERTs, per server
// address ("" for the configured ones). Blocks go out through them,
// encoded straight from the writers' buffers.
type Pool struct {
	Opts chnative.Options
	// TokenOK reports whether a server takes insert_deduplication_token.
	TokenOK func(chnative.Server) bool
	// Metrics counts the connections opened, by how their inserts travel,
	// and the frames sent uncompressed (nil: none).
	Metrics *metrics.Metrics
	mu      sync.Mutex
	idle    map[string][]idleConn
}

type idleConn struct {
	c     *chnative.Conn
	since time.Time
}

// NewPool returns a pool of connections opened with opts.
func NewPool(opts chnative.Options) *Pool {
	return &Pool{Opts: opts, idle: map[string][]idleConn{}}
}

// Compression is clickhouse.compression for chnative; config refused any
// other value.
func Compression(v string) chnative.Compression {
	switch v {
	case config.CompressionZSTD:
		return chnative.CompressionZSTD
	case config.CompressionNone:
		return chnative.CompressionNone
	case config.CompressionLZ4Adaptive:
		return chnative.CompressionLZ4Adaptive
	case config.CompressionAuto:
		return chnative.CompressionAuto
	}
	return chnative.CompressionLZ4
}

// Get returns a connection to addr ("": the configured servers).
func (p *Pool) Get(ctx context.Context, addr string) (*chnative.Conn, error) {
	p.mu.Lock()
	idle := p.idle[addr]
	for n := len(idle); n > 0; n-- {
		ic := idle[n-1]
		idle = idle[:n-1]
		p.idle[addr] = idle
		if time.Since(ic.since) < maxIdleTime {
			p.mu.Unlock()
			return ic.c, nil
		}
		ic.c.Close()
	}
	p.mu.Unlock()
	opts := p.Opts
	if addr != "" {
		opts.Addr = []string{addr}
	}
	c, err := chnative.Dial(ctx, opts)
	if err == nil && p.Metrics != nil {
		p.Metrics.InsertConnections.WithLabelValues(c.Compression().String()).Inc()
	}
	return c, err
}

// Put returns a connection to addr that finished an insert cleanly.
func (p *Pool) Put(addr string, c *chnative.Conn) {
	p.mu.Lock()
	if len(p.idle[addr]) < maxIdleInserters {
		p.idle[addr] = append(p.idle[addr], idleConn{c, time.Now()})
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Drop closes the idle connections to addr.
func (p *Pool) Drop(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ic := range p.idle[addr] {
		ic.c.Close()
	}
	delete(p.idle, addr)
}

// Close closes every idle connection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, idle := range p.idle {
		for _, ic := range idle {
			ic.c.Close()
		}
		delete(p.idle, addr)
	}
}

// HeaderMismatch means the server's table differs from the mapping the
// block was built for; clickhouse-go, which converts by the server's
// types, sends such blocks.
type HeaderMismatch struct{ Detail string }

func (e *HeaderMismatch) Error() string { return e.Detail }

// EncodeError is a block that could not be encoded: sending it again
// cannot help.
type EncodeError struct{ Err error }

func (e *EncodeError) Error() string { return e.Err.Error() }
func (e *EncodeError) Unwrap() error { return e.Err }

// Idle is how many connections the pool keeps open between inserts.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, idle := range p.idle {
		n += len(idle)
	}
	return n
}

// Insert sends the rows sel of a block (every row when nil) over a
// pooled native connection to addr ("": the configured servers) with the
// statement query, and the token where the server takes it.
func (p *Pool) Insert(ctx context.Context, addr, query string, b *block.Block, sel []uint32, token string) error {
	c, err := p.Get(ctx, addr)
	if err != nil {
		return err
	}
	var extra []chnative.StringSetting
	if token != "" && p.TokenOK != nil && p.TokenOK(c.Server()) {
		extra = []chnative.StringSetting{{Name: chsettings.TokenName, Value: token}}
	}
	t := b.Target()
	var encodeErr error
	plain, probed := c.UncompressedFrames()
	err = c.Insert(ctx, query, func(cols []chnative.Column) error {
		return CheckHeader(t, cols)
	}, func(e *chnative.Encoder) error {
		encodeErr = b.EncodeNativeRows(e, sel)
		return encodeErr
	}, extra...)
	if err != nil {
		// The connection may be mid-query; a new one is cheap. The idle
		// ones likely went the same way (a ClickHouse restart): drop them
		// rather than fail an insert on each.
		c.Close()
		p.Drop(addr)
		if encodeErr != nil {
			return &EncodeError{encodeErr} // the batch itself
		}
		return err
	}
	p.CountFrames(c, plain, probed)
	p.Put(addr, c)
	return nil
}

// CountFrames counts the frames c sent uncompressed since it had sent
// plain and probed.
func (p *Pool) CountFrames(c *chnative.Conn, plain, probed uint64) {
	if p.Metrics == nil {
		return
	}
	plain2, probed2 := c.UncompressedFrames()
	if n := plain2 - plain - (probed2 - probed); n > 0 {
		p.Metrics.UncompressedFrames.WithLabelValues(metrics.FramesIncompressible).Add(float64(n))
	}
	if n := probed2 - probed; n > 0 {
		p.Metrics.UncompressedFrames.WithLabelValues(metrics.FramesProbe).Add(float64(n))
	}
}

// CheckHeader compares the columns the server expects with the block's.
func CheckHeader(t *schema.Target, cols []chnative.Column) error {
	if len(cols) != len(t.Columns) {
		return &HeaderMismatch{fmt.Sprintf("ClickHouse expects %d columns, the block has %d", len(cols), len(t.Columns))}
	}
	var diff []string
	for i, c := range cols {
		want := t.Columns[i]
		if c.Name != want.Name || c.Type != want.Type.String() {
			diff = append(diff, fmt.Sprintf("%s %s (binlog2ch: %s %s)", c.Name, c.Type, want.Name, want.Type))
		}
	}
	if len(diff) > 0 {
		return &HeaderMismatch{"ClickHouse has " + strings.Join(diff, ", ")}
	}
	return nil
}
