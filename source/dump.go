package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

// dump is one binlog connection, read by binlog2ch rather than by
// go-mysql's BinlogSyncer. go-mysql's packet reader grows a large event's
// buffer by doubling (updating a row that holds a 64 MiB value peaked at
// over ten times the value), reads up to its event cache ahead whatever
// the events' sizes, and closes a connection by sending KILL over a new
// one, which blocks while the server does not answer. Here each event is
// read into one buffer of its own size, taken from its header; the events
// read ahead are bounded in bytes as well as in number; closing closes the
// socket. go-mysql still does the handshake, authentication, TLS, the
// session settings and the event parsing, as its BinlogSyncer does.
type dump struct {
	conn   *client.Conn
	events chan dumpItem
	// ahead is the bytes of the events read and not yet taken; the reader
	// waits while it is over maxAhead (and one event is queued).
	mu       sync.Mutex
	ahead    int
	room     *sync.Cond
	closed   bool
	stopOnce sync.Once
	log      *slog.Logger

	// The reader's state, for compressed transactions (payload.go).
	newParser func() *replication.BinlogParser    // a parser with the options of the reader's own
	format    *replication.FormatDescriptionEvent // the last one read
	file      string                              // the binlog file being read, for messages
	zr        *zstd.Decoder                       // made at the first compressed transaction
}

type dumpItem struct {
	ev   *replication.BinlogEvent
	size int
	err  error
}

// maxAhead bounds the bytes of events read ahead of the handler.
const maxAhead = 64 << 20

// startDump opens a binlog connection and asks for the binlog from pos,
// or, with gtids, from the first transaction not in gtids.
func (s *Stream) startDump(ctx context.Context, pos Position, gtids *GTIDSet) (*dump, error) {
	if s.testDial != nil {
		conn, err := s.testDial(pos, gtids)
		if err != nil {
			return nil, err
		}
		return s.newDump(conn), nil
	}
	addr := net.JoinHostPort(s.host, strconv.Itoa(int(s.port)))
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second+s.cfg.MySQL.StallTimeout)
	defer cancel()
	conn, err := client.ConnectWithDialer(connectCtx, "", addr, s.cfg.MySQL.User, s.cfg.MySQL.Password.Reveal(), "", dialer.DialContext,
		func(c *client.Conn) error {
			c.SetTLSConfig(s.cfg.MySQLTLS())
			c.SetAttributes(map[string]string{"_client_role": "binary_log_listener", "program_name": "binlog2ch"})
			// Each read of the stream waits at most this long: heartbeats
			// come every heartbeat period on an idle stream.
			c.ReadTimeout = s.cfg.MySQL.StallTimeout
			return nil
		})
	if err != nil {
		return nil, err
	}
	if err := s.prepareDump(conn, pos, gtids); err != nil {
		conn.Close()
		return nil, err
	}
	d := s.newDump(conn)
	d.log.Debug("binlog connection opened", "position", pos.String(), "server_version", conn.GetServerVersion(), "connection_id", conn.GetConnectionID())
	return d, nil
}

// newBinlogParser is a parser of the binlog connection: times parsed,
// TIMESTAMPs in UTC, rows decoded by a RowsDecoder (raw: rows of tables
// binlog2ch decodes itself left as bytes). JSON values are go-mysql's
// default rendering, which partial JSON updates reproduce (jsondiff.go).
func newBinlogParser(flavor string, raw bool) *replication.BinlogParser {
	return newBinlogParserWith(flavor, NewRowsDecoder(raw))
}

func newBinlogParserWith(flavor string, dec *RowsDecoder) *replication.BinlogParser {
	parser := replication.NewBinlogParser()
	parser.SetFlavor(flavor)
	parser.SetParseTime(true)
	parser.SetTimestampStringLocation(time.UTC)
	parser.SetRowsEventDecodeFunc(dec.Decode)
	return parser
}

// newDump reads the binlog stream of conn, on which prepareDump asked for
// it, in a goroutine of its own. A compressed transaction's events are
// parsed by parsers of their own (payload.go), with the same decoder.
func (s *Stream) newDump(conn *client.Conn) *dump {
	dec := NewRowsDecoder(s.srv.RawRows)
	newParser := func() *replication.BinlogParser { return newBinlogParserWith(s.srv.Flavor, dec) }
	d := &dump{conn: conn, events: make(chan dumpItem, max(1, s.EventCache)), log: s.log.With("component", "binlog"), newParser: newParser}
	d.room = sync.NewCond(&d.mu)
	go d.read(newParser())
	return d
}

// prepareDump sets the session up as go-mysql's BinlogSyncer does
// (checksums off, MariaDB's GTID capability, heartbeats, a replica uuid),
// registers as a replica and sends COM_BINLOG_DUMP.
func (s *Stream) prepareDump(conn *client.Conn, pos Position, gtids *GTIDSet) error {
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
	if s.srv.Flavor == mysql.MariaDBFlavor {
		// MARIA_SLAVE_CAPABILITY_GTID: the server sends its GTID events.
		if _, err := conn.Execute("SET @mariadb_slave_capability=4"); err != nil {
			return fmt.Errorf("SET @mariadb_slave_capability=4: %w", err)
		}
	}
	period := s.cfg.MySQL.HeartbeatPeriod.Nanoseconds()
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
	user := s.cfg.MySQL.User[:min(len(s.cfg.MySQL.User), 255)]
	reg := []byte{0, 0, 0, 0, mysql.COM_REGISTER_SLAVE}
	reg = binary.LittleEndian.AppendUint32(reg, s.cfg.MySQL.ServerID)
	reg = append(append(reg, byte(len(host))), host...)
	reg = append(append(reg, byte(len(user))), user...)
	reg = append(reg, 0)
	reg = binary.LittleEndian.AppendUint16(reg, s.port)
	reg = binary.LittleEndian.AppendUint32(reg, 0)
	reg = binary.LittleEndian.AppendUint32(reg, 0)
	conn.ResetSequence()
	if err := conn.WritePacket(reg); err != nil {
		return err
	}
	if _, err := conn.ReadOKPacket(); err != nil {
		return err
	}
	if gtids != nil {
		cmd, err := s.gtidDumpCommand(conn, *gtids)
		if err != nil {
			return err
		}
		conn.ResetSequence()
		return conn.WritePacket(cmd)
	}
	conn.ResetSequence()
	return conn.WritePacket(s.dumpCommand(pos))
}

// dumpCommand is COM_BINLOG_DUMP: position, flags (0: wait for new
// events), server id, file name.
func (s *Stream) dumpCommand(pos Position) []byte {
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP}
	cmd = binary.LittleEndian.AppendUint32(cmd, pos.Pos)
	cmd = binary.LittleEndian.AppendUint16(cmd, 0)
	cmd = binary.LittleEndian.AppendUint32(cmd, s.cfg.MySQL.ServerID)
	return append(cmd, pos.File...)
}

// gtidDumpCommand asks for the binlog from the first transaction not in
// gtids: on MariaDB, COM_BINLOG_DUMP without a file after setting
// @slave_connect_state (in strict mode: a server whose binlog has a
// domain's sequence numbers out of order refuses rather than skip);
// on MySQL, COM_BINLOG_DUMP_GTID with the set encoded (flags,
// server id, empty file name, position 4, the set's length and bytes).
func (s *Stream) gtidDumpCommand(conn *client.Conn, gtids GTIDSet) ([]byte, error) {
	if s.srv.Flavor == mysql.MariaDBFlavor {
		if _, err := conn.Execute("SET @slave_connect_state = '" + gtids.String() + "', @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0"); err != nil {
			return nil, fmt.Errorf("set @slave_connect_state: %w", err)
		}
		return s.dumpCommand(Position{}), nil
	}
	return mysqlGTIDDump(s.cfg.MySQL.ServerID, gtids.my.Encode()), nil
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
func (d *dump) read(parser *replication.BinlogParser) {
	defer close(d.events)
	defer d.closePayloads()
	for {
		var buf eventBuffer
		err := d.conn.ReadPacketTo(&buf)
		data := buf.bytes()
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
			if !d.payload(data[1:]) {
				return
			}
			continue
		default:
			ev, err = parser.Parse(data[1:])
			d.track(ev)
		}
		if !d.send(dumpItem{ev: ev, size: len(data), err: err}) || err != nil {
			return
		}
	}
}

// send queues an item for GetEvent once the events read ahead leave room
// for it; it reports false when the dump was closed.
func (d *dump) send(it dumpItem) bool {
	if !d.wait(it.size) {
		return false
	}
	d.events <- it
	return true
}

// track keeps what reading a compressed transaction needs of the events
// before it: the format description and the file name.
func (d *dump) track(ev *replication.BinlogEvent) {
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

// wait holds the reader while the events read ahead are over maxAhead; it
// reports false when the dump was closed.
func (d *dump) wait(size int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.closed && d.ahead > 0 && d.ahead+size > maxAhead {
		d.room.Wait()
	}
	d.ahead += size
	return !d.closed
}

// GetEvent returns the next event; ctx ending returns its error.
func (d *dump) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	select {
	case it, ok := <-d.events:
		if !ok {
			return nil, errors.New("binlog stream closed")
		}
		d.mu.Lock()
		d.ahead -= it.size
		d.room.Signal()
		d.mu.Unlock()
		return it.ev, it.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes the connection; the server's dump thread ends when it next
// writes. It never waits for the server.
func (d *dump) Close() {
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

// eventBuffer receives one packet of the binlog stream: the OK byte, then
// an event whose header (at offset 9 after the OK byte) gives its size, so
// the rest lands in one buffer of that size instead of one grown by
// doubling.
type eventBuffer struct {
	head [20]byte
	n    int // bytes in head
	b    []byte
}

func (e *eventBuffer) Write(p []byte) (int, error) {
	total := len(p)
	if e.b == nil {
		k := copy(e.head[e.n:], p)
		e.n += k
		p = p[k:]
		if e.n < len(e.head) {
			return total, nil
		}
		size := int(binary.LittleEndian.Uint32(e.head[10:]))
		if e.head[0] != mysql.OK_HEADER || size < 19 || size > 1<<30 {
			size = len(e.head) // not an event, or an implausible size: grow as needed
		}
		e.b = make([]byte, 0, 1+size)
		e.b = append(e.b, e.head[:]...)
	}
	e.b = append(e.b, p...)
	return total, nil
}

func (e *eventBuffer) bytes() []byte {
	if e.b == nil {
		return e.head[:e.n]
	}
	return e.b
}
