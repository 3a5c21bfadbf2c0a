// Package binlog is the binlog wire: a binlog connection read with each
// event in one buffer of its size (Conn), MySQL's compressed transactions
// handed on one event at a time, rows events decoded (or left as row
// images for the block package), MySQL's partial JSON updates made whole,
// and table maps read as schemas. Like go-mysql's replication package it
// turns bytes into events and must not hold policy: positions, versions,
// reconnects and what an event means are the source package's.
package binlog

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

// Conn is one binlog connection, read by binlog2ch rather than by
// go-mysql's BinlogSyncer. go-mysql's packet reader grows a large event's
// buffer by doubling (updating a row that holds a 64 MiB value peaked at
// over ten times the value), reads up to its event cache ahead whatever
// the events' sizes, and closes a connection by sending KILL over a new
// one, which blocks while the server does not answer. Here each event is
// read into one buffer of its own size, taken from its header; the events
// read ahead are bounded in bytes as well as in number; closing closes the
// socket. go-mysql still does the handshake, authentication, TLS, the
// session settings and the event parsing, as its BinlogSyncer does.
type Conn struct {
	conn   *client.Conn
	wire   *wire // nil: the protocol is compressed, which it does not read
	pool   *bufferPool
	events chan batch
	spare  chan []item // batches' slices handed back by GetEvent
	// ahead and aheadN are the bytes and the number of the events read
	// and not yet taken (the batch GetEvent takes from included); the
	// reader waits while they are over MaxAhead or the event cache (and
	// one event is queued).
	mu       sync.Mutex
	ahead    int
	aheadN   int
	cache    int
	room     *sync.Cond
	closed   bool
	stopOnce sync.Once
	log      *slog.Logger

	// The reader's state, for compressed transactions (payload.go).
	newParser func() *replication.BinlogParser    // a parser with the options of the reader's own
	format    *replication.FormatDescriptionEvent // the last one read
	file      string                              // the binlog file being read, for messages
	zr        *zstd.Decoder                       // made at the first compressed transaction
	skips     *Skips                              // the tables whose rows events it may read at their header
	maps      map[uint64]mappedTable              // the parser's table maps (skipread.go)
	flavor    string                              // to parse such an event after all
	batch     []item                              // the events read and not yet handed on
	batchSize int

	// GetEvent's state: the batch it takes from, and the event it
	// returned last with its buffer, for Release.
	cur      []item
	curSize  int
	next     int
	lastEv   *replication.BinlogEvent
	lastBuf  []byte
	lastSlab *slab
}

type item struct {
	ev   *replication.BinlogEvent
	buf  []byte // the packet ev was parsed from, owned by ev (nil: not the wire's)
	slab *slab  // the read buffer buf lies in, when ev was not copied out of it
	size int
	err  error
}

// batch is events handed on together.
type batch struct {
	items []item
	size  int
}

// MaxAhead bounds the bytes of events read ahead of the reader's caller.
const MaxAhead = 64 << 20

// Config is how binlog connections are opened and read.
type Config struct {
	Addr           string // host:port
	User, Password string
	TLS            *tls.Config
	// ServerID is the replica's server id the connection registers with.
	ServerID uint32
	// HeartbeatPeriod is asked of the server; StallTimeout bounds each read.
	HeartbeatPeriod, StallTimeout time.Duration
	Flavor                        string // mysql.MySQLFlavor or mysql.MariaDBFlavor
	// RawRows: rows of tables whose types binlog2ch decodes itself stay
	// undecoded (RowsDecoder).
	RawRows bool
	// Skips, when not nil, are the tables whose rows events stay
	// undecoded (Skipped).
	Skips *Skips
	// EventCache is how many events may be read ahead (at most MaxAhead
	// bytes of them).
	EventCache int
	Log        *slog.Logger // required
}

// Request is where the server is to start sending: at File:Pos, or, with
// ByGTID, from the first transaction not in the GTID set (MariaDB's text
// form, or MySQL's encoded set).
type Request struct {
	File         string
	Pos          uint32
	ByGTID       bool
	MariaDBGTIDs string
	MySQLGTIDs   []byte
}

// Dial opens a binlog connection and asks for the binlog req names.
func Dial(ctx context.Context, cfg Config, req Request) (*Conn, error) {
	conn, port, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := prepare(conn, cfg, port, req); err != nil {
		conn.Close()
		return nil, err
	}
	d := Read(conn, cfg)
	d.log.Debug("binlog connection opened", "position", req.File+":"+strconv.FormatUint(uint64(req.Pos), 10), "server_version", conn.GetServerVersion(), "connection_id", conn.GetConnectionID())
	return d, nil
}

// connect opens the client connection a binlog dump goes over.
func connect(ctx context.Context, cfg Config) (*client.Conn, uint16, error) {
	host, portText, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, 0, fmt.Errorf("mysql.addr: %w", err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("mysql.addr: bad port %q", portText)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second+cfg.StallTimeout)
	defer cancel()
	conn, err := client.ConnectWithDialer(connectCtx, "", net.JoinHostPort(host, portText), cfg.User, cfg.Password, "", dialer.DialContext,
		func(c *client.Conn) error {
			c.SetTLSConfig(cfg.TLS)
			c.SetAttributes(map[string]string{"_client_role": "binary_log_listener", "program_name": "binlog2ch"})
			// Each read of the stream waits at most this long: heartbeats
			// come every heartbeat period on an idle stream.
			c.ReadTimeout = cfg.StallTimeout
			return nil
		})
	if err != nil {
		return nil, 0, err
	}
	return conn, uint16(port), nil
}

// NewParser is a parser of the binlog connection: times parsed,
// TIMESTAMPs in UTC, rows decoded by a RowsDecoder (raw: rows of tables
// binlog2ch decodes itself left as bytes). JSON values are go-mysql's
// default rendering, which partial JSON updates reproduce (jsondiff).
func NewParser(flavor string, raw bool) *replication.BinlogParser {
	return newParserWith(flavor, NewRowsDecoder(raw, nil))
}

// NewParserSkipping is NewParser whose decoder leaves the rows of skips'
// tables undecoded (Skipped), as the binlog connection's does.
func NewParserSkipping(flavor string, raw bool, skips *Skips) *replication.BinlogParser {
	return newParserWith(flavor, NewRowsDecoder(raw, skips))
}

func newParserWith(flavor string, dec *RowsDecoder) *replication.BinlogParser {
	parser := replication.NewBinlogParser()
	parser.SetFlavor(flavor)
	parser.SetParseTime(true)
	parser.SetTimestampStringLocation(time.UTC)
	parser.SetRowsEventDecodeFunc(dec.Decode)
	return parser
}

// Read reads the binlog stream of conn, on which the binlog was asked
// for (by Dial, or by a test's server), in a goroutine of its own. A
// compressed transaction's events are parsed by parsers of their own
// (payload.go), with the same decoder.
func Read(conn *client.Conn, cfg Config) *Conn {
	dec := NewRowsDecoder(cfg.RawRows, cfg.Skips)
	newParser := func() *replication.BinlogParser { return newParserWith(cfg.Flavor, dec) }
	cache := max(1, cfg.EventCache)
	d := &Conn{conn: conn, pool: &bufferPool{}, events: make(chan batch, cache), spare: make(chan []item, 4), cache: cache,
		log: cfg.Log.With("component", "binlog"), newParser: newParser, batch: make([]item, 0, batchEvents),
		skips: cfg.Skips, flavor: cfg.Flavor}
	d.pool.poison.Store(poisonReleased.Load())
	if conn.Compression == mysql.MYSQL_COMPRESS_NONE {
		// Nothing is buffered in go-mysql's reader: the server sends
		// nothing after its OK to COM_REGISTER_SLAVE until the dump
		// command, and the dump's answer is read here alone.
		d.wire = newWire(conn.Conn.Conn, conn.Sequence, cfg.StallTimeout, d.pool)
	}
	d.room = sync.NewCond(&d.mu)
	go d.read(newParser())
	return d
}

// prepare sets the session up as go-mysql's BinlogSyncer does (checksums
// off, MariaDB's GTID capability, heartbeats, a replica uuid), registers
// as a replica and sends COM_BINLOG_DUMP.
func prepare(conn *client.Conn, cfg Config, port uint16, req Request) error {
	r, err := conn.Execute("SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'")
	if err != nil {
		return err
	}
	if cs, _ := r.GetString(0, 1); cs != "" {
		// Events then come without checksums (as mysqlbinlog asks); TCP
		// and TLS guard the transfer.
		if _, err := conn.Execute(`SET @master_binlog_checksum='NONE', @source_binlog_checksum='NONE'`); err != nil {
			return err
		}
	}
	if cfg.Flavor == mysql.MariaDBFlavor {
		// MARIA_SLAVE_CAPABILITY_GTID: the server sends its GTID events.
		if _, err := conn.Execute("SET @mariadb_slave_capability=4"); err != nil {
			return fmt.Errorf("SET @mariadb_slave_capability=4: %w", err)
		}
	}
	period := cfg.HeartbeatPeriod.Nanoseconds()
	if _, err := conn.Execute(fmt.Sprintf("SET @master_heartbeat_period = %d, @source_heartbeat_period = %d", period, period)); err != nil {
		return err
	}
	id := uuid.NewString()
	if _, err := conn.Execute(fmt.Sprintf("SET @slave_uuid = '%s', @replica_uuid = '%s'", id, id)); err != nil {
		return err
	}
	// COM_REGISTER_SLAVE: server id, host, user, password, port, rank, master id.
	host, _ := os.Hostname()
	host = host[:min(len(host), 255)]
	user := cfg.User[:min(len(cfg.User), 255)]
	reg := []byte{0, 0, 0, 0, mysql.COM_REGISTER_SLAVE}
	reg = binary.LittleEndian.AppendUint32(reg, cfg.ServerID)
	reg = append(append(reg, byte(len(host))), host...)
	reg = append(append(reg, byte(len(user))), user...)
	reg = append(reg, 0)
	reg = binary.LittleEndian.AppendUint16(reg, port)
	reg = binary.LittleEndian.AppendUint32(reg, 0)
	reg = binary.LittleEndian.AppendUint32(reg, 0)
	conn.ResetSequence()
	if err := conn.WritePacket(reg); err != nil {
		return err
	}
	if _, err := conn.ReadOKPacket(); err != nil {
		return err
	}
	if req.ByGTID {
		cmd, err := gtidDumpCommand(conn, cfg, req)
		if err != nil {
			return err
		}
		conn.ResetSequence()
		return conn.WritePacket(cmd)
	}
	conn.ResetSequence()
	return conn.WritePacket(dumpCommand(cfg.ServerID, req.File, req.Pos))
}

// dumpCommand is COM_BINLOG_DUMP: position, flags (0: wait for new
// events), server id, file name.
func dumpCommand(serverID uint32, file string, pos uint32) []byte {
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP}
	cmd = binary.LittleEndian.AppendUint32(cmd, pos)
	cmd = binary.LittleEndian.AppendUint16(cmd, 0)
	cmd = binary.LittleEndian.AppendUint32(cmd, serverID)
	return append(cmd, file...)
}

// gtidDumpCommand asks for the binlog from the first transaction not in
// the request's GTIDs: on MariaDB, COM_BINLOG_DUMP without a file after
// setting @slave_connect_state (in strict mode: a server whose binlog has
// a domain's sequence numbers out of order refuses rather than skip); on
// MySQL, COM_BINLOG_DUMP_GTID with the set encoded (flags, server id,
// empty file name, position 4, the set's length and bytes).
func gtidDumpCommand(conn *client.Conn, cfg Config, req Request) ([]byte, error) {
	if cfg.Flavor == mysql.MariaDBFlavor {
		if _, err := conn.Execute("SET @slave_connect_state = '" + req.MariaDBGTIDs + "', @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0"); err != nil {
			return nil, fmt.Errorf("set @slave_connect_state: %w", err)
		}
		return dumpCommand(cfg.ServerID, "", 0), nil
	}
	return mysqlGTIDDump(cfg.ServerID, req.MySQLGTIDs), nil
}

func mysqlGTIDDump(serverID uint32, set []byte) []byte {
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP_GTID}
	cmd = binary.LittleEndian.AppendUint16(cmd, 0)
	cmd = binary.LittleEndian.AppendUint32(cmd, serverID)
	cmd = binary.LittleEndian.AppendUint32(cmd, 0) // file name length
	cmd = binary.LittleEndian.AppendUint64(cmd, 4)
	cmd = binary.LittleEndian.AppendUint32(cmd, uint32(len(set)))
	return append(cmd, set...)
}

// read reads and parses events until the connection fails or is closed.
// Events are handed on in batches: those whose packets one read of the
// socket brought, queued before the next read that may wait, so an event
// read alone is handed on at once and never waits for more.
func (d *Conn) read(parser *replication.BinlogParser) {
	defer close(d.events)
	defer d.closePayloads()
	defer d.flush() // an error queued last goes too
	if d.wire == nil {
		d.queue(item{size: 1, err: errors.New("binlog stream: the connection negotiated the compressed protocol, which binlog2ch does not read")})
		return
	}
	for {
		it, tried, err := d.skipBuffered()
		switch {
		case err != nil:
			d.queue(item{size: 1, err: err})
			return
		case it.ev != nil:
			if !d.queue(it) || !d.wire.ready() && !d.flush() {
				return
			}
			continue
		}
		data, err := d.wire.next()
		var ev *replication.BinlogEvent
		switch {
		case err != nil:
		case len(data) == 0:
			err = errors.New("empty packet in the binlog stream")
		case data[0] == mysql.ERR_HEADER:
			err = d.conn.HandleErrorPacket(data)
		case data[0] == mysql.EOF_HEADER && len(data) < 9:
			err = io.EOF // the server ended the stream
		case data[0] != mysql.OK_HEADER:
			err = fmt.Errorf("binlog stream: packet starting with 0x%02x", data[0])
		case len(data) > 1+4 && replication.EventType(data[1+4]) == replication.TRANSACTION_PAYLOAD_EVENT:
			// A compressed transaction: its events one at a time, not
			// go-mysql's whole payload in memory (payload.go).
			if !d.payload(data[1:]) || !d.wire.ready() && !d.flush() {
				return
			}
			continue
		default:
			ev, err = d.parse(parser, data[1:], !tried)
			d.pace(ev)
		}
		it = item{ev: ev, size: len(data), err: err}
		if ev != nil {
			it.buf = data
		}
		if !d.queue(it) || err != nil {
			return
		}
		if !d.wire.ready() && !d.flush() {
			return
		}
	}
}

// skipBuffered reads the next packet at its header where it lies in the
// read buffer, not copied, if it is a rows event of a skipped table
// (skipread.go): the event refers to the buffer until Release. tried: the
// packet's header was read, and it is no such event.
func (d *Conn) skipBuffered() (it item, tried bool, err error) {
	if len(d.maps) == 0 {
		return item{}, false, nil // no table map of a skipped table
	}
	p, ok, err := d.wire.packet()
	if err != nil || !ok || len(p) < 2 || p[0] != mysql.OK_HEADER {
		return item{}, false, err
	}
	ev := d.skipAtHeader(p[1:])
	if ev == nil {
		return item{}, true, nil
	}
	d.pace(ev)
	return item{ev: ev, buf: p, slab: d.wire.take(p), size: len(p)}, true, nil
}

// parse reads an event: with atHeader, a rows event of a skipped table at
// its header (skipread.go), which a packet too large for skipBuffered may
// be; any other with the parser.
func (d *Conn) parse(parser *replication.BinlogParser, data []byte, atHeader bool) (*replication.BinlogEvent, error) {
	if atHeader {
		if ev := d.skipAtHeader(data); ev != nil {
			return ev, nil
		}
	}
	ev, err := parser.Parse(data)
	if err == nil {
		markChecksum(ev, d.format)
	}
	d.track(ev)
	d.mapped(ev)
	return ev, err
}

// pace tells the wire whether the stream is catching up: the event read
// was written over catchingUp seconds ago (a heartbeat: it is not).
func (d *Conn) pace(ev *replication.BinlogEvent) {
	switch {
	case ev == nil:
	case ev.Header.EventType == replication.HEARTBEAT_EVENT || ev.Header.EventType == replication.HEARTBEAT_LOG_EVENT_V2:
		d.wire.behind = false
	case ev.Header.Timestamp != 0:
		d.wire.behind = int64(ev.Header.Timestamp)+catchingUp < d.wire.now
	}
}

// batchEvents and batchBytes bound a batch of events handed on at once.
const (
	batchEvents = 64
	batchBytes  = 1 << 20
)

// send queues an item (payload.go); it reports false when the connection
// was closed.
func (d *Conn) send(it item) bool { return d.queue(it) }

// queue adds an item to the batch being read, handing the batch on when
// it is full; it reports false when the connection was closed.
func (d *Conn) queue(it item) bool {
	d.batch = append(d.batch, it)
	d.batchSize += it.size
	if len(d.batch) < batchEvents && d.batchSize < batchBytes {
		return true
	}
	return d.flush()
}

// flush hands the batch on for GetEvent once the events read ahead leave
// room for it; it reports false when the connection was closed.
func (d *Conn) flush() bool {
	if len(d.batch) == 0 {
		return true
	}
	b := batch{items: d.batch, size: d.batchSize}
	if !d.wait(b) {
		return false
	}
	d.events <- b
	select {
	case d.batch = <-d.spare:
	default:
		d.batch = make([]item, 0, batchEvents)
	}
	d.batchSize = 0
	return true
}

// track keeps what reading a compressed transaction needs of the events
// before it: the format description and the file name.
func (d *Conn) track(ev *replication.BinlogEvent) {
	if ev == nil {
		return
	}
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		d.format = e
	case *replication.RotateEvent:
		d.file = string(e.NextLogName)
	}
}

// wait holds the reader while the events read ahead are over MaxAhead
// bytes or EventCache events; it reports false when the connection was
// closed.
func (d *Conn) wait(b batch) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.closed && d.aheadN > 0 && (d.ahead+b.size > MaxAhead || d.aheadN+len(b.items) > d.cache) {
		d.room.Wait()
	}
	d.ahead += b.size
	d.aheadN += len(b.items)
	return !d.closed
}

// GetEvent returns the next event; ctx ending returns its error. Call it
// from one goroutine.
func (d *Conn) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	d.lastEv, d.lastBuf, d.lastSlab = nil, nil, nil
	if d.next < len(d.cur) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		return d.take()
	}
	if d.cur != nil {
		// The batch is done with: its room goes to the reader.
		d.mu.Lock()
		d.ahead -= d.curSize
		d.aheadN -= len(d.cur)
		d.room.Signal()
		d.mu.Unlock()
		clear(d.cur) // its buffers are not the batch's to keep
		select {
		case d.spare <- d.cur[:0]:
		default:
		}
		d.cur, d.next = nil, 0
	}
	select {
	case b, ok := <-d.events:
		if !ok {
			return nil, errors.New("binlog stream closed")
		}
		d.cur, d.curSize, d.next = b.items, b.size, 0
		return d.take()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// take returns the current batch's next event, remembered for Release.
func (d *Conn) take() (*replication.BinlogEvent, error) {
	it := d.cur[d.next]
	d.next++
	d.lastEv, d.lastBuf, d.lastSlab = it.ev, it.buf, it.slab
	return it.ev, it.err
}

// Release hands back the buffer of ev, the event GetEvent returned last,
// once the caller is done with it, if ev is a rows event whose rows the
// decoder left undecoded (Skipped) and no one decoded since: nothing
// handed on then refers to its bytes (raw rows and decoded values are
// only made by decoding), and its buffer serves a later event. The
// caller must keep nothing of ev itself. Any other event is left to the
// garbage collector: a table map is kept by the parser, rows decoded
// raw go on with their buffer (Own). Call it from GetEvent's
// goroutine.
func (d *Conn) Release(ev *replication.BinlogEvent) {
	if ev == nil || ev != d.lastEv || d.lastBuf == nil {
		return
	}
	e, ok := ev.Event.(*replication.RowsEvent)
	if !ok || !Skipped(e) {
		return
	}
	buf, sl := d.lastBuf, d.lastSlab
	d.lastEv, d.lastBuf, d.lastSlab = nil, nil, nil
	// The batch's copy of the item goes too: it is not read again.
	d.cur[d.next-1] = item{size: d.cur[d.next-1].size}
	if h := readAtHeader(e); h != nil {
		d.pool.putSkipped(h)
	}
	if sl != nil {
		sl.release() // the read buffer it lies in
		return
	}
	d.pool.put(buf)
}

// Lease is the buffer a rows event was read into, handed on with the
// event's raw rows (Own) to whoever reads them last: it gives the buffer
// back with Free, and a later event is read into it instead of a fresh
// one (a fresh one is allocated and zeroed: a tenth of a catch-up of
// large rows). The zero Lease holds nothing.
type Lease struct {
	buf  []byte
	pool *bufferPool
}

// Free gives the buffer back. Call it once, from any goroutine, when
// nothing reads the event's bytes any more (its raw rows, values go-mysql
// decoded from them, the event itself); a copy of the Lease must not be
// freed too.
func (l Lease) Free() {
	if l.pool != nil {
		l.pool.put(l.buf)
	}
}

// Own hands the caller the buffer of ev, the event GetEvent returned last,
// if ev is a rows event whose rows stayed raw (RawRows) and the buffer is
// the wire's: Release then leaves it alone, and the caller (or whoever it
// passes the Lease to) frees it. Any other event gets the zero Lease.
// Call it from GetEvent's goroutine; a nil Conn owns nothing.
func (d *Conn) Own(ev *replication.BinlogEvent) Lease {
	if d == nil || ev == nil || ev != d.lastEv || d.lastBuf == nil {
		return Lease{}
	}
	e, ok := ev.Event.(*replication.RowsEvent)
	if !ok || len(e.Rows) != 1 || len(e.Rows[0]) != 1 {
		return Lease{}
	}
	if _, ok := e.Rows[0][0].(RawRows); !ok {
		return Lease{}
	}
	if d.lastSlab != nil {
		// It lies in a read buffer, which then stays its own (the
		// collector frees it): decoded after all, rare.
		d.lastEv, d.lastBuf, d.lastSlab = nil, nil, nil
		d.cur[d.next-1] = item{size: d.cur[d.next-1].size}
		return Lease{}
	}
	l := Lease{buf: d.lastBuf, pool: d.pool}
	d.lastEv, d.lastBuf = nil, nil
	d.cur[d.next-1] = item{size: d.cur[d.next-1].size}
	return l
}

// Close closes the connection; the server's dump thread ends when it next
// writes. It never waits for the server.
func (d *Conn) Close() {
	d.stopOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.room.Broadcast()
		d.mu.Unlock()
		_ = d.conn.Close()
		d.log.Debug("binlog connection closed")
		// Let a reader blocked on a full channel go.
		go func() {
			for range d.events {
			}
		}()
	})
}

// erSlaveSameID is MariaDB's ER_SLAVE_SAME_ID, which go-mysql does not
// name.
const erSlaveSameID = 4052

// SameServerID reports whether err is the server dropping this binlog
// connection because another replica registered with the same server id.
// MariaDB tells replicas apart by server id alone and sends the older
// connection ER_SLAVE_SAME_ID (sql_repl.cc); MySQL tells them apart by
// the UUID each sets (binlog2ch sets a fresh one per connection), and
// where it does drop one sends 1236 with the same words
// (rpl_binlog_sender.cc: "A slave [replica] with the same
// server_uuid/server_id as this slave [replica] has connected").
func SameServerID(err error) bool {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return false
	}
	return me.Code == erSlaveSameID ||
		me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && strings.Contains(me.Message, "same server_uuid/server_id")
}
