package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// wire reads the binlog stream's packets off the socket once the dump
// command is sent. go-mysql's packet reader copied each byte three times
// (its bufio, its 16 KiB copy buffer, the event's) and set a read
// deadline, with a clock read, twice per packet. Here large reads fill
// one read buffer, each packet's payload is copied once from it into a
// buffer of its own size (a pooled one where the stream handed one back),
// and the deadline is set once per read of the socket. A rows event of a
// skipped table is not copied at all: it is read where it lies in the
// read buffer (a slab), which is not read into again until every such
// event in it is handed back (Conn.skipBuffered). The framing is
// MySQL's: a 3-byte length and a sequence id, a payload of 0xffffff bytes
// continued in the next packet. Compression of the protocol is never
// negotiated by binlog2ch (Read refuses a connection that has it); TLS is
// the net.Conn's own.
type wire struct {
	nc      net.Conn
	timeout time.Duration // each read waits at most this long (0: no deadline)
	seq     uint8
	cur     *slab  // the read buffer
	buf     []byte // cur.b
	r, w    int    // the unread bytes are buf[r:w]
	pool    *bufferPool
	// behind: the events read are older than catchingUp (Conn.read
	// says); short: the last read brought less than paceBytes. now is
	// the clock at the last read, in Unix seconds.
	behind, short bool
	now           int64
}

// While the stream catches up, a read that found little in the socket
// is followed by a pause of paceWait before the next: the server sends
// its binlog in pieces of its network buffer (16 KiB), and a reader that
// keeps up with it read each piece alone, each read a system call, a
// window update sent back and a wake-up (about half of the CPU of
// reading a table nobody replicates). The events already read are
// handed on before the pause; at the binlog's end (events newer than
// catchingUp) there is none.
const (
	paceBytes  = 64 << 10
	paceWait   = time.Millisecond
	catchingUp = 2 // seconds
)

// readBufferSize is the read buffer: a read takes what the socket holds
// up to it; a payload larger than half of it is read straight into its
// own buffer.
const readBufferSize = 256 << 10

func newWire(nc net.Conn, seq uint8, timeout time.Duration, pool *bufferPool) *wire {
	cur := pool.getSlab()
	return &wire{nc: nc, seq: seq, timeout: timeout, cur: cur, buf: cur.b, pool: pool}
}

// slab is a read buffer that the events read at their header may lie in
// (Conn.skipBuffered): refs counts the wire's reference while it reads into
// it and one for each such event not yet handed back; the last release
// gives it to the pool. Every other event is copied out of it.
type slab struct {
	b    []byte
	refs atomic.Int32
	pool *bufferPool
}

// release drops one reference.
func (s *slab) release() {
	if s.refs.Add(-1) == 0 {
		s.pool.putSlab(s)
	}
}

// packet reads the next packet into the read buffer and returns its
// payload where it lies there, unless it is larger than half the buffer,
// is continued in another packet or has another sequence id than the one
// due (next then reads it, or reports what is wrong); take then consumes
// it.
func (c *wire) packet() ([]byte, bool, error) {
	if err := c.fill(4); err != nil {
		return nil, false, err
	}
	h := c.buf[c.r:]
	length := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if length >= mysql.MaxPayloadLen || 4+length > len(c.buf)/2 || h[3] != c.seq {
		return nil, false, nil
	}
	if err := c.fill(4 + length); err != nil {
		return nil, false, err
	}
	start := c.r + 4
	return c.buf[start : start+length : start+length], true, nil
}

// take consumes the packet p, which packet returned, for an event that
// keeps referring to it: the read buffer it lies in is not read into
// again until the event releases it.
func (c *wire) take(p []byte) *slab {
	c.r += 4 + len(p)
	c.seq++
	c.cur.refs.Add(1)
	return c.cur
}

// next returns the next packet's payload (continuations joined), in a
// buffer nothing else refers to: the caller owns it, and may hand it back
// to the pool once nothing reads it.
func (c *wire) next() ([]byte, error) {
	length, err := c.header()
	if err != nil {
		return nil, err
	}
	size := length
	if length == mysql.MaxPayloadLen {
		// A large event continued over packets: its header gives its
		// whole size (OK byte, then the event's size at offset 9).
		if err := c.fill(14); err != nil {
			return nil, err
		}
		if s := int(binary.LittleEndian.Uint32(c.buf[c.r+10:])); c.buf[c.r] == mysql.OK_HEADER && s < 1<<30 {
			size = max(size, 1+s)
		}
	}
	p := c.pool.get(size)[:0]
	for {
		if p, err = c.payload(p, length); err != nil {
			return nil, err
		}
		if length < mysql.MaxPayloadLen {
			return p, nil
		}
		if length, err = c.header(); err != nil {
			return nil, err
		}
	}
}

// header reads a packet header and checks its sequence id.
func (c *wire) header() (int, error) {
	if err := c.fill(4); err != nil {
		return 0, err
	}
	h := c.buf[c.r:]
	length, seq := int(h[0])|int(h[1])<<8|int(h[2])<<16, h[3]
	c.r += 4
	if seq != c.seq {
		return 0, fmt.Errorf("binlog stream: packet sequence %d, want %d", seq, c.seq)
	}
	c.seq++
	return length, nil
}

// payload appends n bytes of payload to p: those buffered, then, for a
// large rest, straight from the socket.
func (c *wire) payload(p []byte, n int) ([]byte, error) {
	for n > 0 {
		if c.r == c.w {
			if n > len(c.buf)/2 {
				start := len(p)
				p = slices.Grow(p, n)[:start+n]
				if err := c.readFull(p[start:]); err != nil {
					return nil, err
				}
				return p, nil
			}
			if err := c.fill(1); err != nil {
				return nil, err
			}
		}
		k := min(n, c.w-c.r)
		p = append(p, c.buf[c.r:c.r+k]...)
		c.r += k
		n -= k
	}
	return p, nil
}

// ready reports whether a whole packet is buffered: the reader hands on
// what it has before a read that may wait.
func (c *wire) ready() bool {
	if c.w-c.r < 4 {
		return false
	}
	h := c.buf[c.r:]
	return c.w-c.r >= 4+(int(h[0])|int(h[1])<<8|int(h[2])<<16)
}

// fill reads until n bytes are buffered, moving the unread ones to the
// front first when the buffer's end is near.
func (c *wire) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	switch {
	case c.r != c.w && len(c.buf)-c.r >= n+4096:
	case c.cur.refs.Load() > 1:
		// Events still lie in the buffer (take): the unread bytes move
		// to another, and this one goes to the pool once they are done.
		next := c.pool.getSlab()
		c.w = copy(next.b, c.buf[c.r:c.w])
		c.r = 0
		old := c.cur
		c.cur, c.buf = next, next.b
		old.release()
	case c.r == c.w:
		c.r, c.w = 0, 0
	default:
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	for c.w-c.r < n {
		k, err := c.read(c.buf[c.w:])
		c.w += k
		if err != nil && c.w-c.r < n {
			return err
		}
	}
	return nil
}

func (c *wire) readFull(p []byte) error {
	for len(p) > 0 {
		k, err := c.read(p)
		p = p[k:]
		if err != nil && len(p) > 0 {
			return err
		}
	}
	return nil
}

// read reads once with the stall deadline.
func (c *wire) read(p []byte) (int, error) {
	if c.behind && c.short {
		time.Sleep(paceWait)
	}
	now := time.Now()
	c.now = now.Unix()
	if c.timeout > 0 {
		if err := c.nc.SetReadDeadline(now.Add(c.timeout)); err != nil {
			return 0, fmt.Errorf("binlog stream: %w", err)
		}
	}
	k, err := c.nc.Read(p)
	c.short = k < paceBytes
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the server closes only between packets after an EOF packet
		}
		return k, fmt.Errorf("binlog stream: read: %w", err)
	}
	return k, nil
}

// bufferPool keeps the event buffers the stream handed back (Conn.Release:
// rows events it skipped undecoded), by size class, for the reader's next
// events: a binlog of tables nobody replicates is then read with no
// allocation per event. A buffer is in the pool only while nothing refers
// to it; get hands it to one owner.
type bufferPool struct {
	mu      sync.Mutex
	free    [poolClasses][][]byte // by floor(log2(cap))
	bytes   int
	skipped []*headerSkipped // rows events read at their header (skipread.go)
	slabs   []*slab          // read buffers no event lies in
	poison  atomic.Bool      // tests: released buffers overwritten
}

const (
	poolClasses  = 24       // caps up to 16 MiB
	poolMaxBytes = 16 << 20 // what the pool keeps at most
)

// poisonByte overwrites a released buffer when the pool poisons: a reader
// still holding it then reads bytes no event has.
const poisonByte = 0xEE

// get returns a buffer of length n: a pooled one of a cap at least n, or
// a new one (its cap Go's size class, which costs nothing more and lets
// it serve events of nearby sizes once handed back).
func (p *bufferPool) get(n int) []byte {
	c := sizeClass(n)
	if c < poolClasses {
		p.mu.Lock()
		// A class holds caps up to twice another's: a few of its newest
		// are looked at for one of n bytes; any of the next class fits.
		for _, k := range [2]int{c, c + 1} {
			if k >= poolClasses {
				break
			}
			l := p.free[k]
			for i := len(l) - 1; i >= max(0, len(l)-4); i-- {
				if cap(l[i]) < n {
					continue
				}
				b := l[i]
				l[i] = l[len(l)-1]
				l[len(l)-1] = nil
				p.free[k] = l[:len(l)-1]
				p.bytes -= cap(b)
				p.mu.Unlock()
				return b[:n]
			}
		}
		p.mu.Unlock()
	}
	return slices.Grow([]byte(nil), n)[:n]
}

// put takes back a buffer nothing refers to any more.
func (p *bufferPool) put(b []byte) {
	c := sizeClass(cap(b))
	if c >= poolClasses || cap(b) == 0 {
		return
	}
	if p.poison.Load() {
		b = b[:cap(b)]
		for i := range b {
			b[i] = poisonByte
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+cap(b) > poolMaxBytes {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
	p.bytes += cap(b)
}

// maxSlabs bounds the read buffers the pool keeps: the events read ahead
// lie in a few.
const maxSlabs = 16

// getSlab returns a read buffer, the wire's reference taken.
func (p *bufferPool) getSlab() *slab {
	p.mu.Lock()
	var s *slab
	if n := len(p.slabs); n > 0 {
		s = p.slabs[n-1]
		p.slabs = p.slabs[:n-1]
	}
	p.mu.Unlock()
	if s == nil {
		s = &slab{b: make([]byte, readBufferSize), pool: p}
	}
	s.refs.Store(1)
	return s
}

// putSlab takes back a read buffer nothing refers to.
func (p *bufferPool) putSlab(s *slab) {
	if p.poison.Load() {
		for i := range s.b {
			s.b[i] = poisonByte
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.slabs) < maxSlabs {
		p.slabs = append(p.slabs, s)
	}
}

// sizeClass is floor(log2(n)), 0 for n < 2.
func sizeClass(n int) int {
	if n < 2 {
		return 0
	}
	return bits.Len(uint(n)) - 1
}

// poisonReleased: connections opened from now on poison released buffers.
var poisonReleased atomic.Bool

// PoisonReleased has the connections opened from then on overwrite each
// buffer handed back (Conn.Release) with 0xEE before it serves another
// event, so that anything still reading one reads bytes no event has:
// tests prove the ownership rule with it.
func PoisonReleased(on bool) { poisonReleased.Store(on) }
