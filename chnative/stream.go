package chnative

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Stream is one INSERT carrying several blocks, each sent when it is
// ready. The server squashes the consecutive blocks of an insert until
// they reach min_insert_block_size_rows or _bytes (18.16's
// InterpreterInsertQuery and current servers' squashing alike), so ten
// 100k-row blocks cost it one part, its sort and its merges, instead of
// ten. Below those minimums it holds the rows in memory and stores them
// when the data ends. Abort cuts the connection so that the server stores
// none of them; a connection closed cleanly (a FIN: the process exiting)
// ends the data on 18.16, which then stores the blocks it had. The caller
// keeps the stream under the minimums it sends (Options.Settings).
//
// Every data packet is kept as it went out, compressed, so that Resume can
// send the same blocks again on another connection after a failure,
// without the rows they were encoded from.
type Stream struct {
	c     *Conn
	query string
	extra []StringSetting
	rec   *Recording
	w     *bufio.Writer // the connection's writes, through rec
	// method is the compression rec's frames are in.
	method Compression
}

// Recording keeps a stream's data packets in chunks it reuses from one
// stream to the next: no copy when it grows, no fresh (zeroed) memory for
// each stream. The chunks are mapped outside Go's heap: tens of MiB that
// live as long as a catch-up would otherwise raise the collector's target
// by half as much again (GOGC 50), and Release gives them back at once.
type Recording struct {
	chunks [][]byte // full ones, then the one being filled
	spares *spares  // nil: its own
	size   int
}

// spares are emptied chunks that the recordings sharing them take from
// and give back to.
type spares struct{ chunks [][]byte }

// Recordings are two recordings used in turn, sharing their emptied
// chunks: while one stream's end is awaited, its recording is kept and the
// next stream fills the other; the two hold the chunks of the most both
// held at once, not each the chunks of its own largest. One goroutine uses
// them, but for reading the recording of a stream being ended.
type Recordings struct {
	spares spares
	recs   [2]Recording
}

// Other is the recording that is not busy, reset.
func (rs *Recordings) Other(busy *Recording) *Recording {
	r := &rs.recs[0]
	if r == busy {
		r = &rs.recs[1]
	}
	r.spares = &rs.spares
	r.Reset()
	return r
}

// Release gives both recordings' chunks back to the system.
func (rs *Recordings) Release() {
	for i := range rs.recs {
		rs.recs[i].spares = &rs.spares
		rs.recs[i].Release()
	}
}

func (r *Recording) pool() *spares {
	if r.spares == nil {
		r.spares = &spares{}
	}
	return r.spares
}

const recordChunk = 1 << 20

// Len is the bytes recorded.
func (r *Recording) Len() int { return r.size }

// Reset empties r, keeping its chunks for the next stream.
func (r *Recording) Reset() {
	sp := r.pool()
	for _, c := range r.chunks {
		sp.chunks = append(sp.chunks, c[:0])
	}
	r.chunks, r.size = r.chunks[:0], 0
}

// Release gives r's chunks back to the system; r may record again.
func (r *Recording) Release() {
	sp := r.pool()
	for _, c := range append(r.chunks, sp.chunks...) {
		_ = syscall.Munmap(c[:cap(c)])
	}
	sp.chunks = nil
	*r = Recording{spares: sp}
}

// newChunk maps a chunk, or makes one on the heap if mapping fails.
func newChunk() []byte {
	b, err := syscall.Mmap(-1, 0, recordChunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b[:0]
}

// errNoMemory: a chunk could not be mapped.
var errNoMemory = errors.New("chnative: cannot map memory for a stream's recording")

func (r *Recording) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if k := len(r.chunks); k == 0 || len(r.chunks[k-1]) == cap(r.chunks[k-1]) {
			var c []byte
			if sp := r.pool(); len(sp.chunks) > 0 {
				m := len(sp.chunks)
				c, sp.chunks = sp.chunks[m-1], sp.chunks[:m-1]
			} else if c = newChunk(); c == nil {
				return 0, errNoMemory
			}
			r.chunks = append(r.chunks, c)
		}
		last := &r.chunks[len(r.chunks)-1]
		m := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:m]...)
		p = p[m:]
	}
	r.size += n
	return n, nil
}

// truncate drops what was recorded after the first n bytes.
func (r *Recording) truncate(n int) {
	for r.size > n {
		last := &r.chunks[len(r.chunks)-1]
		drop := min(r.size-n, len(*last))
		*last = (*last)[:len(*last)-drop]
		r.size -= drop
		if len(*last) == 0 {
			sp := r.pool()
			sp.chunks = append(sp.chunks, *last)
			r.chunks = r.chunks[:len(r.chunks)-1]
		}
	}
}

// writeTo writes what r holds to w.
func (r *Recording) writeTo(w io.Writer) error {
	for _, c := range r.chunks {
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	return nil
}

// tee writes to w and records what it wrote.
type tee struct {
	w   io.Writer
	rec *Recording
}

func (t *tee) Write(p []byte) (int, error) {
	if _, err := t.rec.Write(p); err != nil {
		return 0, err
	}
	return t.w.Write(p)
}

// Begin runs query, "INSERT INTO db.t (columns)", as Insert does, and
// returns the stream its blocks go into, recorded into rec (empty). After
// any error the connection must be closed.
func (c *Conn) Begin(ctx context.Context, query string, header func([]Column) error, rec *Recording, extra ...StringSetting) (*Stream, error) {
	s := &Stream{c: c, query: query, extra: extra, rec: rec, method: c.opts.Compression}
	s.w = bufio.NewWriterSize(&tee{w: c.conn, rec: rec}, 64<<10)
	if err := c.guard(ctx, func() error { return c.begin(ctx, query, header, extra) }); err != nil {
		return nil, err
	}
	return s, nil
}

// Block writes one block, body as Insert's, and flushes it to the server.
func (s *Stream) Block(ctx context.Context, body func(*Encoder) error) error {
	c := s.c
	return c.guard(ctx, func() error {
		if err := c.extendDeadline(ctx); err != nil {
			return err
		}
		c.enc.w = s.w
		defer func() { c.enc.w = c.w }()
		// A block that failed half-way is not recorded: Resume sends
		// whole blocks only, and the caller sends this one again.
		mark := s.rec.Len()
		err := c.block(body)
		if err == nil {
			err = s.w.Flush()
		}
		if err != nil {
			s.w.Reset(&tee{w: c.conn, rec: s.rec})
			s.rec.truncate(mark)
		}
		return err
	})
}

// Commit ends the data and returns when the server has stored every block.
func (s *Stream) Commit(ctx context.Context) error {
	return s.c.guard(ctx, func() error { return s.c.finish(ctx) })
}

// Abort closes the connection with a reset rather than a FIN, so that the
// server drops the blocks it holds instead of storing them.
func (s *Stream) Abort() {
	if tc, ok := s.c.raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	s.c.Close()
}

// Sends reports whether c sends the setting name with its queries
// (Options.Settings chose it for c's server).
func (c *Conn) Sends(name string) bool {
	for _, s := range c.settings {
		if s.Name == name {
			return true
		}
	}
	return false
}

// Conn is the connection s is on, to be reused once Commit returned.
func (s *Stream) Conn() *Conn { return s.c }

// Recorded is the size of the data packets sent so far.
func (s *Stream) Recorded() int { return s.rec.Len() }

// Resume begins s's INSERT again on c (a new connection after s failed)
// and sends the blocks s recorded, as they went out: the same query and
// settings, the server's columns checked by header again. More blocks may
// follow on the stream it returns, which records into s's recording.
//
// The recording is framed as s's connection compressed, which with
// CompressionAuto a connection to another of the servers may not: c
// takes s's compression from here on (any server reads any of them).
func (c *Conn) Resume(ctx context.Context, s *Stream, header func([]Column) error) (*Stream, error) {
	c.opts.Compression, c.enc.method = s.method, s.method
	n := &Stream{c: c, query: s.query, extra: s.extra, rec: s.rec, method: s.method}
	n.w = bufio.NewWriterSize(&tee{w: c.conn, rec: n.rec}, 64<<10)
	err := c.guard(ctx, func() error {
		if err := c.begin(ctx, n.query, header, n.extra); err != nil {
			return err
		}
		if err := n.rec.writeTo(c.w); err != nil {
			return err
		}
		return c.w.Flush()
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}
