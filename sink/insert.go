package sink

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

// inserters is a pool of native-protocol connections for INSERTs, per
// server address ("" for the configured ones). Blocks go out through them,
// encoded straight from the writers' buffers; a block they cannot encode
// goes through clickhouse-go instead.
type inserters struct {
	opts chnative.Options
	// tokenOK reports whether a server takes insert_deduplication_token.
	tokenOK func(chnative.Server) bool
	mu      sync.Mutex
	idle    map[string][]idleConn
	// frames counts the frames sent uncompressed, by reason (nil: none).
	frames func(reason string, n uint64)
}

type idleConn struct {
	c     *chnative.Conn
	since time.Time
}

func newInserters(cfg *config.Config) *inserters {
	// The settings that go with each insert are set once the server's
	// are known (ClickHouse.useSettings).
	opts := chnative.Options{Addr: cfg.ClickHouse.Addr, User: cfg.ClickHouse.User, Password: cfg.ClickHouse.Password.Reveal(),
		TLS: cfg.ClickHouseTLS(), Compression: nativeCompression(cfg.ClickHouse.Compression)}
	return &inserters{opts: opts, idle: map[string][]idleConn{}}
}

// nativeCompression is clickhouse.compression for chnative; config
// refused any other value.
func nativeCompression(v string) chnative.Compression {
	switch v {
	case config.CompressionZSTD:
		return chnative.CompressionZSTD
	case config.CompressionNone:
		return chnative.CompressionNone
	case config.CompressionLZ4Adaptive:
		return chnative.CompressionLZ4Adaptive
	}
	return chnative.CompressionLZ4
}

// get returns a connection to addr ("": the configured servers).
func (p *inserters) get(ctx context.Context, addr string) (*chnative.Conn, error) {
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
	opts := p.opts
	if addr != "" {
		opts.Addr = []string{addr}
	}
	return chnative.Dial(ctx, opts)
}

// put returns a connection to addr that finished an insert cleanly.
func (p *inserters) put(addr string, c *chnative.Conn) {
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

// drop closes the idle connections to addr.
func (p *inserters) drop(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ic := range p.idle[addr] {
		ic.c.Close()
	}
	delete(p.idle, addr)
}

func (p *inserters) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, idle := range p.idle {
		for _, ic := range idle {
			ic.c.Close()
		}
		delete(p.idle, addr)
	}
}

// headerMismatch means the server's table differs from the mapping the
// block was built for; clickhouse-go, which converts by the server's
// types, sends such blocks.
type headerMismatch struct{ detail string }

func (e *headerMismatch) Error() string { return e.detail }

// insertNative sends the rows sel of a block (every row when nil) over a
// pooled native connection to addr ("": the configured servers) with the
// statement query, and the token where the server takes it.
func (p *inserters) insertNative(ctx context.Context, addr, query string, b *block.Block, sel []uint32, token string) error {
	c, err := p.get(ctx, addr)
	if err != nil {
		return err
	}
	var extra []chnative.StringSetting
	if token != "" && p.tokenOK != nil && p.tokenOK(c.Server()) {
		extra = []chnative.StringSetting{{Name: chsettings.TokenName, Value: token}}
	}
	t := b.Target()
	var encodeErr error
	plain, probed := c.UncompressedFrames()
	err = c.Insert(ctx, query, func(cols []chnative.Column) error {
		return checkHeader(t, cols)
	}, func(e *chnative.Encoder) error {
		encodeErr = b.EncodeNativeRows(e, sel)
		return encodeErr
	}, extra...)
	if err != nil {
		// The connection may be mid-query; a new one is cheap. The idle
		// ones likely went the same way (a ClickHouse restart): drop them
		// rather than fail an insert on each.
		c.Close()
		p.drop(addr)
		if encodeErr != nil {
			return permanent(encodeErr) // the batch itself: retrying cannot help
		}
		return err
	}
	p.countFrames(c, plain, probed)
	p.put(addr, c)
	return nil
}

// countFrames counts the frames c sent uncompressed since it had sent plain
// and probed.
func (p *inserters) countFrames(c *chnative.Conn, plain, probed uint64) {
	if p.frames != nil {
		plain2, probed2 := c.UncompressedFrames()
		p.frames(metrics.FramesIncompressible, plain2-plain-(probed2-probed))
		p.frames(metrics.FramesProbe, probed2-probed)
	}
}

// checkHeader compares the columns the server expects with the block's.
func checkHeader(t *schema.Target, cols []chnative.Column) error {
	if len(cols) != len(t.Columns) {
		return &headerMismatch{fmt.Sprintf("ClickHouse expects %d columns, the block has %d", len(cols), len(t.Columns))}
	}
	var diff []string
	for i, c := range cols {
		want := t.Columns[i]
		if c.Name != want.Name || c.Type != want.Type.String() {
			diff = append(diff, fmt.Sprintf("%s %s (binlog2ch: %s %s)", c.Name, c.Type, want.Name, want.Type))
		}
	}
	if len(diff) > 0 {
		return &headerMismatch{"ClickHouse has " + strings.Join(diff, ", ")}
	}
	return nil
}
