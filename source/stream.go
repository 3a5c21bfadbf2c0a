package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/schema"
)

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
	// binlog.MaxAhead bytes of them). 256 (2-4 MiB of rows events) keeps
	// the reader ahead of a writer that converts ~500k rows/s; 1024 held
	// 8-16 MiB more of a catch-up's heap and read no faster.
	EventCache int
	// MaxBackoff caps the reconnect backoff.
	MaxBackoff time.Duration
	// testDial, in tests, replaces the binlog connection: it returns one
	// on which a server sends the binlog from pos, or from gtids.
	testDial func(pos Position, gtids *gtid.Set) (*client.Conn, error)

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
	gtids  gtid.Set // executed through boundary
	// gtidsKnown: gtids is the whole executed set, not only what was read
	// (a start without one learns it from the next file's header).
	gtidsKnown bool
	txGTID     *gtid.GTID // the transaction being read, until its commit
	// touched: the newest transaction of each GTID origin per table.
	touched     gtid.Tables
	fileCreated uint32   // header timestamp of the current file's format description
	last        History  // of the event ending at pos
	boundHist   History  // History at boundary
	expect      *History // the history the stream must find at its start
	// skipTo, while not 0, skips the events of a compressed transaction
	// up to its last (which ends there): checkHistory consumed it.
	skipTo   uint32
	boundary Position // the last transaction boundary
	// conn is the connection being read, whose raw rows events hand their
	// buffers on (binlog.Conn.Own); nil between connections.
	conn      *binlog.Conn
	resume    Position     // where to reconnect: boundary, or the oldest prepared XA's start
	xa        *openXA      // the XA transaction being read, before its XA PREPARE
	prepared  []preparedXA // XA transactions prepared, outcome not read yet; oldest first
	replaying bool         // replayXA is reading
	// origin is where Run started: the stream read nothing before it.
	// old are the XA transactions prepared before it, as LearnPrepared
	// found them for oldFor; oldXA, while one of them is read again,
	// gives its rows their versions (xascan.go).
	origin, oldFor Position
	old            map[XAID]preparedXA
	oldXA          *oldVersions
	lastTS         int64 // timestamp (Unix ns) of the newest event read
	tables         map[uint64]*tableState
	downSince      time.Time // when the stream failed, until an event arrives on a new one

	// payload is the compressed transaction being read (payload.go).
	payload *payloadState
	// format is the last format description read; checksum: its events
	// end in a CRC32.
	format   *replication.FormatDescriptionEvent
	checksum bool
	// skips are the tables not selected, whose rows events the binlog
	// connections leave undecoded (binlog.Skipped).
	skips *binlog.Skips
	// passed are the types of the events passed by so far (passby.go),
	// each logged once.
	passed map[string]bool

	// EventsSkipped, when set, counts the events passed by, by type
	// (binlog2ch_events_skipped_total). Set it before Run.
	EventsSkipped *prometheus.CounterVec

	// Selected says which tables' events go to the handler; nil: those
	// the config's tables.include and exclude select. Set it before Run;
	// after the selection changes, call ApplySelection from the
	// handler.
	Selected func(schema.TableName) bool
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
	// TableGTIDs is the checkpoint's per-table record of GTIDs.
	TableGTIDs gtid.Tables
}

// Position is where the stream has read to: past its last event,
// transaction or not (a file's header events too). Only the Handler may
// call it, from the stream's goroutine.
func (s *Stream) Position() Position { return s.pos }

// Offset is the version offset of the history being read.
func (s *Stream) Offset() int64 { return s.offset }

// GTIDs is the executed GTID set of the stream at its last boundary;
// empty while the stream does not know the whole set.
func (s *Stream) GTIDs() gtid.Set {
	if !s.gtidsKnown {
		return gtid.Set{}
	}
	return s.gtids
}

// TableGTIDs is the stream's per-table record of GTIDs, shared: the caller
// must not keep it past the Stream's goroutine (the handler may read it).
func (s *Stream) TableGTIDs() gtid.Tables { return s.touched }

// NewStream returns a stream of the server at cfg.MySQL.Addr, which
// Inspect described as srv.
func NewStream(cfg *config.Config, log *slog.Logger, srv Server) (*Stream, error) {
	_, portText, err := net.SplitHostPort(cfg.MySQL.Addr)
	if err != nil {
		return nil, fmt.Errorf("mysql.addr: %w", err)
	}
	if _, err := strconv.ParseUint(portText, 10, 16); err != nil {
		return nil, fmt.Errorf("mysql.addr: bad port %q", portText)
	}
	return &Stream{cfg: cfg, log: log, srv: srv, EventCache: 256, MaxBackoff: 30 * time.Second, touched: gtid.Tables{},
		skips: binlog.NewSkips()}, nil
}

// connConfig is how the stream's binlog connections are opened.
func (s *Stream) connConfig() binlog.Config {
	m := s.cfg.MySQL
	return binlog.Config{Addr: m.Addr, User: m.User, Password: m.Password.Reveal(), TLS: s.cfg.MySQLTLS(), ServerID: m.ServerID,
		HeartbeatPeriod: m.HeartbeatPeriod, StallTimeout: m.StallTimeout, Flavor: s.srv.Flavor, RawRows: s.srv.RawRows,
		Skips: s.skips, EventCache: s.EventCache, Log: s.log}
}

// startDump opens a binlog connection and asks for the binlog from pos,
// or, with gtids, from the first transaction not in gtids.
func (s *Stream) startDump(ctx context.Context, pos Position, gtids *gtid.Set) (*binlog.Conn, error) {
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
			req.MySQLGTIDs = gtids.EncodeMySQL()
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
	s.pos, s.boundary, s.resume, s.origin = start, start, start, start
	if s.oldFor != start {
		s.old = nil // learnt for another start: each is looked up at its COMMIT
	}
	s.offset, s.byGTID, s.ceiling = st.Offset, st.ByGTID, 0
	if st.ByGTID {
		s.ceiling = st.Ceiling
	}
	s.boundHist = st.History
	s.touched = st.TableGTIDs.Clone()
	var err error
	if s.gtids, err = gtid.Parse(s.srv.Flavor, st.GTID); err != nil {
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
	kicks := 0          // connections dropped in a row for another replica with this server id
	for {
		resume := s.resume
		if after != nil {
			resume = *after
		}
		began := time.Now()
		err := s.stream(ctx, resume, after == nil, h)
		after = nil
		if c, ok := errIsXACommitted(err); ok {
			at := s.pos
			if err = s.commitXA(ctx, c, h); err == nil {
				s.forget(c.x.id)
				s.commit(h)
				after = &at
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if kicks = s.kicked(err, kicks, time.Since(began)); kicks >= SameServerIDKicks {
			return &ServerIDError{ServerID: s.cfg.MySQL.ServerID, Addr: s.cfg.MySQL.Addr, Kicks: kicks, Err: err}
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
		attrs := []any{"error", compact(err), "position", s.resume.String(), "retry_in", delay}
		if kicks > 0 {
			attrs = append(attrs, "mysql.server_id", s.cfg.MySQL.ServerID, "dropped_for_the_same_server_id", fmt.Sprintf("%d of %d", kicks, SameServerIDKicks))
		}
		s.log.Warn("binlog stream failed; reconnecting", attrs...)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(delay*2, s.MaxBackoff)
	}
}

// SameServerIDKicks is how many times in a row the server may drop the
// stream for another replica with its server id before the stream stops:
// once can be a daemon handing over to another (the lease), or a
// mysqlbinlog; every time is two replicas knocking each other off, and the
// one that stops first leaves the other to run.
const SameServerIDKicks = 5

// sameServerIDQuiet: a connection that lasted this long starts the count
// over (two daemons knock each other off within MaxBackoff).
const sameServerIDQuiet = 10 * time.Minute

// kicked is the count of connections dropped in a row for the same server
// id, with err ending one that lasted for up.
func (s *Stream) kicked(err error, kicks int, up time.Duration) int {
	if !binlog.SameServerID(err) {
		return 0
	}
	if up > max(sameServerIDQuiet, 2*s.MaxBackoff) {
		kicks = 0
	}
	return kicks + 1
}

// ServerIDError: the server kept dropping the stream because another
// replica registered with mysql.server_id.
type ServerIDError struct {
	ServerID uint32
	Addr     string
	Kicks    int
	Err      error
}

func (e *ServerIDError) Error() string {
	return fmt.Sprintf("mysql.server_id %d: MySQL %s dropped binlog2ch's binlog connection %d times in a row because another replica registered with the same server id (%s). "+
		"Each replica of a server, every binlog2ch daemon included, needs a server id of its own: give this daemon a mysql.server_id that no other replica of %s uses "+
		"(SHOW SLAVE HOSTS there lists those registered; SHOW REPLICAS on MySQL 8.0.22+) and start it again. This daemon stopped so that the other one can run",
		e.ServerID, e.Addr, e.Kicks, compact(e.Err), e.Addr)
}

func (e *ServerIDError) Unwrap() error { return e.Err }

// fatal is the error that stops the stream for a failure that
// reconnecting cannot fix, or nil.
func (s *Stream) fatal(err error, from Position) error {
	var me *mysql.MyError
	if !errors.As(err, &me) || binlog.SameServerID(err) {
		return nil // MySQL's is a 1236 too, not an unreadable binlog
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

// stream reads from one binlog connection. fresh: from is the resume
// position, where the XA transactions still prepared are read again.
func (s *Stream) stream(ctx context.Context, from Position, fresh bool, h Handler) error {
	// The binlog must be the one from was read on: the stream starts at
	// the event that ends at from and checks it (checkHistory).
	s.expect = nil
	dumpFrom := from
	var gtids *gtid.Set
	if s.byGTID {
		gtids = &s.gtids
	} else if hist := s.historyAt(from); hist.FileCreated != 0 {
		dumpFrom = s.expectHistory(from, hist)
	}
	d, err := s.startDump(ctx, dumpFrom, gtids)
	if err != nil {
		return err
	}
	defer d.Close()
	s.conn = d
	defer func() { s.conn = nil }()
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
			// The stream keeps nothing of an event it handled: a rows
			// event left undecoded gives its buffer back (Release).
			d.Release(ev)
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
