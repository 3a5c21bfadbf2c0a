// Package chnativetest is a scripted ClickHouse server for tests of native
// protocol clients: the protocol paths that ClickHouse 18.16, the only
// server on the development machine, cannot exercise.
//
// It answers as a current server does to a client of whatever revision the
// client announces, gating every field and packet on that revision the way
// ClickHouse's TCPHandler does (src/Server/TCPHandler.cpp, with the
// revisions of src/Core/ProtocolDefines.h): what a server of revision
// 54492 sends a client at 54420 is its name, version and revision, time
// zone, display name and patch in the hello; TableColumns and the header
// block before an INSERT's data; five-field Progress; no ProfileEvents,
// TimezoneUpdate or custom serialization. Its blocks are compressed with
// the script's method, as a server's network_compression_method decides.
// The query's settings are read in the old binary format a client below
// revision 54429 sends, typed by the settings the script says the server
// knows; an unknown one is skipped as if its value were a string, as the
// server does, which desynchronises the packet when it was an integer.
//
// It shares no code with the client it tests: it decodes with ch-go's
// compress package and its own parsing, so that it checks the client
// rather than agreeing with it.
package chnativetest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/go-faster/city"
)

// Protocol revisions the server gates on (ProtocolDefines.h).
const (
	revClientInfo             = 54032
	revServerTimezone         = 54058
	revQuotaKeyInClientInfo   = 54060
	revDisplayName            = 54372
	revVersionPatch           = 54401
	revServerLogs             = 54406
	revColumnDefaults         = 54410
	revClientWrite            = 54420
	revSettingsAsStrings      = 54429
	revInterserverSecret      = 54441
	revDistributedDepth       = 54448
	revInitialQueryStartTime  = 54449
	revIncrementalProfile     = 54451
	revCustomSerialization    = 54454
	revProfileEventsInInsert  = 54456
	revAddendum               = 54458
	revQueryTimeInProgress    = 54460
	revPasswordRules          = 54461
	revInterserverSecretV2    = 54462
	revTotalBytesInProgress   = 54463
	revTimezoneUpdates        = 54464
	revChunkedPackets         = 54470
	revParallelReplicasProto  = 54471
	revServerSettings         = 54474
	revQueryPlanSerialization = 54477

	// Revision26 is the protocol revision of a ClickHouse 26.x server.
	Revision26 = 54492
)

// Packet types.
const (
	clientHello = 0
	clientQuery = 1
	clientData  = 2
	clientPing  = 4

	serverHello          = 0
	serverData           = 1
	serverException      = 2
	serverProgress       = 3
	serverPong           = 4
	serverEndOfStream    = 5
	serverLog            = 10
	serverTableColumns   = 11
	serverProfileEvents  = 14
	serverTimezoneUpdate = 17
)

// Compression method bytes of a frame.
const (
	MethodNone = 0x02
	MethodLZ4  = 0x82
	MethodZSTD = 0x90
)

// Column is a block's column: its name and type.
type Column struct{ Name, Type string }

// Exception is an error the server reports.
type Exception struct {
	Code          int32
	Name, Message string
}

// Script is how the server behaves.
type Script struct {
	// Name, version and protocol revision, as the hello gives them.
	Name                string // "ClickHouse" when empty
	Major, Minor, Patch uint64
	Revision            uint64
	Timezone            string
	DisplayName         string
	// User and Password, when User is set, are the only credentials the
	// server accepts.
	User, Password string
	// Compression is the method byte of the server's compressed blocks,
	// as network_compression_method sets it: MethodLZ4 (also when 0),
	// MethodZSTD or MethodNone. Any other byte goes out in an otherwise
	// valid frame, as a method a client does not know.
	Compression byte
	// Settings are the query settings the server knows, each with its
	// type as system.settings names it (Bool, UInt64, Int64, Float,
	// String, ...; the type decides how the old binary format carries it).
	Settings map[string]string
	// ValidateClientInfo: the server checks that the client name and
	// version in each query's client info are the hello's (the server
	// setting validate_tcp_client_information, from 23.8).
	ValidateClientInfo bool
	// Header gives an INSERT's header columns from its query. Nil: the
	// query's column list, each column UInt32.
	Header func(query string) []Column
	// BeforeHeader go out after the query (and TableColumns, as servers
	// send it), before the header block.
	BeforeHeader []Packet
	// AfterData go out once the client's data has been read, before the
	// end of the stream.
	AfterData []Packet
	// Fail, when set, ends the insert with this exception instead of
	// EndOfStream: once the client's data is in (FailAfterBlocks 0), or
	// after that many data blocks, the rest skipped as the server does.
	Fail            *Exception
	FailAfterBlocks int
}

// Packet is one server packet a script sends.
type Packet struct {
	name  string
	write func(s *session) bool // false: not sent at this revision
}

// Progress is a Progress packet, its fields written as a server writes
// them for the client's revision (ProgressValues::write): read rows and
// bytes, total rows, then total bytes (54463), written rows and bytes
// (54420), elapsed nanoseconds (54460).
func Progress(readRows, readBytes, totalRows, writtenRows, writtenBytes uint64) Packet {
	return Packet{"Progress", func(s *session) bool {
		s.uvarint(serverProgress)
		s.uvarint(readRows)
		s.uvarint(readBytes)
		s.uvarint(totalRows)
		if s.rev >= revTotalBytesInProgress {
			s.uvarint(0)
		}
		if s.rev >= revClientWrite {
			s.uvarint(writtenRows)
			s.uvarint(writtenBytes)
		}
		if s.rev >= revQueryTimeInProgress {
			s.uvarint(1000)
		}
		return true
	}}
}

// Log is a Log packet with one message, as a server sends its log to a
// client that asked for it (send_logs_level), from revision 54406: an
// uncompressed block.
func Log(text string) Packet {
	return Packet{"Log", func(s *session) bool {
		if s.rev < revServerLogs {
			return false
		}
		s.uvarint(serverLog)
		s.str("")
		var b blockWriter
		b.header(s.rev, 8, 1)
		b.column("event_time", "DateTime", []byte{1, 2, 3, 4})
		b.column("event_time_microseconds", "UInt32", []byte{5, 6, 7, 8})
		b.column("host_name", "String", stringValue("host"))
		b.column("query_id", "String", stringValue("q"))
		b.column("thread_id", "UInt64", make([]byte, 8))
		b.column("priority", "Int8", []byte{6})
		b.column("source", "String", stringValue("executeQuery"))
		b.column("text", "String", stringValue(text))
		s.w.Write(b.Bytes())
		return true
	}}
}

// ProfileEvents is a ProfileEvents packet as a server sends it: only to a
// client at revision 54451 or later (54456 during an INSERT). To an older
// client the server sends nothing, and neither does this.
func ProfileEvents() Packet {
	return Packet{"ProfileEvents", func(s *session) bool {
		if s.rev < revProfileEventsInInsert {
			return false
		}
		s.uvarint(serverProfileEvents)
		s.str("")
		var b blockWriter
		b.header(s.rev, 2, 1)
		b.column("name", "String", stringValue("InsertedRows"))
		b.column("value", "Int64", make([]byte, 8))
		s.w.Write(b.Bytes())
		return true
	}}
}

// TimezoneUpdate is a TimezoneUpdate packet: only to a client at revision
// 54464 or later.
func TimezoneUpdate(tz string) Packet {
	return Packet{"TimezoneUpdate", func(s *session) bool {
		if s.rev < revTimezoneUpdates {
			return false
		}
		s.uvarint(serverTimezoneUpdate)
		s.str(tz)
		return true
	}}
}

// Raw is a packet of type kind with body as is, whatever the client's
// revision: a server that breaks the protocol, for a client to refuse.
func Raw(kind uint64, body []byte) Packet {
	return Packet{"packet " + strconv.FormatUint(kind, 10), func(s *session) bool {
		s.uvarint(kind)
		s.w.Write(body)
		return true
	}}
}

// Block is a data block a client sent: its columns, rows and each
// column's data as it came.
type Block struct {
	Columns []Column
	Rows    int
	Data    [][]byte
}

// Insert is what a client sent for one INSERT.
type Insert struct {
	Query string
	// Hello and ClientInfo are the client's name, major.minor and
	// revision in its hello and in the query's client info.
	Hello, ClientInfo string
	// InitialAddress is the client info's initial address.
	InitialAddress string
	// Settings are the settings the server knew, with their values (the
	// varint, or the string of a string-typed one); Unknown those it did
	// not, skipped as strings.
	Settings map[string]string
	Unknown  []string
	// Header is what the server sent as the INSERT's header.
	Header []Column
	Blocks []Block
	// Sent names the packets the script sent, Withheld those it did not
	// at the client's revision.
	Sent, Withheld []string
	// Completed: the server read the whole insert and answered it
	// (EndOfStream or the script's exception).
	Completed bool
}

// Server is a scripted server on a loopback port.
type Server struct {
	script Script
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]bool
	inserts []Insert
	errs    []error
}

// Start starts a server playing script; it stops when the test ends, and
// fails the test with any violation of the protocol it saw.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	if script.Name == "" {
		script.Name = "ClickHouse"
	}
	if script.Compression == 0 {
		script.Compression = MethodLZ4
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{script: script, ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		s.Close()
		for _, err := range s.Errors() {
			t.Errorf("scripted server: %v", err)
		}
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and closes its connections.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Inserts are the INSERTs clients sent so far, in the order they began.
func (s *Server) Inserts() []Insert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Insert(nil), s.inserts...)
}

// Errors are the client's protocol violations the server saw.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// TakeErrors returns the violations seen so far and forgets them: for a
// test that provokes one on purpose.
func (s *Server) TakeErrors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := s.errs
	s.errs = nil
	return errs
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			ss := &session{srv: s, r: bufio.NewReader(c), w: bufio.NewWriter(c)}
			if err := ss.serve(); err != nil && !hangUp(err) {
				s.fail(err)
			}
		}()
	}
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// hangUp reports whether err is the client closing the connection, which
// it may do at any point (after an error of its own, say).
func hangUp(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// session is one client connection.
type session struct {
	srv *Server
	r   *bufio.Reader
	w   *bufio.Writer
	rev uint64 // the revision both sides speak: the lower one

	hello string // client name major.minor revision
}

func (s *session) uvarint(v uint64) {
	var b [binary.MaxVarintLen64]byte
	s.w.Write(b[:binary.PutUvarint(b[:], v)])
}

func (s *session) str(v string) {
	s.uvarint(uint64(len(v)))
	s.w.WriteString(v)
}

func (s *session) readUvarint() (uint64, error) { return binary.ReadUvarint(s.r) }

func (s *session) readStr() (string, error) { return readString(s.r) }

func readString(r io.ByteReader) (string, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return "", err
	}
	if n > 1<<24 {
		return "", fmt.Errorf("a string of %d bytes", n)
	}
	b := make([]byte, n)
	for i := range b {
		if b[i], err = r.ReadByte(); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

func (s *session) exception(e Exception) {
	s.uvarint(serverException)
	var code [4]byte
	binary.LittleEndian.PutUint32(code[:], uint32(e.Code))
	s.w.Write(code[:])
	s.str(e.Name)
	s.str(e.Name + ": " + e.Message)
	s.str("") // stack trace
	s.w.WriteByte(0)
}

func (s *session) serve() error {
	if ok, err := s.handshake(); !ok {
		return err
	}
	for {
		kind, err := s.readUvarint()
		if err != nil {
			return err
		}
		switch kind {
		case clientPing:
			s.uvarint(serverPong)
			if err := s.w.Flush(); err != nil {
				return err
			}
		case clientQuery:
			if err := s.query(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("packet %d from the client between queries", kind)
		}
	}
}

// handshake reads the client's hello and answers as TCPHandler::sendHello;
// ok when the client may go on (not after refusing its credentials).
func (s *session) handshake() (ok bool, err error) {
	sc := &s.srv.script
	kind, err := s.readUvarint()
	if err != nil {
		return false, err
	}
	if kind != clientHello {
		return false, fmt.Errorf("packet %d instead of a hello", kind)
	}
	name, err := s.readStr()
	if err != nil {
		return false, err
	}
	var ver [3]uint64
	for i := range ver {
		if ver[i], err = s.readUvarint(); err != nil {
			return false, err
		}
	}
	var db, user, pass string
	for _, p := range []*string{&db, &user, &pass} {
		if *p, err = s.readStr(); err != nil {
			return false, err
		}
	}
	s.hello = fmt.Sprintf("%s %d.%d revision %d", name, ver[0], ver[1], ver[2])
	s.rev = min(ver[2], sc.Revision)
	if sc.User != "" && (user != sc.User || pass != sc.Password) {
		s.exception(Exception{516, "AUTHENTICATION_FAILED", user + ": Authentication failed"})
		return false, s.w.Flush()
	}
	s.uvarint(serverHello)
	s.str(sc.Name)
	s.uvarint(sc.Major)
	s.uvarint(sc.Minor)
	s.uvarint(sc.Revision)
	if s.rev >= revParallelReplicasProto {
		s.uvarint(8)
	}
	if s.rev >= revServerTimezone {
		s.str(sc.Timezone)
	}
	if s.rev >= revDisplayName {
		s.str(sc.DisplayName)
	}
	if s.rev >= revVersionPatch {
		s.uvarint(sc.Patch)
	}
	if s.rev >= revChunkedPackets {
		s.str("notchunked")
		s.str("notchunked")
	}
	if s.rev >= revPasswordRules {
		s.uvarint(0)
	}
	if s.rev >= revInterserverSecretV2 {
		s.w.Write(make([]byte, 8))
	}
	if s.rev >= revServerSettings {
		s.str("") // no settings
	}
	if s.rev >= revQueryPlanSerialization {
		s.uvarint(1)
	}
	if err := s.w.Flush(); err != nil {
		return false, err
	}
	if s.rev >= revAddendum {
		return false, fmt.Errorf("client revision %d sends an addendum this server does not read", ver[2])
	}
	return true, nil
}

// query reads a query packet after its type, then plays an INSERT.
func (s *session) query() error {
	sc := &s.srv.script
	if s.rev >= revSettingsAsStrings {
		return fmt.Errorf("client revision %d: this server reads only the old settings format (below %d)", s.rev, revSettingsAsStrings)
	}
	ins := Insert{Hello: s.hello, Settings: map[string]string{}}
	if _, err := s.readStr(); err != nil { // query id
		return err
	}
	var problems []string
	if s.rev >= revClientInfo {
		if err := s.clientInfo(&ins, &problems); err != nil {
			return err
		}
	}
	// Settings, in the old binary format: each typed by the server's
	// definition (BaseSettings::read with SettingsWriteFormat::BINARY).
	for {
		name, err := s.readStr()
		if err != nil {
			return err
		}
		if name == "" {
			break
		}
		typ, known := sc.Settings[name]
		if !known {
			// As the server does: a warning, and the value skipped as a
			// string, whatever it was.
			if _, err := s.readStr(); err != nil {
				return err
			}
			ins.Unknown = append(ins.Unknown, name)
			continue
		}
		var v string
		switch typ {
		case "Bool", "UInt64", "UInt32", "UInt8":
			u, err := s.readUvarint()
			if err != nil {
				return err
			}
			v = strconv.FormatUint(u, 10)
		case "Int64", "Int32":
			i, err := binary.ReadVarint(s.r)
			if err != nil {
				return err
			}
			v = strconv.FormatInt(i, 10)
		default: // floats, strings, enums, ...: strings
			if v, err = s.readStr(); err != nil {
				return err
			}
		}
		ins.Settings[name] = v
	}
	stage, err := s.readUvarint()
	if err != nil {
		return err
	}
	compressed, err := s.readUvarint()
	if err != nil {
		return err
	}
	if ins.Query, err = s.readStr(); err != nil {
		return err
	}
	if stage != 2 || compressed != 1 {
		problems = append(problems, fmt.Sprintf("stage %d, compression %d (want 2, 1)", stage, compressed))
	}
	// The external tables: data blocks up to an empty one.
	for {
		b, err := s.readData(compressed == 1)
		if err != nil {
			return fmt.Errorf("external tables: %w", err)
		}
		if len(b.Columns) == 0 && b.Rows == 0 {
			break
		}
	}
	idx := s.srv.record(ins)
	if len(problems) > 0 {
		err := errors.New(strings.Join(problems, "; "))
		s.srv.fail(err)
		s.exception(Exception{690, "CLIENT_INFO_DOES_NOT_MATCH", err.Error()})
		return s.w.Flush()
	}
	if len(ins.Unknown) > 0 {
		s.srv.fail(fmt.Errorf("the client sent settings the server does not know: %v (in the old format each is skipped as a string: an integer one desynchronises the packet)", ins.Unknown))
	}
	return s.insert(idx, ins.Query, compressed == 1)
}

// clientInfo reads the query's client info (ClientInfo::read at the
// client's revision) and checks it as a server does.
func (s *session) clientInfo(ins *Insert, problems *[]string) error {
	kind, err := s.r.ReadByte()
	if err != nil {
		return err
	}
	if kind == 0 {
		return nil
	}
	var user, qid string
	for _, p := range []*string{&user, &qid, &ins.InitialAddress} {
		if *p, err = s.readStr(); err != nil {
			return err
		}
	}
	if s.rev >= revInitialQueryStartTime {
		if _, err := s.r.Discard(8); err != nil {
			return err
		}
	}
	iface, err := s.r.ReadByte()
	if err != nil {
		return err
	}
	if iface != 1 {
		return fmt.Errorf("client info interface %d, not TCP", iface)
	}
	var osUser, host, name string
	for _, p := range []*string{&osUser, &host, &name} {
		if *p, err = s.readStr(); err != nil {
			return err
		}
	}
	var ver [3]uint64
	for i := range ver {
		if ver[i], err = s.readUvarint(); err != nil {
			return err
		}
	}
	ins.ClientInfo = fmt.Sprintf("%s %d.%d revision %d", name, ver[0], ver[1], ver[2])
	if s.rev >= revQuotaKeyInClientInfo {
		if _, err := s.readStr(); err != nil {
			return err
		}
	}
	if s.rev >= revDistributedDepth {
		if _, err := s.readUvarint(); err != nil {
			return err
		}
	}
	if s.rev >= revVersionPatch {
		if _, err := s.readUvarint(); err != nil {
			return err
		}
	}
	if s.rev >= revInterserverSecret {
		return fmt.Errorf("client revision %d: this server reads client info only below %d", s.rev, revInterserverSecret)
	}
	// An IP literal with a numeric port: a current server refuses
	// anything else in a secondary query and would have to resolve it
	// otherwise.
	if host, port, err := net.SplitHostPort(ins.InitialAddress); err != nil || net.ParseIP(host) == nil || !numeric(port) {
		*problems = append(*problems, fmt.Sprintf("initial address %q is not an IP literal with a port", ins.InitialAddress))
	}
	if s.srv.script.ValidateClientInfo && kind != 2 && ins.ClientInfo != s.hello {
		*problems = append(*problems, fmt.Sprintf("Client info's client name or version (%s) does not match the hello's (%s)", ins.ClientInfo, s.hello))
	}
	return nil
}

func numeric(s string) bool {
	_, err := strconv.ParseUint(s, 10, 16)
	return err == nil
}

func (srv *Server) record(ins Insert) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.inserts = append(srv.inserts, ins)
	return len(srv.inserts) - 1
}

func (srv *Server) update(i int, f func(*Insert)) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	f(&srv.inserts[i])
}

// insert plays an INSERT whose query was read, as TCPHandler's
// processInsertQuery: TableColumns (54410), the header block, the data,
// then EndOfStream (no Progress or ProfileEvents below their revisions).
func (s *session) insert(idx int, query string, compressed bool) error {
	sc := &s.srv.script
	header := queryColumns(query)
	if sc.Header != nil {
		header = sc.Header(query)
	}
	var sent, withheld []string
	send := func(ps []Packet) {
		for _, p := range ps {
			if p.write(s) {
				sent = append(sent, p.name)
			} else {
				withheld = append(withheld, p.name)
			}
		}
	}
	if s.rev >= revColumnDefaults {
		s.uvarint(serverTableColumns)
		s.str("")
		var d strings.Builder
		fmt.Fprintf(&d, "columns format version: 1\n%d columns:\n", len(header))
		for _, c := range header {
			fmt.Fprintf(&d, "`%s` %s\n", c.Name, c.Type)
		}
		s.str(d.String())
		sent = append(sent, "TableColumns")
	}
	send(sc.BeforeHeader)
	var b blockWriter
	b.header(s.rev, len(header), 0)
	for _, c := range header {
		b.column(c.Name, c.Type, nil)
	}
	s.uvarint(serverData)
	s.str("")
	if err := s.compressed(b.Bytes()); err != nil {
		return err
	}
	sent = append(sent, "header")
	if err := s.w.Flush(); err != nil {
		return err
	}
	s.srv.update(idx, func(ins *Insert) { ins.Header = header; ins.Sent, ins.Withheld = sent, withheld })
	var blocks []Block
	failed := false
	for {
		blk, err := s.readData(compressed)
		if err != nil {
			s.srv.update(idx, func(ins *Insert) { ins.Blocks = blocks })
			return fmt.Errorf("insert data: %w", err)
		}
		if len(blk.Columns) == 0 && blk.Rows == 0 {
			break
		}
		blocks = append(blocks, blk)
		if !failed && sc.Fail != nil && sc.FailAfterBlocks > 0 && len(blocks) == sc.FailAfterBlocks {
			// An exception while the data comes in: sent at once, the
			// rest of the data then read and dropped (skipData).
			s.exception(*sc.Fail)
			if err := s.w.Flush(); err != nil {
				return err
			}
			failed = true
		}
	}
	if !failed {
		send(sc.AfterData)
	}
	// Recorded before the last packet goes out: the client may look at
	// the record as soon as it has that packet.
	s.srv.update(idx, func(ins *Insert) {
		ins.Blocks = blocks
		ins.Sent, ins.Withheld = sent, withheld
		ins.Completed = true
	})
	if !failed {
		if sc.Fail != nil {
			s.exception(*sc.Fail)
		} else {
			s.uvarint(serverEndOfStream)
		}
	}
	return s.w.Flush()
}

// queryColumns is the column list of "INSERT INTO t (a, b) VALUES", each
// column typed UInt32.
func queryColumns(q string) []Column {
	_, list, ok := strings.Cut(q, "(")
	list, _, ok2 := strings.Cut(list, ")")
	if !ok || !ok2 {
		return nil
	}
	var cols []Column
	for _, n := range strings.Split(list, ",") {
		cols = append(cols, Column{strings.Trim(strings.TrimSpace(n), "`"), "UInt32"})
	}
	return cols
}

// compressed writes a block in one frame of the script's method.
func (s *session) compressed(data []byte) error {
	method := s.srv.script.Compression
	m := compress.None // also for a method no client knows, patched below
	switch method {
	case MethodLZ4:
		m = compress.LZ4
	case MethodZSTD:
		m = compress.ZSTD
	}
	w := compress.NewWriter(compress.LevelZero, m)
	if err := w.Compress(data); err != nil {
		return err
	}
	frame := w.Data
	if frame[16] != method {
		// A method no client knows, in a frame whose checksum holds.
		frame[16] = method
		h := city.CH128(frame[16:])
		binary.LittleEndian.PutUint64(frame[0:], h.Low)
		binary.LittleEndian.PutUint64(frame[8:], h.High)
	}
	_, err := s.w.Write(frame)
	return err
}

// readData reads a client Data packet: its type, table name and block.
func (s *session) readData(compressed bool) (Block, error) {
	kind, err := s.readUvarint()
	if err != nil {
		return Block{}, err
	}
	if kind != clientData {
		return Block{}, fmt.Errorf("packet %d instead of data", kind)
	}
	if _, err := s.readStr(); err != nil {
		return Block{}, err
	}
	var r *bufio.Reader = s.r
	if compressed {
		// The client ends a frame with each block: the reader stops at
		// the block's end, where the next packet begins.
		r = bufio.NewReader(compress.NewReader(s.r))
	}
	return readBlock(r, s.rev)
}

func readBlock(r *bufio.Reader, rev uint64) (Block, error) {
	var b Block
	for {
		field, err := binary.ReadUvarint(r)
		if err != nil {
			return b, err
		}
		if field == 0 {
			break
		}
		n := map[uint64]int{1: 1, 2: 4}[field]
		if n == 0 {
			return b, fmt.Errorf("block info field %d", field)
		}
		if _, err := r.Discard(n); err != nil {
			return b, err
		}
	}
	ncols, err := binary.ReadUvarint(r)
	if err != nil {
		return b, err
	}
	rows, err := binary.ReadUvarint(r)
	if err != nil {
		return b, err
	}
	b.Rows = int(rows)
	for i := uint64(0); i < ncols; i++ {
		var c Column
		if c.Name, err = readString(r); err != nil {
			return b, err
		}
		if c.Type, err = readString(r); err != nil {
			return b, err
		}
		if rev >= revCustomSerialization {
			return b, errors.New("custom serialization is not read here")
		}
		var data bytes.Buffer
		if rows > 0 {
			if err := readValues(r, &data, c.Type, int(rows)); err != nil {
				return b, fmt.Errorf("column %s %s: %w", c.Name, c.Type, err)
			}
		}
		b.Columns = append(b.Columns, c)
		b.Data = append(b.Data, data.Bytes())
	}
	return b, nil
}

// readValues copies rows values of type typ from r to out.
func readValues(r *bufio.Reader, out *bytes.Buffer, typ string, rows int) error {
	if w := fixedWidth(typ); w > 0 {
		_, err := io.CopyN(out, r, int64(w*rows))
		return err
	}
	inner := func(prefix string) (string, bool) {
		if strings.HasPrefix(typ, prefix+"(") && strings.HasSuffix(typ, ")") {
			return typ[len(prefix)+1 : len(typ)-1], true
		}
		return "", false
	}
	if t, ok := inner("Nullable"); ok {
		if _, err := io.CopyN(out, r, int64(rows)); err != nil {
			return err
		}
		return readValues(r, out, t, rows)
	}
	if t, ok := inner("Array"); ok {
		var last uint64
		for i := 0; i < rows; i++ {
			var off [8]byte
			if _, err := io.ReadFull(r, off[:]); err != nil {
				return err
			}
			out.Write(off[:])
			last = binary.LittleEndian.Uint64(off[:])
		}
		return readValues(r, out, t, int(last))
	}
	if typ == "String" {
		for i := 0; i < rows; i++ {
			s, err := readString(r)
			if err != nil {
				return err
			}
			out.Write(stringValue(s))
		}
		return nil
	}
	return fmt.Errorf("a %s column: this server reads no such data", typ)
}

// fixedWidth is the width of a fixed-width type's values, 0 for others.
func fixedWidth(typ string) int {
	name, args, _ := strings.Cut(typ, "(")
	switch name {
	case "UInt8", "Int8", "Bool", "Enum8":
		return 1
	case "UInt16", "Int16", "Date", "Enum16":
		return 2
	case "UInt32", "Int32", "Float32", "DateTime", "Date32", "IPv4":
		return 4
	case "UInt64", "Int64", "Float64", "DateTime64":
		return 8
	case "UInt128", "Int128", "UUID", "IPv6":
		return 16
	case "UInt256", "Int256":
		return 32
	case "Decimal":
		p, _ := strconv.Atoi(strings.TrimSpace(strings.Split(args, ",")[0]))
		switch {
		case p <= 9:
			return 4
		case p <= 18:
			return 8
		case p <= 38:
			return 16
		}
		return 32
	case "FixedString":
		n, _ := strconv.Atoi(strings.TrimSuffix(args, ")"))
		return n
	}
	return 0
}

func stringValue(s string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(s))), s...)
}

// blockWriter builds a block in the Native format as NativeWriter writes
// it for a client's revision.
type blockWriter struct {
	bytes.Buffer
	rev uint64
}

func (b *blockWriter) uvarint(v uint64) { b.Write(binary.AppendUvarint(nil, v)) }

func (b *blockWriter) header(rev uint64, columns, rows int) {
	b.rev = rev
	// Block info: is_overflows, bucket_num (the fields below 54480), end.
	b.Write([]byte{1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0})
	b.uvarint(uint64(columns))
	b.uvarint(uint64(rows))
}

func (b *blockWriter) column(name, typ string, data []byte) {
	b.Write(stringValue(name))
	b.Write(stringValue(typ))
	if b.rev >= revCustomSerialization {
		b.WriteByte(0) // no custom serialization
	}
	b.Write(data)
}
