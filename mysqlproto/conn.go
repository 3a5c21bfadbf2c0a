// Package mysqlproto reads result sets over MySQL's client protocol
// without decoding them: each row packet is handed on as the server sent
// it, for a decoder that writes the values straight into columns (package
// block). database/sql and its drivers hand over every value as an
// interface (an allocation per value, most of a table copy's CPU); here
// a batch of rows is one byte slice.
//
// go-mysql's client does the handshake, the authentication (every plugin
// it knows) and TLS; after that the connection's packets are read and
// written here. Commands: COM_QUERY, and prepared statements (MySQL's
// binary protocol, in which FLOAT and DOUBLE arrive as their bits and
// temporal values as numbers). It must not import a package of binlog2ch,
// and never decodes a value: splitting a row into each value's bytes
// (BinaryValues) is as far as it goes.
package mysqlproto

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Options are how to reach and log in to the server.
type Options struct {
	Addr     string // host:port
	User     string
	Password string
	TLS      *tls.Config // nil: no TLS
	// Timeout bounds the connection and the handshake (default 10 s).
	Timeout time.Duration
	// Session are statements run once logged in (SET ...).
	Session []string
}

// Conn is one connection. It is used by one goroutine at a time.
type Conn struct {
	nc net.Conn
	// in[r:w] are bytes read from the connection and not yet taken.
	in   []byte
	r, w int
	raw  *rawReader // reads nc without the runtime's system-call hooks; nil: nc.Read
	// canceled: a command's context ended, and the deadline set to
	// interrupt it is not to be taken for rawReader's own.
	canceled atomic.Bool
	seq      uint8
	// buf holds the command being written and control packets read.
	buf []byte
	// broken: an I/O or protocol error left the connection in an unknown
	// state; it can only be closed.
	broken bool
	// open is the result set being read, which must be read to its end
	// before the next command.
	open *Result

	ServerVersion string
}

// inSize is the buffer of control packets (OK, column definitions);
// rows are read straight into the caller's buffer.
const inSize = 16 << 10

// Dial connects and logs in. ctx bounds the connection and the handshake
// only.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var raw atomic.Pointer[net.Conn] // for the interruption below
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// go-mysql's handshake takes no context: the deadline bounds it.
		if err := c.SetDeadline(deadline); err != nil {
			c.Close()
			return nil, err
		}
		raw.Store(&c)
		if ctx.Err() != nil { // canceled before the store: stop now
			_ = c.SetDeadline(time.Unix(1, 0))
		}
		return c, nil
	}
	stop := context.AfterFunc(ctx, func() {
		if c := raw.Load(); c != nil {
			_ = (*c).SetDeadline(time.Unix(1, 0))
		}
	})
	gc, err := client.ConnectWithDialer(ctx, "tcp", o.Addr, o.User, o.Password, "", dialer, func(c *client.Conn) error {
		c.SetTLSConfig(o.TLS)
		c.SetAttributes(map[string]string{"program_name": "binlog2ch"})
		// utf8mb4 results, known to MySQL and MariaDB by this id (45); the
		// default (utf8mb4_0900_ai_ci, 255) is unknown to MariaDB, which
		// would answer in its server character set instead.
		if err := c.SetCollation("utf8mb4_general_ci"); err != nil {
			return err
		}
		// Result sets end with an EOF packet, and statements carry no
		// query attributes: one wire format to read on every server.
		c.UnsetCapability(gomysql.CLIENT_DEPRECATE_EOF)
		c.UnsetCapability(gomysql.CLIENT_QUERY_ATTRIBUTES)
		return nil
	})
	stop()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		gc.Close()
		return nil, ctx.Err()
	}
	// After the handshake the server sends nothing until asked, so go-mysql's
	// reader holds no unread bytes: the socket is read here from now on.
	nc := gc.Conn.Conn
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, err
	}
	c := &Conn{nc: nc, in: make([]byte, inSize), ServerVersion: gc.GetServerVersion()}
	c.raw = newRawReader(nc, &c.canceled)
	for _, q := range o.Session {
		if err := c.Exec(ctx, q); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return c, nil
}

// Close sends COM_QUIT (without waiting) and closes the connection.
func (c *Conn) Close() error {
	if !c.broken && c.open == nil {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = c.writeCommand(comQuit, nil)
	}
	c.broken = true
	return c.nc.Close()
}

// Usable reports whether the connection can take another command: no I/O
// error broke it and no result set is left unread.
func (c *Conn) Usable() bool { return !c.broken && c.open == nil }

// ServerError is an ERR packet: the server refused or failed a command.
type ServerError struct {
	Code    uint16
	State   string
	Message string
}

func (e *ServerError) Error() string {
	return "Error " + strconv.Itoa(int(e.Code)) + " (" + e.State + "): " + e.Message
}

// ErrBroken is returned by a command on a connection an earlier error
// broke.
var ErrBroken = errors.New("mysqlproto: connection broken by an earlier error")

// Commands and packet headers.
const (
	comQuit        = 0x01
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
	comStmtClose   = 0x19

	okHeader  = 0x00
	eofHeader = 0xfe
	errHeader = 0xff

	maxPayload = 1<<24 - 1
)

// watch makes ctx's end interrupt the connection's I/O; the returned
// function stops watching and reports ctx's error if it ended meanwhile.
func (c *Conn) watch(ctx context.Context) func() error {
	if ctx.Done() == nil {
		return func() error { return nil }
	}
	stop := context.AfterFunc(ctx, func() {
		c.canceled.Store(true)
		_ = c.nc.SetDeadline(time.Unix(1, 0))
	})
	return func() error {
		if !stop() {
			// Interrupted (or about to be): the connection cannot be
			// trusted any more.
			c.broken = true
			return ctx.Err()
		}
		return nil
	}
}

// fail marks the connection broken and returns err; an error from ctx's
// end wins over the I/O error it caused.
func (c *Conn) fail(ctx context.Context, err error) error {
	c.broken = true
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("mysqlproto: the server closed the connection (%w)", err)
	}
	return err
}

// writeCommand sends one command: its code and payload, in packets of at
// most maxPayload bytes (a payload of exactly that size is followed by an
// empty one), sequence numbers from 0.
func (c *Conn) writeCommand(cmd byte, payload []byte) error {
	c.seq = 0
	buf := c.buf[:0]
	rest := len(payload) + 1
	for first := true; ; first = false {
		n := min(rest, maxPayload)
		buf = append(buf, byte(n), byte(n>>8), byte(n>>16), c.seq)
		c.seq++
		if first {
			buf = append(buf, cmd)
			buf = append(buf, payload[:n-1]...)
			payload = payload[n-1:]
		} else {
			buf = append(buf, payload[:n]...)
			payload = payload[n:]
		}
		rest -= n
		if n < maxPayload {
			break
		}
	}
	c.buf = buf
	_, err := c.nc.Write(buf)
	return err
}

// fill reads until at least n bytes are buffered.
func (c *Conn) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	if c.r > 0 {
		c.w = copy(c.in, c.in[c.r:c.w])
		c.r = 0
	}
	if len(c.in) < n {
		c.in = grow(c.in[:c.w], n-c.w)[:n]
	}
	for c.w < n {
		k, err := c.read(c.in[c.w:])
		c.w += k
		if err != nil && c.w < n {
			return err
		}
	}
	return nil
}

// read reads from the connection.
func (c *Conn) read(p []byte) (int, error) {
	if c.raw != nil {
		return c.raw.Read(p)
	}
	return c.nc.Read(p)
}

// readBatch reads rows into p, which has room for many: it may wait a
// little for more of them (rawReader.ReadBatch).
func (c *Conn) readBatch(p []byte) (int, error) {
	if c.raw != nil {
		return c.raw.ReadBatch(p)
	}
	return c.nc.Read(p)
}

// readHeader reads a packet header and checks its sequence number.
func (c *Conn) readHeader() (int, error) {
	if err := c.fill(4); err != nil {
		return 0, err
	}
	h := c.in[c.r : c.r+4]
	c.r += 4
	if h[3] != c.seq {
		return 0, fmt.Errorf("mysqlproto: packet out of order: sequence %d, want %d", h[3], c.seq)
	}
	c.seq++
	return int(h[0]) | int(h[1])<<8 | int(h[2])<<16, nil
}

// readFull fills p from the buffered bytes, then from the connection.
func (c *Conn) readFull(p []byte) error {
	k := copy(p, c.in[c.r:c.w])
	c.r += k
	if k == len(p) {
		return nil
	}
	_, err := io.ReadFull(readerFunc(c.read), p[k:])
	return err
}

// readPacket appends one whole packet's payload (joined across
// maximum-size parts) to dst.
func (c *Conn) readPacket(dst []byte) ([]byte, error) {
	for {
		n, err := c.readHeader()
		if err != nil {
			return dst, err
		}
		start := len(dst)
		dst = grow(dst, n)
		if err := c.readFull(dst[start : start+n]); err != nil {
			return dst, err
		}
		if n < maxPayload {
			return dst, nil
		}
	}
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		bigger := make([]byte, len(dst), max(2*cap(dst), len(dst)+n))
		copy(bigger, dst)
		dst = bigger
	}
	return dst[:len(dst)+n]
}

// serverError parses an ERR packet.
func serverError(p []byte) error {
	if len(p) < 3 || p[0] != errHeader {
		return errors.New("mysqlproto: malformed error packet")
	}
	e := &ServerError{Code: binary.LittleEndian.Uint16(p[1:])}
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		e.State, msg = string(msg[1:6]), msg[6:]
	}
	e.Message = string(msg)
	return e
}

// Exec runs a statement that returns no rows (COM_QUERY).
func (c *Conn) Exec(ctx context.Context, query string) error {
	if !c.Usable() {
		return ErrBroken
	}
	done := c.watch(ctx)
	err := c.exec(query)
	if cerr := done(); cerr != nil {
		return cerr
	}
	if err != nil {
		var se *ServerError
		if !errors.As(err, &se) {
			return c.fail(ctx, err)
		}
	}
	return err
}

func (c *Conn) exec(query string) error {
	if err := c.writeCommand(comQuery, []byte(query)); err != nil {
		return err
	}
	p, err := c.readPacket(c.buf[:0])
	c.buf = p
	if err != nil {
		return err
	}
	switch {
	case len(p) == 0:
		return errors.New("mysqlproto: empty answer")
	case p[0] == okHeader:
		return nil
	case p[0] == errHeader:
		return serverError(p)
	}
	c.broken = true // a result set, not read
	return errors.New("mysqlproto: the statement returned rows")
}

// readerFunc is a read function as an io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
