package source

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-mysql-org/go-mysql/replication"
)

// handle reads one event: the state machine of the stream.
func (s *Stream) handle(ctx context.Context, ev *replication.BinlogEvent, h Handler) error {
	hd := ev.Header
	heartbeat := hd.EventType == replication.HEARTBEAT_EVENT || hd.EventType == replication.HEARTBEAT_LOG_EVENT_V2
	e := Event{Heartbeat: heartbeat}
	if !heartbeat && hd.Timestamp != 0 {
		e.Timestamp = int64(hd.Timestamp) * int64(time.Second)
		s.lastTS = e.Timestamp
	}
	h.Event(e)
	if f, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
		// Whether the events after it end in a checksum (loadQueryText).
		s.format, s.checksum = f, f.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	}
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
		if t, ok := gtid.FromMySQL(e.SID, e.Tag, e.GNO); ok && hd.EventType == replication.GTID_EVENT {
			s.txGTID = &t
		}
	case *replication.GtidTaggedLogEvent:
		if t, ok := gtid.FromMySQL(e.SID, e.Tag, e.GNO); ok {
			s.txGTID = &t
		}
	case *replication.TableMapEvent:
		if err := s.tableMap(e); err != nil {
			return fatalError{fmt.Errorf("binlog %s: %w", s.pos, err)}
		}
	case *replication.RowsEvent:
		return s.rows(ctx, ev, e, h)
	case *replication.XIDEvent:
		s.advance(hd)
		s.commit(h)
		return nil
	case *replication.MariadbGTIDEvent:
		t := gtid.FromMariaDB(e.GTID)
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
		return s.passBy(ev, heartbeat)
	case *replication.TransactionPayloadEvent:
		// The dump reader's marker: the compressed transaction's events
		// follow (payload.go).
		return s.payloadBegins(hd)
	case *replication.QueryEvent:
		s.advance(hd)
		return s.query(ctx, e, h)
	case *replication.ExecuteLoadQueryEvent:
		s.advance(hd)
		return s.executeLoadQuery(ctx, ev, e, h)
	default:
		// Every other type (passby.go): never silently.
		return s.passBy(ev, heartbeat)
	}
	s.advance(hd)
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
		s.gtids.Add(*s.txGTID)
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
	h.Commit(Commit{Position: s.pos, File: s.fileIdx, Resume: s.resume, Prepared: len(s.prepared), Timestamp: s.lastTS,
		GTID: gtids, History: hist, Offset: s.offset})
}

// selected reports whether a table's events go to the handler.
func (s *Stream) selected(t schema.TableName) bool {
	if schema.SystemDatabase(t.Database) {
		return false
	}
	if s.Selected != nil {
		return s.Selected(t)
	}
	return s.cfg.Replicates(t.Database, t.Table)
}

// ApplySelection applies a changed selection to the table maps read:
// call it from the handler (the stream's goroutine) once Selected answers
// differently.
func (s *Stream) ApplySelection() error {
	// The decoder learns the new selection from the table maps read
	// from here on.
	s.skips.Clear()
	// In place: a Tick may come between a table map and its rows events.
	for _, st := range s.tables {
		skip := !s.selected(st.name)
		s.skips.Set(st.name.Database, st.name.Table, skip)
		if skip == st.skip {
			continue
		}
		st.skip, st.schema = skip, nil
		if !skip {
			src, err := binlog.TableFromMap(st.event, s.srv.Collations)
			if err != nil {
				return err
			}
			st.schema = src
		}
	}
	return nil
}

func (s *Stream) tableMap(e *replication.TableMapEvent) error {
	if st, ok := s.tables[e.TableID]; ok && st.event != nil && binlog.SameTableMap(st.event, e) {
		return nil
	}
	name := schema.TableName{Database: string(e.Schema), Table: string(e.Table)}
	st := &tableState{name: name, skip: !s.selected(name), event: e}
	s.skips.Set(name.Database, name.Table, st.skip)
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

func (s *Stream) rows(ctx context.Context, ev *replication.BinlogEvent, e *replication.RowsEvent, h Handler) error {
	at, hd := s.pos, ev.Header
	s.advance(hd)
	st, ok := s.tables[e.TableID]
	if !ok {
		return fatalError{fmt.Errorf("binlog %s: rows event for table id %d without its table-map event", at, e.TableID)}
	}
	// The decoder skipped the rows of a table the stream did not select
	// when it read ahead: decoded here if the table is selected now (a
	// reload) or a compressed transaction counts them.
	if binlog.Skipped(e) && (!st.skip || s.payload != nil && at == s.payload.start) {
		if err := binlog.DecodeSkipped(ev, s.srv.RawRows); err != nil {
			return fatalError{fmt.Errorf("binlog %s: %s: decode the rows of a rows event read while the table was not replicated: %w (a restart reads the event again with the table selected)", at, st.name, err)}
		}
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
	r := Rows{Table: st.name, Schema: st.schema, Op: op, Version: RowVersion(f, hd.LogPos, 0), Versions: VersionSlots, At: at}
	if inPayload {
		r.Version, r.Versions = s.payload.version(f, first), slots
	}
	if v := s.oldXA; v != nil {
		// An XA transaction prepared before the stream's start (xascan.go).
		if r.Version, r.Versions, err = v.versions(st, hd, e); err != nil {
			return fatalError{fmt.Errorf("binlog %s: %s: %w", at, st.name, err)}
		}
	}
	r.Flags = e.Flags
	if len(e.Rows) == 1 && len(e.Rows[0]) == 1 {
		if raw, ok := e.Rows[0][0].(binlog.RawRows); ok {
			r.Raw, r.Lease = raw, s.conn.Own(ev)
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
		// be: handed on with what they hold (images.go), for each reader
		// to check what it needs.
		r.Partial = partialImages(st, e, op)
		r.Rows = e.Rows
	}
	if err := h.Rows(ctx, r); err != nil {
		return fatalError{err}
	}
	return nil
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
	if q == "COMMIT" {
		s.commit(h)
		return nil
	}
	return s.statement(ctx, string(e.Schema), q, h)
}

// statement hands on a statement read with db the session's database: its
// meaning for tables. It ends a transaction, as DDL does.
func (s *Stream) statement(ctx context.Context, db, q string, h Handler) error {
	defer s.commit(h)
	st := Statement{At: s.pos, Text: q}
	if st.NonTableKind = ddl.NonTableKind(q); st.NonTableKind == "" {
		if st.Effects, st.Parsed = ddl.Parse(s.parser, db, q); !st.Parsed {
			st.Effects = ddl.Unparsed(db, q)
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
