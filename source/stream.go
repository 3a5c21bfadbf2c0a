package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Handler is what a Stream hands the binlog's events to, in binlog order,
// from the Stream's goroutine. An error it returns stops the stream.
type Handler interface {
	// Event comes first for every event read, heartbeats included.
	Event(e Event)
	// Rows is one rows event of a selected table.
	Rows(ctx context.Context, r Rows) error
	// Statement is a statement outside a transaction (DDL); a Commit
	// follows it.
	Statement(ctx context.Context, st Statement) error
	// Commit is a transaction boundary: resuming at its position replays
	// no partial transaction.
	Commit(c Commit)
	// Tick comes after every event, and whenever Wake interrupted the wait
	// for one. When again > 0, the handler wants another Tick that soon
	// even if no event comes.
	Tick(woken bool) (again time.Duration, err error)
	// Down says the connection failed with err; the stream reconnects at
	// resume after retryIn.
	Down(err error, resume Position, retryIn time.Duration)
}

// Event is what every event tells: the stream is alive, and how current.
type Event struct {
	// Heartbeat: the server has nothing newer to send.
	Heartbeat bool
	// Timestamp is the event's commit time (Unix ns); 0 when it has none
	// (the events a server sends at connect).
	Timestamp int64
}

// Rows is one rows event of a selected table.
type Rows struct {
	Table  schema.TableName
	Schema *schema.Table // as the event's table map describes it
	Op     Op
	Rows   [][]any        // decoded by go-mysql, when Raw is nil
	Raw    binlog.RawRows // the row images undecoded (see RowsDecoder)
	// Version is the _version of the event's first row; row i has
	// Version + min(i, Slots-1) (see RowVersion).
	Version uint64
	Slots   int
	At      Position
	// Flags are the rows event's flags (RowsNoForeignKeyChecks,
	// RowsSQLForeignKeys).
	Flags uint16
	// decode decodes Raw with go-mysql (Values).
	decode func() ([][]any, error)
}

// Rows event flags (MySQL's Rows_event::enum_flag; MariaDB writes the
// first).
const (
	// RowsNoForeignKeyChecks: written with foreign_key_checks=0, so the
	// server cascaded nothing.
	RowsNoForeignKeyChecks = 1 << 1
	// RowsSQLForeignKeys (USE_SQL_FOREIGN_KEY_F, MySQL 9.6+): the server
	// applied foreign keys above the storage engine, and wrote the rows
	// its cascades changed as row events of their own, before this one.
	RowsSQLForeignKeys = 1 << 4
)

// Values returns the event's rows as go-mysql decodes them (an UPDATE's
// alternate before and after images), decoding raw row images now.
func (r *Rows) Values() ([][]any, error) {
	if r.Raw == nil || r.decode == nil {
		return r.Rows, nil
	}
	return r.decode()
}

// Statement is a query event that is not a transaction marker.
type Statement struct {
	At   Position
	Text string
	// NoTable is the kind of a statement that changes no table (routine,
	// trigger, grant...; see ddl.NonTableKind), "" otherwise.
	NoTable string
	// Effects are what the statement does to tables: parsed, or when not
	// Parsed, what its words show (ddl.Unparsed).
	Effects []ddl.Effect
	// Parsed is false for a statement that may change a table but was
	// not understood.
	Parsed bool
}

// Commit is a transaction boundary.
type Commit struct {
	Position Position
	File     uint32 // Position.File's index
	// Resume is where a restart must read from: Position, or the start
	// of the oldest XA transaction prepared before it whose XA COMMIT or
	// ROLLBACK is not read yet.
	Resume Position
	// Prepared is how many such XA transactions there are.
	Prepared int
	// At is the timestamp (Unix ns) of the transaction's last event; 0
	// when unknown.
	At int64
	// GTID is the executed GTID set at Resume ("" when the server writes
	// no GTIDs), History identifies the binlog Resume is on.
	GTID    string
	History History
	// Offset is the history's version offset: F of Position's file is
	// VersionFile(File, Offset).
	Offset int64
}

// UnreadableError: the source cannot send the binlog from a position,
// usually because that file was purged. Reconnecting cannot fix it.
type UnreadableError struct {
	From Position
	Err  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("the source cannot send the binlog from %s: %v", e.From, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// PartialImageError: a rows event whose images lack columns, written by
// a session with binlog_row_image NOBLOB or MINIMAL. Its rows cannot be
// completed from the binlog.
type PartialImageError struct {
	At      Position
	Table   schema.TableName
	Missing string // the columns missing, comma-separated
}

func (e *PartialImageError) Error() string {
	return fmt.Sprintf("binlog %s: %s: a row image without every column (missing %s): the session that wrote it had binlog_row_image NOBLOB or MINIMAL, and binlog2ch needs FULL images. Set binlog_row_image = FULL globally and make sure no session sets it otherwise",
		e.At, e.Table, e.Missing)
}

// Stream follows one server's binlog over a connection of its own (dump.go):
// positions, table maps and the schema as of each event, rows decoding,
// DDL meaning, heartbeats. It reconnects, with backoff, at the last
// transaction boundary after a failure that reconnecting can fix.
type Stream struct {
	cfg *config.Config
	log *slog.Logger
	srv Server
	wk  waker

	// EventCache is how many events the connection may read ahead (at most
	// binlog.MaxAhead bytes of them).
	EventCache int
	// MaxBackoff caps the reconnect backoff.
	MaxBackoff time.Duration
	// testDial, in tests, replaces the binlog connection: it returns one
	// on which a server sends the binlog from pos, or from gtids.
	testDial func(pos Position, gtids *GTIDSet) (*client.Conn, error)

	// The reader's state, owned by Run's goroutine.
	parser  *parser.Parser
	pos     Position // after the last event read
	fileIdx uint32
	offset  int64 // the history's version offset (RowVersion)
	// ceiling, while not 0, is the version ceiling the history met at the
	// next rotation starts at: the stream began by GTID on a new history.
	ceiling uint32
	// byGTID: resume by gtids rather than a position, until the first
	// transaction read on the new history gives one.
	byGTID bool
	gtids  GTIDSet // executed through boundary
	// gtidsKnown: gtids is the whole executed set, not only what was read
	// (a start without one learns it from the next file's header).
	gtidsKnown bool
	txGTID     *GTID // the transaction being read, until its commit
	// touched: the newest transaction of each GTID origin per table.
	touched     Touched
	fileCreated uint32   // header timestamp of the current file's format description
	last        History  // of the event ending at pos
	boundHist   History  // History at boundary
	expect      *History // the history the stream must find at its start
	// skipTo, while not 0, skips the events of a compressed transaction
	// up to its last (which ends there): checkHistory consumed it.
	skipTo    uint32
	boundary  Position     // the last transaction boundary
	resume    Position     // where to reconnect: boundary, or the oldest prepared XA's start
	xa        *openXA      // the XA transaction being read, before its XA PREPARE
	prepared  []preparedXA // XA transactions prepared, outcome not read yet; oldest first
	replaying bool         // replayXA is reading
	lastTS    int64        // timestamp (Unix ns) of the newest event read
	tables    map[uint64]*tableState
	downSince time.Time // when the stream failed, until an event arrives on a new one

	// payload is the compressed transaction being read (payload.go).
	payload *payloadState
}

// tableState is what the reader knows of one table-map id.
type tableState struct {
	name   schema.TableName
	skip   bool // not selected by the config
	schema *schema.Table
	event  *replication.TableMapEvent // the event schema was built from
	// touched is the table's entry in Stream.touched.
	touched map[string]int64
}

// Start is where a Stream begins.
type Start struct {
	Position Position
	// GTID is the executed GTID set at Position; GTIDKnown says it is the
	// whole set ("" may be an empty one), not unknown.
	GTID      string
	GTIDKnown bool
	// History identifies the binlog Position is on; its zero value checks
	// nothing (a checkpoint from before it was kept).
	History History
	// Offset is the version offset of Position's history.
	Offset int64
	// ByGTID reads from GTID instead of Position: the binlog history
	// changed (another server, RESET MASTER). The new history's first file
	// gets F = Ceiling, above every version written before.
	ByGTID  bool
	Ceiling uint32
	// Touched is the checkpoint's per-table record of GTIDs.
	Touched Touched
}

// History identifies a binlog history at a position, so a checkpoint is
// never applied to a binlog that restarted (RESET MASTER, a server
// rebuilt from a backup, a changed log_bin basename) where the same file
// name and offset mean other events.
type History struct {
	// FileCreated is the header timestamp of the file's format
	// description event: when the file was begun.
	FileCreated uint32 `json:"file_created"`
	// The header of the event that ends at the position; LastSize 0 when
	// the position is at the start of its file's events.
	LastType byte   `json:"last_type,omitempty"`
	LastTime uint32 `json:"last_time,omitempty"`
	LastSize uint32 `json:"last_size,omitempty"`
}

// HistoryError: the server's binlog at the checkpoint's position is not
// the binlog the checkpoint was saved on.
type HistoryError struct {
	At     Position
	Reason string
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("binlog %s is not the binlog binlog2ch's checkpoint was saved on: %s. The server's binlog history restarted (RESET MASTER, a server rebuilt from a backup or a snapshot, a changed log_bin basename), so that position now names other events or none", e.At, e.Reason)
}

// Offset is the version offset of the history being read.
func (s *Stream) Offset() int64 { return s.offset }

// GTIDs is the executed GTID set of the stream at its last boundary;
// empty while the stream does not know the whole set.
func (s *Stream) GTIDs() GTIDSet {
	if !s.gtidsKnown {
		return GTIDSet{}
	}
	return s.gtids
}

// Touched is the stream's per-table record of GTIDs, shared: the caller
// must not keep it past the Stream's goroutine (the handler may read it).
func (s *Stream) Touched() Touched { return s.touched }

// NewStream returns a stream of the server at cfg.MySQL.Addr, which
// Inspect described as srv.
func NewStream(cfg *config.Config, log *slog.Logger, srv Server) (*Stream, error) {
	if _, _, err := net.SplitHostPort(cfg.MySQL.Addr); err != nil {
		return nil, fmt.Errorf("mysql.addr: %w", err)
	}
	return &Stream{cfg: cfg, log: log, srv: srv, EventCache: 1024, MaxBackoff: 30 * time.Second, touched: Touched{}}, nil
}

// connConfig is how the stream's binlog connections are opened.
func (s *Stream) connConfig() binlog.Config {
	m := s.cfg.MySQL
	return binlog.Config{Addr: m.Addr, User: m.User, Password: m.Password.Reveal(), TLS: s.cfg.MySQLTLS(), ServerID: m.ServerID,
		HeartbeatPeriod: m.HeartbeatPeriod, StallTimeout: m.StallTimeout, Flavor: s.srv.Flavor, RawRows: s.srv.RawRows,
		EventCache: s.EventCache, Log: s.log}
}

// startDump opens a binlog connection and asks for the binlog from pos,
// or, with gtids, from the first transaction not in gtids.
func (s *Stream) startDump(ctx context.Context, pos Position, gtids *GTIDSet) (*binlog.Conn, error) {
	if s.testDial != nil {
		conn, err := s.testDial(pos, gtids)
		if err != nil {
			return nil, err
		}
		return binlog.Read(conn, s.connConfig()), nil
	}
	req := binlog.Request{File: pos.File, Pos: pos.Pos}
	if gtids != nil {
		req = binlog.Request{ByGTID: true}
		if s.srv.Flavor == mysql.MariaDBFlavor {
			req.MariaDBGTIDs = gtids.String()
		} else {
			req.MySQLGTIDs = gtids.my.Encode()
		}
	}
	return binlog.Dial(ctx, s.connConfig(), req)
}

// Wake interrupts the wait for the next event with a Tick, from any
// goroutine: a writer flushed, so the checkpoint can follow at once
// instead of at the next event (up to a heartbeat later when the source
// is idle).
func (s *Stream) Wake() { s.wk.wake() }

// Run follows the binlog from start until ctx ends (nil) or an error that
// reconnecting cannot fix.
func (s *Stream) Run(ctx context.Context, st Start, h Handler) error {
	start := st.Position
	s.parser = parser.New()
	s.tables = map[uint64]*tableState{}
	s.pos, s.boundary, s.resume = start, start, start
	s.offset, s.byGTID, s.ceiling = st.Offset, st.ByGTID, 0
	if st.ByGTID {
		s.ceiling = st.Ceiling
	}
	s.boundHist = st.History
	s.touched = st.Touched.Clone()
	var err error
	if s.gtids, err = ParseGTIDSet(s.srv.Flavor, st.GTID); err != nil {
		return fmt.Errorf("the checkpoint's GTIDs: %w", err)
	}
	s.gtidsKnown = st.GTID != "" || st.GTIDKnown
	if s.byGTID && s.gtids.IsEmpty() {
		return errors.New("reading by GTID from an empty GTID set")
	}
	if s.fileIdx, err = FileIndex(start.File); err != nil {
		return err
	}
	delay := 100 * time.Millisecond
	var after *Position // set: read on from there, past an XA COMMIT just handled
	for {
		resume := s.resume
		if after != nil {
			resume = *after
		}
		err := s.stream(ctx, resume, after == nil, h)
		after = nil
		if x, ok := errIsXACommitted(err); ok {
			at := s.pos
			if err = s.replayXA(ctx, x, h); err == nil {
				s.forget(x.id)
				s.commit(h)
				after = &at
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := s.fatal(err, resume); err != nil {
			return err
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if s.resume != resume {
			delay = 100 * time.Millisecond // it made progress: a new outage starts the backoff over
		}
		if s.downSince.IsZero() {
			s.downSince = time.Now()
		}
		h.Down(err, s.resume, delay)
		s.log.Warn("binlog stream failed; reconnecting", "error", compact(err), "position", s.resume.String(), "retry_in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(delay*2, s.MaxBackoff)
	}
}

// fatal is the error that stops the stream for a failure that
// reconnecting cannot fix, or nil.
func (s *Stream) fatal(err error, from Position) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return nil
	}
	switch me.Code {
	case mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
		return &UnreadableError{From: from, Err: err}
	case mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR:
		return fmt.Errorf("MySQL user %s may not read the binlog: %w. Grant what binlog2ch needs: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the user, and SELECT on the replicated databases", s.cfg.MySQL.User, err)
	}
	return nil
}

// fatalError stops the reader; other errors reconnect.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }

func (e fatalError) Unwrap() error { return e.err }

// Check opens a binlog stream at from and reads its first event, so a
// user without REPLICATION SLAVE, or a purged position, stops the daemon
// at start rather than after an initial snapshot that may take hours.
// Other failures are left to Run's retries.
func (s *Stream) Check(ctx context.Context, from Position) error {
	d, err := s.startDump(ctx, from, nil)
	if err == nil {
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = d.GetEvent(readCtx)
		cancel()
		d.Close()
	}
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return s.fatal(err, from)
}

// VerifyHistory checks that the server's binlog at a checkpoint's
// position is the one it was saved on (see checkHistory): a
// *HistoryError when not. Failures to read are left to Run.
func (s *Stream) VerifyHistory(ctx context.Context, p Position, hist History) error {
	if hist.FileCreated == 0 {
		return nil // saved before histories were kept
	}
	from := p
	s.expect, s.pos, s.last = &hist, p, History{}
	defer func() { s.expect = nil }()
	if hist.LastSize > 0 && p.Pos >= 4+hist.LastSize {
		from.Pos -= hist.LastSize
	} else {
		s.expect.LastSize = 0
	}
	d, err := s.startDump(ctx, from, nil)
	if err != nil {
		return nil
	}
	defer d.Close()
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second+s.cfg.MySQL.StallTimeout)
	defer cancel()
	for s.expect != nil {
		ev, err := d.GetEvent(readCtx)
		var me *mysql.MyError
		switch {
		case errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && !strings.Contains(me.Message, "first log file name"):
			// The file is there (a purged one is the stream's to report)
			// but no event ends at the position.
			return &HistoryError{At: p, Reason: "the server cannot send the event that ended there: " + compact(err)}
		case err != nil:
			return nil
		}
		hd := ev.Header
		if hd.EventType == replication.HEARTBEAT_EVENT || hd.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			continue
		}
		if _, err := s.checkHistory(ev); err != nil {
			return err
		}
	}
	return nil
}

// stream reads from one binlog connection. fresh: from is the resume
// position, where the XA transactions still prepared are read again.
func (s *Stream) stream(ctx context.Context, from Position, fresh bool, h Handler) error {
	// The binlog must be the one from was read on: the stream starts at
	// the event that ends at from and checks it (checkHistory).
	s.expect = nil
	dumpFrom := from
	var gtids *GTIDSet
	if s.byGTID {
		gtids = &s.gtids
	} else if hist := s.historyAt(from); hist.FileCreated != 0 {
		s.expect = &hist
		if hist.LastSize > 0 && from.Pos >= 4+hist.LastSize {
			dumpFrom.Pos -= hist.LastSize
		} else {
			s.expect.LastSize = 0
		}
	}
	d, err := s.startDump(ctx, dumpFrom, gtids)
	if err != nil {
		return err
	}
	defer d.Close()
	s.pos = from
	if s.fileIdx, err = FileIndex(from.File); err != nil {
		return fatalError{err}
	}
	clear(s.tables) // table ids are re-sent after every reconnect
	s.xa, s.txGTID, s.payload, s.skipTo = nil, nil, nil, 0
	if fresh {
		s.prepared = nil
	}
	waitCtx := s.wk.waitContext(ctx)
	defer s.wk.wake() // releases the last wait context
	for {
		ev, err := d.GetEvent(waitCtx)
		woken := false
		if err != nil {
			if waitCtx.Err() == nil || ctx.Err() != nil {
				return s.stalled(err)
			}
			waitCtx = s.wk.waitContext(ctx)
			woken = true
		} else {
			if !s.downSince.IsZero() {
				s.log.Info("binlog stream reconnected", "position", from.String(), "down_for", time.Since(s.downSince).Round(time.Millisecond).String())
				s.downSince = time.Time{}
			}
			if err := s.handle(ctx, ev, h); err != nil {
				return err
			}
		}
		again, err := h.Tick(woken)
		if err != nil {
			return fatalError{err}
		}
		if again > 0 {
			s.wk.wakeAfter(again)
		}
	}
}

// stalled explains a read that timed out: each read waits at most
// mysql.stall_timeout, and heartbeats would have come on a live stream.
// go-mysql reports the timeout as text (its errors wrap the net error's
// message, not the error).
func (s *Stream) stalled(err error) error {
	var ne net.Error
	if !(errors.As(err, &ne) && ne.Timeout()) && !strings.Contains(err.Error(), "i/o timeout") {
		return err
	}
	return &StallError{Silent: s.cfg.MySQL.StallTimeout, Heartbeat: s.cfg.MySQL.HeartbeatPeriod, Err: err}
}

// StallError: the stream was silent for longer than mysql.stall_timeout.
type StallError struct {
	Silent, Heartbeat time.Duration
	Err               error
}

func (e *StallError) Error() string {
	return fmt.Sprintf("no binlog event or heartbeat for %s (mysql.stall_timeout; the server sends a heartbeat every %s): the server or the network path is not answering (%s)",
		e.Silent, e.Heartbeat, compact(e.Err))
}

func (e *StallError) Unwrap() error { return e.Err }

// compact is an error's text without the stack traces go-mysql's errors
// carry, on one line.
func compact(err error) string {
	var keep []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "runtime.") || strings.HasPrefix(l, "github.com/") && !strings.Contains(l, " ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, ": ")
}

func (s *Stream) handle(ctx context.Context, ev *replication.BinlogEvent, h Handler) error {
	hd := ev.Header
	heartbeat := hd.EventType == replication.HEARTBEAT_EVENT || hd.EventType == replication.HEARTBEAT_LOG_EVENT_V2
	e := Event{Heartbeat: heartbeat}
	if !heartbeat && hd.Timestamp != 0 {
		e.Timestamp = int64(hd.Timestamp) * int64(time.Second)
		s.lastTS = e.Timestamp
	}
	h.Event(e)
	if s.skipTo != 0 && !heartbeat {
		if hd.LogPos == s.skipTo {
			s.skipTo = 0
		}
		return nil
	}
	if s.expect != nil && !heartbeat {
		if consumed, err := s.checkHistory(ev); err != nil || consumed {
			return err
		}
	}
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.pos = Position{File: string(e.NextLogName), Pos: uint32(e.Position)}
		idx, err := FileIndex(s.pos.File)
		if err != nil {
			return fatalError{err}
		}
		s.fileIdx = idx
		s.last = History{}
		if s.ceiling != 0 {
			// The first file of a new history: F = the old ceiling.
			s.offset, s.ceiling = int64(s.ceiling)-int64(idx), 0
		}
		s.commit(h)
		return nil
	case *replication.GTIDEvent:
		// go-mysql parses ANONYMOUS_GTID_EVENT (gtid_mode OFF) as one too.
		if t, ok := mysqlGTID(e.SID, e.Tag, e.GNO); ok && hd.EventType == replication.GTID_EVENT {
			s.txGTID = &t
		}
	case *replication.GtidTaggedLogEvent:
		if t, ok := mysqlGTID(e.SID, e.Tag, e.GNO); ok {
			s.txGTID = &t
		}
	case *replication.TableMapEvent:
		if err := s.tableMap(e); err != nil {
			return fatalError{fmt.Errorf("binlog %s: %w", s.pos, err)}
		}
	case *replication.RowsEvent:
		return s.rows(ctx, hd, e, h)
	case *replication.XIDEvent:
		s.advance(hd)
		s.commit(h)
		return nil
	case *replication.MariadbGTIDEvent:
		t := mariadbGTID(e.GTID)
		s.txGTID = &t
		if e.Flags&mariadbPreparedXA != 0 {
			s.openXA()
		}
	case *replication.FormatDescriptionEvent:
		if hd.Timestamp != 0 {
			s.fileCreated = hd.Timestamp
		}
		s.advance(hd)
		if s.xa == nil {
			s.commit(h)
		}
		return nil
	case *replication.PreviousGTIDsEvent, *replication.MariadbGTIDListEvent, *replication.MariadbBinlogCheckPointEvent:
		if hd.LogPos != 0 && !s.gtidsKnown && s.xa == nil {
			s.learnGTIDs(e)
		}
		// A file's header events, and MariaDB's checkpoints, come between
		// transactions: a boundary past them lets the checkpoint reach the
		// end of a file that a rotation just began, where nothing else
		// may come for a long time.
		s.advance(hd)
		if s.xa == nil {
			s.commit(h)
		}
		return nil
	case *replication.GenericEvent:
		if hd.EventType == replication.XA_PREPARE_LOG_EVENT {
			s.advance(hd)
			return s.xaPrepare(e.Data, h)
		}
	case *replication.TransactionPayloadEvent:
		// The dump reader's marker: the compressed transaction's events
		// follow (payload.go).
		return s.payloadBegins(hd)
	case *replication.QueryEvent:
		s.advance(hd)
		return s.query(ctx, e, h)
	}
	if !heartbeat {
		s.advance(hd)
	}
	return nil
}

// advance moves the position to the end of the event. Positions only grow
// within a file: the header events a server re-sends after a reconnect
// (format description, MariaDB's GTID list) carry older positions.
func (s *Stream) advance(h *replication.EventHeader) {
	if h.LogPos > s.pos.Pos {
		if p := s.payload; p != nil && s.pos == p.start && h.LogPos == p.end {
			s.last = p.hist // the compressed transaction's last event
		} else {
			s.last = History{LastType: byte(h.EventType), LastTime: h.Timestamp, LastSize: h.EventSize}
		}
		s.pos.Pos = h.LogPos
	}
}

// commit records a transaction boundary at the current position.
func (s *Stream) commit(h Handler) {
	if s.txGTID != nil {
		s.gtids.add(*s.txGTID)
		s.txGTID = nil
		s.byGTID = false // the position is known from here on
	} else if s.byGTID {
		// Read by GTID, the events before the first transaction (a file's
		// header) are not boundaries to resume at: they may come from
		// before the GTIDs the stream started from.
		return
	}
	s.boundary, s.resume = s.pos, s.pos
	s.boundHist = s.last
	s.boundHist.FileCreated = s.fileCreated
	gtids, hist := "", s.boundHist
	if len(s.prepared) > 0 {
		s.resume, gtids, hist = s.prepared[0].start, s.prepared[0].gtids, s.prepared[0].hist
	} else if !s.gtids.IsEmpty() && s.gtidsKnown {
		gtids = s.gtids.String()
	}
	h.Commit(Commit{Position: s.pos, File: s.fileIdx, Resume: s.resume, Prepared: len(s.prepared), At: s.lastTS,
		GTID: gtids, History: hist, Offset: s.offset})
}

// historyAt is the History of a boundary the stream resumes at.
func (s *Stream) historyAt(p Position) History {
	for _, x := range s.prepared {
		if x.start == p {
			return x.hist
		}
	}
	if p == s.boundary {
		return s.boundHist
	}
	return History{}
}

// checkHistory checks the events a connection begins with against the
// History expected at its start: the file's format description, then
// (when the stream was asked for the binlog from the event before the
// boundary) that event, which it consumes. Events the server sends ahead
// of the requested position (a rotation to the file, its header, with no
// or older positions) are consumed too.
func (s *Stream) checkHistory(ev *replication.BinlogEvent) (consumed bool, err error) {
	hd, want := ev.Header, s.expect
	fail := func(reason string) (bool, error) {
		s.expect = nil
		return false, fatalError{&HistoryError{At: s.pos, Reason: reason}}
	}
	switch ev.Event.(type) {
	case *replication.RotateEvent:
		return true, nil
	case *replication.FormatDescriptionEvent:
		if hd.Timestamp != want.FileCreated {
			return fail(fmt.Sprintf("the server's %s was begun at %s, the checkpoint's at %s", s.pos.File, unixText(hd.Timestamp), unixText(want.FileCreated)))
		}
		s.fileCreated = hd.Timestamp
		if hd.LogPos == 0 || hd.LogPos < s.pos.Pos {
			return true, nil // re-sent ahead of the position
		}
	}
	if want.LastSize == 0 {
		s.expect = nil
		return false, nil
	}
	if hd.LogPos == 0 {
		return true, nil // a header event the server made up
	}
	if byte(hd.EventType) != want.LastType || hd.Timestamp != want.LastTime || hd.EventSize != want.LastSize || hd.LogPos != s.pos.Pos {
		return fail(fmt.Sprintf("the event before it is a %s of %d bytes written at %s ending at %d; the checkpoint's was a %s of %d bytes written at %s",
			hd.EventType, hd.EventSize, unixText(hd.Timestamp), hd.LogPos, replication.EventType(want.LastType), want.LastSize, unixText(want.LastTime)))
	}
	s.expect = nil
	s.last = History{LastType: want.LastType, LastTime: want.LastTime, LastSize: want.LastSize}
	if _, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
		s.skipTo = hd.LogPos // its events follow the marker
	}
	return true, nil
}

func unixText(ts uint32) string { return time.Unix(int64(ts), 0).UTC().Format(time.RFC3339) }

// learnGTIDs takes the executed set from a file's header, which the
// server writes with the set before the file: MySQL's previous GTIDs,
// MariaDB's GTID list (its binlog state, whose last number per domain is
// the position). The stream started without a set knows it from here.
func (s *Stream) learnGTIDs(e replication.Event) {
	switch e := e.(type) {
	case *replication.PreviousGTIDsEvent:
		if g, err := ParseGTIDSet(mysql.MySQLFlavor, e.GTIDSets); err == nil && s.srv.Flavor != mysql.MariaDBFlavor {
			s.gtids, s.gtidsKnown = g, true
		}
	case *replication.MariadbGTIDListEvent:
		if s.srv.Flavor == mysql.MariaDBFlavor {
			g := NewGTIDSet(mysql.MariaDBFlavor)
			for _, id := range e.GTIDs {
				if old, ok := g.maria[id.DomainID]; !ok || id.SequenceNumber > old.SequenceNumber {
					g.maria[id.DomainID] = id
				}
			}
			s.gtids, s.gtidsKnown = g, true
		}
	}
}

// openXA marks the transaction being read as an XA transaction's.
func (s *Stream) openXA() {
	x := &openXA{start: s.boundary, hist: s.boundHist}
	if !s.gtids.IsEmpty() && s.gtidsKnown {
		x.gtids = s.gtids.String()
	}
	s.xa = x
}

func (s *Stream) tableMap(e *replication.TableMapEvent) error {
	if st, ok := s.tables[e.TableID]; ok && st.event != nil && binlog.SameTableMap(st.event, e) {
		return nil
	}
	name := schema.TableName{Database: string(e.Schema), Table: string(e.Table)}
	st := &tableState{name: name, skip: schema.SystemDatabase(name.Database) || !s.cfg.Replicates(name.Database, name.Table), event: e}
	if !st.skip {
		src, err := binlog.TableFromMap(e, s.srv.Collations)
		if err != nil {
			return err
		}
		st.schema = src
	}
	s.tables[e.TableID] = st
	return nil
}

func (s *Stream) rows(ctx context.Context, hd *replication.EventHeader, e *replication.RowsEvent, h Handler) error {
	at := s.pos
	s.advance(hd)
	st, ok := s.tables[e.TableID]
	if !ok {
		return fatalError{fmt.Errorf("binlog %s: rows event for table id %d without its table-map event", at, e.TableID)}
	}
	// Inside a compressed transaction every rows event takes its versions,
	// replicated or not.
	first, slots, inPayload, err := s.payloadRows(at, st, hd, e)
	if err != nil {
		return fatalError{fmt.Errorf("binlog %s: %w", at, err)}
	}
	// A prepared XA transaction's rows wait for its XA COMMIT; reading
	// one again (replayXA), only its rows are handed on.
	if st.skip || (s.xa != nil) != s.replaying {
		return nil
	}
	if t := s.txGTID; t != nil {
		if st.touched == nil {
			key := st.name.String()
			if st.touched = s.touched[key]; st.touched == nil {
				st.touched = map[string]int64{}
				s.touched[key] = st.touched
			}
		}
		if t.N > st.touched[t.Origin] {
			st.touched[t.Origin] = t.N
		}
	}
	var op Op
	switch hd.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		op = OpInsert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		op = OpUpdate
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		op = OpDelete
	default:
		return fatalError{fmt.Errorf("binlog %s: unknown rows event type %s", at, hd.EventType)}
	}
	f, ok := VersionFile(s.fileIdx, s.offset)
	if !ok {
		return fatalError{fmt.Errorf("binlog %s: file index %d with the history's version offset %d is outside the 20 bits row versions hold; the versions of this history are used up: re-copy every table with `binlog2ch fullsync -recreate -checkpoint`", at, s.fileIdx, s.offset)}
	}
	r := Rows{Table: st.name, Schema: st.schema, Op: op, Version: RowVersion(f, hd.LogPos, 0), Slots: VersionSlots, At: at}
	if inPayload {
		r.Version, r.Slots = s.payload.version(f, first), slots
	}
	r.Flags = e.Flags
	if len(e.Rows) == 1 && len(e.Rows[0]) == 1 {
		if raw, ok := e.Rows[0][0].(binlog.RawRows); ok {
			r.Raw = raw
			r.decode = func() ([][]any, error) {
				// A copy keeps the event as the writer will read it.
				c := *e
				c.Rows = nil
				if err := c.DecodeData(0, raw); err != nil {
					return nil, fmt.Errorf("binlog %s: %s: decode the rows: %w", at, st.name, err)
				}
				return c.Rows, nil
			}
		}
	}
	if r.Raw == nil {
		// Raw rows are full images (RowsDecoder checked); others may not
		// be. Partial ones would land as NULLs (NOBLOB) or fail on NOT NULL
		// columns (MINIMAL); an UPDATE would have to be merged with the row
		// ClickHouse holds, which binlog2ch does not do.
		if missing := missingColumns(st, e, op); missing != "" {
			return fatalError{&PartialImageError{At: at, Table: st.name, Missing: missing}}
		}
		r.Rows = e.Rows
	}
	if err := h.Rows(ctx, r); err != nil {
		return fatalError{err}
	}
	return nil
}

// missingColumns names the columns the event's row images lack ("" when
// they are full): its columns-present bitmaps, the after image's too for
// an UPDATE.
func missingColumns(st *tableState, e *replication.RowsEvent, op Op) string {
	n := st.event.ColumnCount
	bitmaps := [][]byte{e.ColumnBitmap1}
	if op == OpUpdate {
		bitmaps = append(bitmaps, e.ColumnBitmap2)
	}
	var names []string
	for _, bm := range bitmaps {
		if binlog.FullImage(bm, n) {
			continue
		}
		for i := uint64(0); i < n; i++ {
			if i/8 < uint64(len(bm)) && bm[i/8]&(1<<(i%8)) != 0 {
				continue
			}
			name := "#" + strconv.FormatUint(i+1, 10)
			if st.schema != nil && int(i) < len(st.schema.Columns) {
				name = st.schema.Columns[i].Name
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return strings.Join(names, ", ")
}

// query hands on a query event: transaction markers and DDL.
func (s *Stream) query(ctx context.Context, e *replication.QueryEvent, h Handler) error {
	q := string(e.Query)
	if q == "BEGIN" || inTransaction(q) {
		return nil
	}
	if verb, id, ok := xaStatement(q); ok {
		return s.xaQuery(verb, id, h)
	}
	defer s.commit(h) // DDL and COMMIT end a transaction
	if q == "COMMIT" {
		return nil
	}
	st := Statement{At: s.pos, Text: q}
	if st.NoTable = ddl.NonTableKind(q); st.NoTable == "" {
		if st.Effects, st.Parsed = ddl.Parse(s.parser, string(e.Schema), q); !st.Parsed {
			st.Effects = ddl.Unparsed(string(e.Schema), q)
		}
	}
	if err := h.Statement(ctx, st); err != nil {
		return fatalError{err}
	}
	return nil
}

// inTransaction reports whether a query event is a statement the server
// writes inside a transaction, which neither ends it nor changes a table:
// SAVEPOINT and ROLLBACK TO [SAVEPOINT] (the rows it undid were never
// written to the binlog), RELEASE SAVEPOINT.
func inTransaction(q string) bool {
	words := strings.Fields(q)
	if len(words) < 2 {
		return false
	}
	w0, w1 := strings.ToUpper(words[0]), strings.ToUpper(words[1])
	return w0 == "SAVEPOINT" || w0 == "ROLLBACK" && (w1 == "TO" || w1 == "WORK" && len(words) > 2 && strings.EqualFold(words[2], "TO")) ||
		w0 == "RELEASE" && w1 == "SAVEPOINT"
}

// waker interrupts the reader's wait for the next binlog event.
type waker struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	timer  *time.Timer
}

// waitContext returns the context for the next wait; wake cancels it.
func (k *waker) waitContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	k.mu.Lock()
	k.cancel = cancel
	k.mu.Unlock()
	return ctx
}

func (k *waker) wake() {
	k.mu.Lock()
	if k.cancel != nil {
		k.cancel()
	}
	k.mu.Unlock()
}

// wakeAfter wakes the reader after d.
func (k *waker) wakeAfter(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer == nil {
		k.timer = time.AfterFunc(d, k.wake)
	} else {
		k.timer.Reset(d)
	}
}

// Op is the kind of a rows event.
type Op int8

// The rows events.
const (
	OpInsert Op = iota + 1
	OpUpdate    // rows alternate before and after images
	OpDelete
)
