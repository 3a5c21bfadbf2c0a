package binlogtest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/packet"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// The dump side of the fake: a binlog served as MySQL 8.0's Binlog_sender
// serves one (sql/rpl_binlog_sender.cc): the dump command read and
// checked (check_start_file), a fake rotate naming the file, the format
// description, then the events from the position, or, for a GTID dump,
// every transaction not in the replica's set. What a real server refuses
// it refuses with the error packet the server sends: 1236,
// ER_MASTER_FATAL_ERROR_READING_BINLOG, and the server's text. It models
// one binlog file and MySQL's GTID dump only; MariaDB's (a position dump
// after SET @slave_connect_state) is not modelled.

// Texts of MySQL 8.0's Binlog_sender (from 8.0.26, "source" for "master").
const (
	ErrNoFile        = "Could not find first log file name in binary log index file"
	ErrBelow4        = "Client requested source to start replication from position < 4"
	ErrPastEnd       = "Client requested source to start replication from position > file size"
	ErrTruncated     = "binlog truncated in the middle of event; consider out of disk space on source"
	ErrBogus         = "bogus data in log event"
	errPurgedPrefix  = "Cannot replicate because the source purged required binary logs."
	dumpNonBlock     = 1      // BINLOG_DUMP_NON_BLOCK: EOF at the end instead of waiting
	artificialFlag   = 0x20   // LOG_EVENT_ARTIFICIAL_F, on the fake rotate
	serverID         = 1      // the fake server's, in every event it writes
	createdOffset    = 2 + 50 // the FDE's created field, after version and server version
	maxAllowedPacket = 1 << 30
)

// Dump is a dump command as the fake server read it.
type Dump struct {
	GTID     bool // COM_BINLOG_DUMP_GTID
	File     string
	Pos      uint64
	Flags    uint16
	ServerID uint32
	GTIDs    string // the replica's set, for a GTID dump
}

// Dumps are the dump commands the server read, in order.
func (b *Binlog) Dumps() []Dump {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Dump(nil), b.dumps...)
}

// SetPurged makes set the server's gtid_purged: a GTID dump from a set
// that lacks any of it is refused, as a server whose binlogs with those
// transactions are gone refuses it.
func (b *Binlog) SetPurged(t testing.TB, set string) {
	s, err := mysql.ParseMysqlGTIDSet(set)
	if err != nil {
		t.Fatal(err)
	}
	b.purged = s.(*mysql.MysqlGTIDSet)
}

// Dial opens an in-memory connection to the server, sends COM_BINLOG_DUMP
// for file:pos (server id 100, flags 0: wait for new events, as binlog2ch
// asks) and returns the connection, on which the server answers.
func (b *Binlog) Dial(t testing.TB, file string, pos uint32) *client.Conn {
	return b.DialCommand(t, dumpCommand(file, pos))
}

// dumpCommand is COM_BINLOG_DUMP for file:pos, server id 100, flags 0.
func dumpCommand(file string, pos uint32) []byte {
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP}
	cmd = binary.LittleEndian.AppendUint32(cmd, pos)
	cmd = binary.LittleEndian.AppendUint16(cmd, 0)
	cmd = binary.LittleEndian.AppendUint32(cmd, 100)
	return append(cmd, file...)
}

// DialGTID sends COM_BINLOG_DUMP_GTID for the first transaction not in
// set (MySQL's text form), as MySQL's own replica sends it: no file name,
// position 4.
func (b *Binlog) DialGTID(t testing.TB, set string) *client.Conn {
	s, err := mysql.ParseMysqlGTIDSet(set)
	if err != nil {
		t.Fatal(err)
	}
	enc := s.Encode()
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP_GTID}
	cmd = binary.LittleEndian.AppendUint16(cmd, 0)
	cmd = binary.LittleEndian.AppendUint32(cmd, 100)
	cmd = binary.LittleEndian.AppendUint32(cmd, 0)
	cmd = binary.LittleEndian.AppendUint64(cmd, 4)
	cmd = binary.LittleEndian.AppendUint32(cmd, uint32(len(enc)))
	return b.DialCommand(t, append(cmd, enc...))
}

// DialCommand sends cmd (a packet's payload after 4 bytes the header goes
// in, as go-mysql's WritePacket takes it) on a new connection to the
// server and returns the connection.
func (b *Binlog) DialCommand(t testing.TB, cmd []byte) *client.Conn {
	return b.dialOn(t, b.Serve(t), cmd)
}

// DialTCP is Dial over a loopback TCP connection, on which the client
// reads what the server wrote in as few reads as the kernel allows (the
// in-memory one hands over one write at a time).
func (b *Binlog) DialTCP(t testing.TB, file string, pos uint32) *client.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	go b.serve(srv)
	return b.dialOn(t, c, dumpCommand(file, pos))
}

func (b *Binlog) dialOn(t testing.TB, c net.Conn, cmd []byte) *client.Conn {
	conn := &client.Conn{Conn: packet.NewConn(c)}
	conn.ResetSequence()
	if err := conn.WritePacket(cmd); err != nil {
		t.Fatalf("sending the dump command: %v", err)
	}
	return conn
}

// Sent is how many events the dumps wrote; on the in-memory connection
// a write returns once the client has read it.
func (b *Binlog) Sent() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent
}

// Serve starts the server on a new in-memory connection and returns the
// client's end, on which the server waits for a dump command. The
// connection closes when the test ends.
func (b *Binlog) Serve(t testing.TB) net.Conn {
	c, srv := net.Pipe()
	t.Cleanup(func() { c.Close(); srv.Close() })
	go b.serve(srv)
	return c
}

func (b *Binlog) serve(srv net.Conn) {
	w := packet.NewConn(srv)
	data, err := w.ReadPacket()
	if err != nil {
		return
	}
	d, errText := parseDump(data)
	if errText == "" {
		b.mu.Lock()
		b.dumps = append(b.dumps, d)
		b.mu.Unlock()
		errText = b.dump(w, d)
	}
	if errText != "" {
		code := uint16(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG)
		if len(data) == 0 || (data[0] != mysql.COM_BINLOG_DUMP && data[0] != mysql.COM_BINLOG_DUMP_GTID) {
			code = mysql.ER_UNKNOWN_COM_ERROR
		}
		// No "#HY000": a server sends the SQL state only to a client
		// that negotiated CLIENT_PROTOCOL_41, and these connections had
		// no handshake.
		pkt := append(make([]byte, 4), mysql.ERR_HEADER)
		pkt = binary.LittleEndian.AppendUint16(pkt, code)
		pkt = append(pkt, errText...)
		_ = w.WritePacket(pkt)
	}
	_, _ = io.Copy(io.Discard, srv)
}

// parseDump reads a dump command as com_binlog_dump and
// com_binlog_dump_gtid do.
func parseDump(data []byte) (Dump, string) {
	var d Dump
	if len(data) == 0 {
		return d, "Unknown command"
	}
	body := data[1:]
	switch data[0] {
	case mysql.COM_BINLOG_DUMP:
		if len(body) < 10 {
			return d, "Malformed communication packet."
		}
		d.Pos = uint64(binary.LittleEndian.Uint32(body))
		d.Flags = binary.LittleEndian.Uint16(body[4:])
		d.ServerID = binary.LittleEndian.Uint32(body[6:])
		d.File = string(body[10:])
	case mysql.COM_BINLOG_DUMP_GTID:
		d.GTID = true
		if len(body) < 10 {
			return d, "Malformed communication packet."
		}
		d.Flags = binary.LittleEndian.Uint16(body)
		d.ServerID = binary.LittleEndian.Uint32(body[2:])
		n := int(binary.LittleEndian.Uint32(body[6:]))
		rest := body[10:]
		if len(rest) < n+12 {
			return d, "Malformed communication packet."
		}
		d.File, rest = string(rest[:n]), rest[n:]
		d.Pos = binary.LittleEndian.Uint64(rest)
		size := int(binary.LittleEndian.Uint32(rest[8:]))
		if len(rest[12:]) != size {
			return d, "Malformed communication packet."
		}
		set, err := mysql.DecodeMysqlGTIDSet(rest[12:])
		if err != nil {
			return d, "Malformed GTID set encoding."
		}
		d.GTIDs = set.String()
	default:
		return d, "Unknown command"
	}
	return d, ""
}

// raw is the binlog file's bytes, the magic header first.
func (b *Binlog) raw() []byte {
	out := []byte{0xfe, 'b', 'i', 'n'}
	for _, e := range b.events {
		out = append(out, e.data...)
	}
	return out
}

// dump answers d as Binlog_sender::run does; it returns the text of the
// error that ends the dump, or "" once the connection is closed.
func (b *Binlog) dump(w *packet.Conn, d Dump) string {
	var exclude *mysql.MysqlGTIDSet
	if d.GTID {
		s, _ := mysql.ParseMysqlGTIDSet(d.GTIDs)
		exclude = s.(*mysql.MysqlGTIDSet)
		if b.purged != nil && !exclude.Contain(b.purged) {
			return fmt.Sprintf("%s Replicate the missing transactions from elsewhere, or provision a new replica from backup. "+
				"Consider increasing the source's binary log expiration period. The GTID set sent by the replica is '%s', "+
				"and the missing transactions are '%s'", errPurgedPrefix, exclude, missing(b.purged, exclude))
		}
	}
	// check_start_file: a file named (none: the first in the index), then
	// the position against the file's size.
	if d.File != "" && d.File != b.file {
		return ErrNoFile
	}
	if d.Pos < 4 {
		return ErrBelow4
	}
	if d.Pos > uint64(b.pos) {
		return ErrPastEnd
	}
	send := func(ev []byte) bool {
		pkt := append(make([]byte, 4, 5+len(ev)), mysql.OK_HEADER)
		if w.WritePacket(append(pkt, ev...)) != nil {
			return false
		}
		b.mu.Lock()
		b.sent++
		b.mu.Unlock()
		return true
	}
	// The fake rotate: timestamp 0, log_pos 0, artificial.
	rot := Event(replication.ROTATE_EVENT, 0, Rotate(uint32(d.Pos), b.file))
	binary.LittleEndian.PutUint32(rot, 0)
	binary.LittleEndian.PutUint16(rot[17:], artificialFlag)
	if !send(rot) {
		return ""
	}
	// The format description, its log_pos and created cleared when the
	// dump skips the file's start (a position past 4; by GTID, its first
	// transaction).
	fde := append([]byte(nil), b.events[0].data...)
	skipsFirst := false
	if exclude != nil {
		for _, e := range b.events {
			if sid, gno, ok := gtidOf(e.data); ok {
				skipsFirst = contains(exclude, sid, gno)
				break
			}
		}
	}
	if (exclude == nil && d.Pos > 4) || skipsFirst {
		binary.LittleEndian.PutUint32(fde[replication.EventHeaderSize+createdOffset:], 0)
	}
	if exclude == nil && d.Pos > 4 {
		binary.LittleEndian.PutUint32(fde[13:], 0)
	}
	if !send(fde) {
		return ""
	}
	pos := uint64(b.events[0].start) + uint64(len(b.events[0].data))
	if exclude == nil && d.Pos > 4 {
		pos = d.Pos
	}
	// The events from pos, each as the file holds it: a position inside
	// an event reads that event's tail as a header (next).
	i := slices.IndexFunc(b.events, func(e fakeEvent) bool { return uint64(e.start) >= pos })
	next := func() ([]byte, string) {
		if i >= 0 && i < len(b.events) && uint64(b.events[i].start) == pos {
			i++
			return b.events[i-1].data, ""
		}
		return b.misread(d, pos)
	}
	inExcluded, excludedEnd := false, uint64(0)
	for pos < uint64(b.pos) {
		ev, errText := next()
		if errText != "" {
			return errText
		}
		pos += uint64(len(ev))
		if exclude != nil {
			// skip_event: a GTID event opens a group, skipped when the
			// replica has it; a rotate is never skipped.
			if sid, gno, ok := gtidOf(ev); ok {
				inExcluded = contains(exclude, sid, gno)
			} else if replication.EventType(ev[4]) == replication.ROTATE_EVENT {
				inExcluded = false
			}
			if inExcluded {
				excludedEnd = pos
				continue
			}
			if excludedEnd != 0 {
				// A heartbeat moves the replica's position past what
				// was skipped.
				if !send(b.heartbeat(excludedEnd)) {
					return ""
				}
				excludedEnd = 0
			}
		}
		if !send(ev) {
			return ""
		}
	}
	if inExcluded && !send(b.heartbeat(pos)) {
		return ""
	}
	if d.Flags&dumpNonBlock != 0 || d.ServerID == 0 {
		// A non-blocking dump ends at the end of the binlog with EOF.
		_ = w.WritePacket([]byte{0, 0, 0, 0, mysql.EOF_HEADER, 0, 0, 0, 0})
	}
	return ""
}

// misread reads an event at pos, which is not where one starts, as the
// server reads what it takes for an event's header there: an error, or
// bytes it then sends as an event.
func (b *Binlog) misread(d Dump, pos uint64) ([]byte, string) {
	raw := b.raw()
	rest := raw[pos:]
	if len(rest) < replication.EventHeaderSize {
		return nil, b.readError(ErrTruncated, d, pos, uint64(len(raw)))
	}
	n := uint64(binary.LittleEndian.Uint32(rest[9:]))
	switch {
	case n < replication.EventHeaderSize:
		return nil, b.readError(ErrBogus, d, pos, pos+replication.EventHeaderSize)
	case n > maxAllowedPacket:
		return nil, b.readError("log event entry exceeded max_allowed_packet; Increase max_allowed_packet on source", d, pos, pos+replication.EventHeaderSize)
	case n > uint64(len(rest)):
		return nil, b.readError(ErrTruncated, d, pos, uint64(len(raw)))
	}
	return rest[:n], ""
}

// readError is an error reading the binlog after the file was opened:
// Binlog_sender::run adds where the dump began and what it had read.
func (b *Binlog) readError(text string, d Dump, lastEvent, lastByte uint64) string {
	path := "./" + b.file
	start := d.File
	if start == "" {
		start = b.file
	}
	return fmt.Sprintf("%s; the first event '%s' at %d, the last event read from '%s' at %d, the last byte read from '%s' at %d.",
		text, start, d.Pos, path, lastEvent, path, lastByte)
}

func (b *Binlog) heartbeat(pos uint64) []byte {
	ev := Event(replication.HEARTBEAT_EVENT, uint32(pos), []byte(b.file))
	binary.LittleEndian.PutUint32(ev, 0)
	return ev
}

// gtidOf is a GTID event's source uuid and number.
func gtidOf(ev []byte) (uuid.UUID, int64, bool) {
	if replication.EventType(ev[4]) != replication.GTID_EVENT || len(ev) < replication.EventHeaderSize+25 {
		return uuid.UUID{}, 0, false
	}
	body := ev[replication.EventHeaderSize:]
	sid, _ := uuid.FromBytes(body[1:17])
	return sid, int64(binary.LittleEndian.Uint64(body[17:])), true
}

func contains(s *mysql.MysqlGTIDSet, sid uuid.UUID, gno int64) bool {
	for _, ivs := range (*s)[sid] {
		if ivs.Contain(mysql.IntervalSlice{{Start: gno, Stop: gno + 1}}) {
			return true
		}
	}
	return false
}

// missing is purged less what the replica has, in MySQL's text form.
func missing(purged, has *mysql.MysqlGTIDSet) string {
	out := mysql.NewMysqlGTIDSet()
	for sid, tags := range *purged {
		for _, ivs := range tags {
			for _, iv := range ivs {
				for g := iv.Start; g < iv.Stop; g++ {
					if !contains(has, sid, g) {
						out.AddGTID(sid, g)
					}
				}
			}
		}
	}
	return strings.TrimSpace(out.String())
}
