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
// It never shares code with the client it tests: it decodes with ch-go's
// compress package and its own parsing (codec.go), so that it checks the
// client rather than agreeing with it. It must not be imported outside
// tests.
package chnativetest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is a scripted server on a loopback port.
type Server struct {
	script Script
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]bool
	inserts []Insert
	errs    []error
	tokens  map[string]bool // table + "\x00" + token, of inserts stored
}

// Start starts a server playing script; it stops when the test ends, and
// fails the test with any violation of the protocol it saw.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1", script)
}

// StartOn is Start listening on host's address (an IP of this host).
func StartOn(t testing.TB, host string, script Script) *Server {
	t.Helper()
	if script.Name == "" {
		script.Name = "ClickHouse"
	}
	if script.Compression == 0 {
		script.Compression = MethodLZ4
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
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

	hello    string            // client name major.minor revision
	settings map[string]string // the query's, those the server knows
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
	// TCPHandler::receiveHello, then the session's authentication; a
	// script without a user is a fresh server's users.xml: default,
	// without a password.
	wantUser, wantPass := sc.User, sc.Password
	if wantUser == "" {
		wantUser, wantPass = "default", ""
	}
	switch {
	case user == "":
		s.exception(Exception{101, "UNEXPECTED_PACKET_FROM_CLIENT", "Unexpected packet from client (no user in Hello package)"})
		return false, s.w.Flush()
	case user != wantUser || pass != wantPass:
		s.exception(Exception{516, "AUTHENTICATION_FAILED", user + ": Authentication failed: password is incorrect, or there is no user with such name."})
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
	var err error
	if ins.QueryID, err = s.readStr(); err != nil {
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
	// A server takes the flag off too (Protocol::Compression::Disable):
	// both sides' blocks then travel without frames.
	if stage != 2 || compressed > 1 {
		problems = append(problems, fmt.Sprintf("stage %d, compression %d (want 2, and 0 or 1)", stage, compressed))
	}
	ins.Compressed = compressed == 1
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
	s.settings = ins.Settings
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
	if compressed {
		if err := s.compressed(b.Bytes()); err != nil {
			return err
		}
	} else {
		s.w.Write(b.Bytes())
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
		if !failed {
			if ex := s.checkBlock(len(blocks), header, blk); ex != nil {
				// NativeReader threw while reading the block: the
				// exception at once, the rest skipped.
				s.exception(*ex)
				if err := s.w.Flush(); err != nil {
					return err
				}
				failed = true
			}
		}
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
	token := s.settings[dedupToken]
	dup := !failed && sc.DedupByToken && token != "" && s.srv.seen(query, token)
	forwarded := false
	if !failed && !dup && sc.Forward != "" {
		q, id := s.srv.Inserts()[idx].Query, s.srv.Inserts()[idx].QueryID
		if err := s.srv.forward(q, id, blocks); err != nil {
			s.srv.fail(err)
		} else {
			forwarded = true
		}
	}
	if !failed && !dup && sc.DedupByToken && token != "" && (sc.Forward == "" || forwarded) {
		s.srv.keep(query, token)
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
		ins.Forwarded = forwarded
		ins.Deduplicated = dup
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

// dedupToken is the setting a 22.2+ server deduplicates inserts by.
const dedupToken = "insert_deduplication_token"

// queryTable is the table of "INSERT INTO db.t (a, b)".
func queryTable(q string) string {
	q = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(q), "INSERT INTO"))
	if i := strings.IndexAny(q, " ("); i >= 0 {
		q = q[:i]
	}
	return q
}

// seen reports whether an insert into query's table with token was stored.
func (srv *Server) seen(query, token string) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.tokens[queryTable(query)+"\x00"+token]
}

// keep records the token of an insert stored into query's table.
func (srv *Server) keep(query, token string) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.tokens == nil {
		srv.tokens = map[string]bool{}
	}
	srv.tokens[queryTable(query)+"\x00"+token] = true
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
