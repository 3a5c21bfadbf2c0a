// Package chnative inserts columnar blocks into ClickHouse over the native
// TCP protocol. It exists for speed: a general driver copies every value
// into its own column types before encoding them, while here the caller
// writes its buffers straight into LZ4 frames on the socket (ZSTD, or no
// frames at all, as Options.Compression says). It speaks only
// what an INSERT needs: handshake, query, data blocks, and the server's
// progress, exception and end-of-stream packets. It never runs anything but
// an INSERT (DDL and reads go through clickhouse-go) and imports none of
// binlog2ch's packages.
package chnative

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// Revision is the protocol revision binlog2ch speaks; both sides use the
// lower of the server's and this (18.16 is at 54412). It is old on purpose:
// from 54441 on the query packet carries fields binlog2ch has no use for
// (inter-server secret, OpenTelemetry, distributed depth, parameters), and
// ClickHouse keeps accepting old clients.
const Revision = 54420

// Revisions at which the protocol gained what this client reads or writes
// (ClickHouse's src/Core/ProtocolDefines.h). A server gates every field and
// packet on the client's revision, so at Revision it sends none of what
// came later: no parallel-replicas version, chunked-packet capabilities,
// password rules, nonce, server settings or query-plan version in its
// hello, no custom-serialization byte in blocks, no total bytes or elapsed
// time in Progress, no ProfileEvents or TimezoneUpdate packets.
const (
	revClientInfo     = 54032
	revServerTimezone = 54058
	revQuotaKey       = 54060
	revDisplayName    = 54372
	revVersionPatch   = 54401
	revServerLogs     = 54406 // Log packets, when the user's send_logs_level asks for them
	revColumnDefaults = 54410 // TableColumns before an INSERT's header
	revClientWrite    = 54420 // Progress carries written rows and bytes
	revTotalRows      = 51554
	// revSettingsAsStrings is where query settings start to travel as
	// strings with flags. Below it (this client) they travel in the old
	// binary format, typed by the server's own definition of each setting:
	// a name the server does not know is skipped as if its value were a
	// string, so an unknown integer setting desynchronises the rest of the
	// query packet (BaseSettings::read, SettingsWriteFormat::BINARY). The
	// caller sends only settings the server knows (Options.Settings).
	revSettingsAsStrings = 54429
)

// The settings format above holds only while this client stays below
// revSettingsAsStrings: raising Revision past it must change writeQuery.
const _ = uint(revSettingsAsStrings - Revision - 1)

// The client's name and version, the same in the hello and in every
// query's client info: since 23.8 a server with validate_tcp_client_information
// refuses a query whose client name, major, minor or revision differ from
// the hello's (TCPHandler's validateClientInfo).
const (
	clientName  = "binlog2ch"
	clientMajor = 1
	clientMinor = 0
)

// Client and server packet types.
const (
	clientHello = 0
	clientQuery = 1
	clientData  = 2

	serverHello        = 0
	serverData         = 1
	serverException    = 2
	serverProgress     = 3
	serverEndOfStream  = 5
	serverProfileInfo  = 6
	serverTotals       = 7
	serverExtremes     = 8
	serverLog          = 10
	serverTableColumns = 11
	// Later packet types (ProfileEvents 14 from 54451, TimezoneUpdate 17
	// from 54464, ...) are never sent to a client at Revision: one arriving
	// is a protocol surprise, not something to skip.
)

const (
	// tlsAlert starts a TLS alert record.
	tlsAlert      = 0x15
	stageComplete = 2
	// maxString bounds strings read from the server, against a corrupt
	// stream allocating without limit.
	maxString = 1 << 30
)

// Options say where and how to connect.
type Options struct {
	Addr        []string // host:port, tried in order
	Database    string
	User        string
	Password    string
	DialTimeout time.Duration // default 10s
	// ReadTimeout bounds each phase of an insert: sending the query and
	// reading the header, sending the data, waiting for the server to
	// store it (default 5 minutes).
	ReadTimeout time.Duration
	// TLS, when set, wraps each connection in TLS: Addr must then name the
	// server's secure native port (tcp_port_secure, usually 9440). An empty
	// ServerName verifies each address against its own host.
	TLS *tls.Config
	// Settings, when set, chooses the settings that go with every query
	// of a connection, from what its server said in the hello. It must
	// return only settings that server knows, of type Bool or UInt64: at
	// the revision this client speaks, settings travel in the old binary
	// format typed by the server's definition (those two are varints), and
	// a name the server does not know desynchronises the query packet (see
	// revSettingsAsStrings).
	Settings func(Server) []Setting
	// Compression of the inserts' blocks, both ways (default LZ4).
	Compression Compression
}

// Setting is a query setting with an unsigned integer value (1/0 for
// booleans), e.g. async_insert=0.
type Setting struct {
	Name  string
	Value uint64
}

// StringSetting is a String setting of one query (Insert's extra), read in
// the old format by SettingFieldString::readBinary: a varint length, the
// bytes (src/Core/SettingsFields.cpp). Send only those the server knows.
type StringSetting struct{ Name, Value string }

// Server describes the server a Conn talks to.
type Server struct {
	Name                string
	Major, Minor, Patch uint64
	Revision            uint64
	Timezone            string
	DisplayName         string
}

// Conn is one native-protocol connection. It is not safe for concurrent
// use; after any error other than an *Exception it must be closed.
type Conn struct {
	conn     net.Conn
	raw      net.Conn // the TCP connection under conn, which may be TLS
	r        *bufio.Reader
	w        *bufio.Writer
	server   Server
	revision uint64 // the one both sides speak
	opts     Options
	settings []Setting // chosen for this server at connect
	enc      Encoder
	frames   frameReader // the server's compressed blocks
	queryID  string      // the current insert's
}

// Dial connects and performs the handshake.
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = 5 * time.Minute
	}
	if opts.User == "" {
		opts.User = "default"
	}
	if opts.Database == "" {
		opts.Database = "default"
	}
	var errs []error
	for _, addr := range opts.Addr {
		c, err := dial(ctx, addr, opts)
		if err == nil {
			return c, nil
		}
		var ex *Exception
		var pe *ProtocolError
		if errors.As(err, &ex) || errors.As(err, &pe) {
			return nil, err // the server answered: another address will too
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("clickhouse: no address to connect to")
	}
	return nil, errors.Join(errs...)
}

func dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	d := net.Dialer{Timeout: opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// One deadline covers the TLS and the ClickHouse handshakes: a server
	// that never answers (a plain port that waits for more bytes) cannot
	// hang Dial.
	_ = nc.SetDeadline(time.Now().Add(opts.DialTimeout))
	raw := nc
	if opts.TLS != nil {
		tc, err := tlsHandshake(ctx, nc, addr, opts.TLS)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("clickhouse %s: TLS handshake: %w", addr, err)
		}
		nc = tc
	}
	c := newConn(nc, raw, opts)
	if err := c.handshake(); err != nil {
		raw.Close()
		if opts.TLS == nil && errors.Is(err, syscall.ECONNRESET) {
			// What a secure port does with a plain-text hello.
			return nil, fmt.Errorf("clickhouse %s: handshake: %w (if this is the secure native port, TLS must be on)", addr, err)
		}
		return nil, fmt.Errorf("clickhouse %s: handshake: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

func newConn(nc, raw net.Conn, opts Options) *Conn {
	if opts.Compression == CompressionAuto {
		opts.Compression = CompressionLZ4
		if onThisHost(raw.RemoteAddr(), raw.LocalAddr()) {
			opts.Compression = CompressionNone
		}
	}
	c := &Conn{conn: nc, raw: raw, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10), opts: opts}
	c.enc.w = c.w
	c.enc.method = opts.Compression
	c.frames.r = c.r
	return c
}

// onThisHost reports whether a connection's peer is on this host: a
// loopback address, or the connection's own local address (the kernel
// picks a host's own address as the source of a connection to it, and
// sends it through the loopback device). A server in another network
// namespace (a container) has an address of its own: not this host.
func onThisHost(peer, local net.Addr) bool {
	p, ok := peer.(*net.TCPAddr)
	if !ok {
		return false
	}
	l, ok := local.(*net.TCPAddr)
	return p.IP.IsLoopback() || ok && p.IP.Equal(l.IP)
}

// tlsHandshake runs the client side of TLS over nc, verifying the server
// against addr's host unless cfg names another.
func tlsHandshake(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			return nil, fmt.Errorf("%w (the server answered in plain text: is this its secure native port, usually 9440?)", err)
		}
		return nil, err
	}
	return tc, nil
}

// Server is what the server said about itself.
func (c *Conn) Server() Server { return c.server }

// Compression is how c's inserts travel: Options.Compression, with
// CompressionAuto decided for c's peer.
func (c *Conn) Compression() Compression { return c.opts.Compression }

// UncompressedFrames is how many frames of LZ4 or lz4-adaptive went as
// NONE frames so far, and how many of them lz4-adaptive sent after
// compressing only their start (frameWriter).
func (c *Conn) UncompressedFrames() (plain, probed uint64) {
	return c.enc.frames.plain, c.enc.frames.probed
}

// Close closes the connection. It closes the TCP connection without TLS's
// close_notify, which waits up to 5 s on a peer that stopped reading; the
// server needs no notice to end a connection.
func (c *Conn) Close() error { return c.raw.Close() }

func (c *Conn) handshake() error {
	w := c.w
	putUvarint(w, clientHello)
	putString(w, clientName)
	putUvarint(w, clientMajor)
	putUvarint(w, clientMinor)
	putUvarint(w, Revision)
	putString(w, c.opts.Database)
	putString(w, c.opts.User)
	putString(w, c.opts.Password)
	if err := w.Flush(); err != nil {
		return err
	}
	kind, err := binary.ReadUvarint(c.r)
	if err != nil {
		return err
	}
	switch kind {
	case serverHello:
	case serverException:
		return c.readException()
	case tlsAlert:
		if c.opts.TLS == nil {
			// Secure ports usually reset instead (see dial), but may answer.
			return errors.New("the server answered with a TLS alert: this is a secure native port, TLS must be on")
		}
		return fmt.Errorf("unexpected packet %d instead of the server's hello", kind)
	default:
		return &ProtocolError{Reason: ReasonUnknownPacket, Err: fmt.Errorf("packet %d instead of the server's hello", kind)}
	}
	s := &c.server
	if s.Name, err = c.readString(); err != nil {
		return err
	}
	for _, p := range []*uint64{&s.Major, &s.Minor, &s.Revision} {
		if *p, err = binary.ReadUvarint(c.r); err != nil {
			return err
		}
	}
	c.revision = min(s.Revision, Revision)
	if c.revision >= revServerTimezone {
		if s.Timezone, err = c.readString(); err != nil {
			return err
		}
	}
	if c.revision >= revDisplayName {
		if s.DisplayName, err = c.readString(); err != nil {
			return err
		}
	}
	if c.revision >= revVersionPatch {
		if s.Patch, err = binary.ReadUvarint(c.r); err != nil {
			return err
		}
	} else {
		s.Patch = s.Revision
	}
	if c.opts.Settings != nil {
		c.settings = c.opts.Settings(*s)
	}
	return nil
}

// Column is a column of the block the server expects.
type Column struct{ Name, Type string }

// Insert runs query, "INSERT INTO db.t (columns)", and sends one block. header receives the
// columns the server expects (from the query's column list) and may refuse
// them; body writes the block's rows and columns to the encoder (see
// Encoder.Block). Insert returns when the server has stored the block.
// extra are String settings of this query alone, sent after the
// connection's own (Options.Settings).
func (c *Conn) Insert(ctx context.Context, query string, header func([]Column) error, body func(*Encoder) error, extra ...StringSetting) error {
	return c.guard(ctx, func() error { return c.insert(ctx, query, header, body, extra) })
}

// guard runs op with ctx's end cutting the connection short, and names
// ctx's error when that was why op failed.
func (c *Conn) guard(ctx context.Context, op func() error) error {
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	err := op()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// extendDeadline gives the next phase of an insert ReadTimeout. It never
// undoes a cancellation: the context is checked after the deadline is set,
// so a cancel that raced with it still lands.
func (c *Conn) extendDeadline(ctx context.Context) error {
	_ = c.conn.SetDeadline(time.Now().Add(c.opts.ReadTimeout))
	if err := ctx.Err(); err != nil {
		_ = c.conn.SetDeadline(time.Unix(1, 0))
		return err
	}
	return nil
}

func (c *Conn) insert(ctx context.Context, query string, header func([]Column) error, body func(*Encoder) error, extra []StringSetting) error {
	if err := c.begin(ctx, query, header, extra); err != nil {
		return err
	}
	if err := c.block(body); err != nil {
		return err
	}
	return c.finish(ctx)
}

// begin sends an INSERT's query and reads the columns the server expects,
// which header may refuse; the blocks follow.
func (c *Conn) begin(ctx context.Context, query string, header func([]Column) error, extra []StringSetting) error {
	if err := c.extendDeadline(ctx); err != nil {
		return err
	}
	c.queryID = newQueryID()
	c.writeQuery(query, extra)
	// No external tables: an empty block ends them.
	if err := c.endOfData(); err != nil {
		return err
	}
	cols, err := c.readHeader()
	if err != nil {
		return err
	}
	if err := header(cols); err != nil {
		return err // the connection is mid-query: the caller closes it
	}
	return c.extendDeadline(ctx)
}

// block writes one data packet, its block written by body.
func (c *Conn) block(body func(*Encoder) error) error {
	c.enc.begin(clientData)
	if err := body(&c.enc); err != nil {
		return err
	}
	return c.enc.end()
}

// finish ends an INSERT's data and waits until the server has stored it.
func (c *Conn) finish(ctx context.Context) error {
	if err := c.endOfData(); err != nil {
		return err
	}
	if err := c.extendDeadline(ctx); err != nil {
		return err
	}
	for {
		kind, err := c.readPacket()
		if err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				// The blocks went out whole: the server may have stored
				// them before the answer this client cannot follow, and
				// may still be storing them: the query id finds it.
				pe.DataSent = true
				pe.QueryID = c.queryID
			}
			return err
		}
		if kind == serverEndOfStream {
			_ = c.conn.SetDeadline(time.Time{})
			return nil
		}
	}
}

// endOfData sends the empty block that ends a stream of data blocks, and
// flushes.
func (c *Conn) endOfData() error {
	c.enc.begin(clientData)
	c.enc.blockHeader(0, 0)
	if err := c.enc.end(); err != nil {
		return err
	}
	return c.w.Flush()
}

func (c *Conn) writeQuery(query string, extra []StringSetting) {
	w := c.w
	putUvarint(w, clientQuery)
	// Our own query id rather than the server's: after an answer this
	// client cannot read, system.processes tells by it whether the
	// insert is still running.
	putString(w, c.queryID)
	if c.revision >= revClientInfo {
		w.WriteByte(1) // initial query
		// Initial user and query id: the server's own for an initial query.
		putString(w, "")
		putString(w, "")
		// The initial address: an IP literal with a numeric port, which
		// every server parses (current ones refuse anything else in a
		// secondary query and replace it with the peer's address in an
		// initial one; older ones hand it to Poco's SocketAddress, which
		// would resolve a host name).
		putString(w, "0.0.0.0:0")
		w.WriteByte(1) // TCP
		putString(w, os.Getenv("USER"))
		host, _ := os.Hostname()
		putString(w, host)
		// As in the hello: a server checking one against the other
		// refuses the query when they differ.
		putString(w, clientName)
		putUvarint(w, clientMajor)
		putUvarint(w, clientMinor)
		putUvarint(w, Revision)
		if c.revision >= revQuotaKey {
			putString(w, "")
		}
		if c.revision >= revVersionPatch {
			putUvarint(w, 0)
		}
	}
	for _, st := range c.settings {
		putString(w, st.Name)
		putUvarint(w, st.Value)
	}
	for _, st := range extra {
		putString(w, st.Name)
		putString(w, st.Value)
	}
	putString(w, "") // the empty name ends the settings in every format
	putUvarint(w, stageComplete)
	// The flag decides both ways: off, the server reads our blocks and
	// writes its own without frames (TCPHandler's initBlockInput and
	// initBlockOutput).
	if c.opts.Compression == CompressionNone {
		putUvarint(w, 0)
	} else {
		putUvarint(w, 1)
	}
	putString(w, query+" VALUES")
}

// readHeader reads packets until the block that names the columns an
// INSERT expects.
func (c *Conn) readHeader() ([]Column, error) {
	for {
		kind, err := binary.ReadUvarint(c.r)
		if err != nil {
			return nil, err
		}
		if kind != serverData {
			if err := c.skipPacket(kind); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := c.readString(); err != nil { // table name
			return nil, err
		}
		cols, rows, err := c.blocks().blockColumns()
		var fe *formatError
		switch {
		case errors.As(err, &fe):
			return nil, &ProtocolError{Reason: ReasonHeaderType, Err: fmt.Errorf("the insert's header block: %w", err)}
		case err != nil:
			return nil, fmt.Errorf("the insert's header block: %w", err)
		case rows != 0:
			return nil, &ProtocolError{Reason: ReasonHeaderType, Err: fmt.Errorf("the insert's header block has %d rows", rows)}
		}
		// Only names and types: a header has no values to decode, so any
		// type a server has (LowCardinality, Map, JSON, Variant, ...) reads
		// the same. Which of them binlog2ch can write is the caller's
		// decision; a string that cannot be a type name means the block
		// was not what this client takes it for.
		for _, col := range cols {
			if !validTypeName(col.Type) {
				return nil, &ProtocolError{Reason: ReasonHeaderType, Err: fmt.Errorf("the insert's header block names column %q's type %q, which is not a type name", col.Name, col.Type)}
			}
		}
		return cols, nil
	}
}

// readPacket reads one packet after the data was sent and returns its
// kind; an exception becomes the error.
func (c *Conn) readPacket() (uint64, error) {
	kind, err := binary.ReadUvarint(c.r)
	if err != nil {
		return 0, err
	}
	switch kind {
	case serverEndOfStream:
		return kind, nil
	case serverData:
		return kind, &ProtocolError{Reason: ReasonUnknownPacket, Err: errors.New("the server sent data after the insert")}
	}
	return kind, c.skipPacket(kind)
}

// skipPacket reads the body of a packet binlog2ch has no use for. A packet
// type the server may not send at the revision spoken is a protocol
// surprise: its body's format is unknown, so nothing after it can be read.
func (c *Conn) skipPacket(kind uint64) error {
	rd := &reader{r: c.r}
	switch {
	case kind == serverException:
		return c.readException()
	case kind == serverProgress:
		n := 3
		if c.revision >= revClientWrite {
			n = 5
		} else if c.revision < revTotalRows {
			n = 2
		}
		for i := 0; i < n; i++ {
			if _, err := binary.ReadUvarint(c.r); err != nil {
				return err
			}
		}
		return nil
	case kind == serverProfileInfo:
		for _, f := range []byte{'u', 'u', 'u', 'b', 'u', 'b'} {
			var err error
			if f == 'u' {
				_, err = binary.ReadUvarint(c.r)
			} else {
				_, err = c.r.ReadByte()
			}
			if err != nil {
				return err
			}
		}
		return nil
	case kind == serverTableColumns && c.revision >= revColumnDefaults:
		for i := 0; i < 2; i++ {
			if _, err := c.readString(); err != nil {
				return err
			}
		}
		return nil
	case kind == serverLog && c.revision >= revServerLogs:
		// Never compressed at this revision.
		if _, err := c.readString(); err != nil {
			return err
		}
		return packetFormat(kind, rd.skipBlock())
	case kind == serverTotals, kind == serverExtremes:
		if _, err := c.readString(); err != nil {
			return err
		}
		return packetFormat(kind, c.blocks().skipBlock())
	}
	return &ProtocolError{Reason: ReasonUnknownPacket, Err: fmt.Errorf("packet type %d, which a server does not send to a client at revision %d", kind, c.revision)}
}

// blocks reads the server's data blocks: out of its frames, or straight
// off the connection with compression off. Log blocks never come in
// frames (TCPHandler's initLogsBlockOutput).
func (c *Conn) blocks() *reader {
	if c.opts.Compression == CompressionNone {
		return &reader{r: c.r}
	}
	return &reader{r: bufio.NewReader(&c.frames)}
}

// packetFormat turns a block this client cannot read, in a packet it may
// get, into a protocol surprise: it cannot tell where the packet ends.
func packetFormat(kind uint64, err error) error {
	var fe *formatError
	if errors.As(err, &fe) {
		return &ProtocolError{Reason: ReasonUnknownPacket, Err: fmt.Errorf("packet type %d: %w", kind, err)}
	}
	return err
}

func (c *Conn) readString() (string, error) { return (&reader{r: c.r}).string() }

func putUvarint(w *bufio.Writer, x uint64) {
	var b [binary.MaxVarintLen64]byte
	w.Write(b[:binary.PutUvarint(b[:], x)])
}

func putString(w *bufio.Writer, s string) {
	putUvarint(w, uint64(len(s)))
	w.WriteString(s)
}
