package source

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// XA transactions reach the binlog in two parts: at XA PREPARE their
// rows, ended by an XA_PREPARE_LOG_EVENT; later, in a transaction of its
// own, `XA COMMIT xid` or `XA ROLLBACK xid`. Other transactions commit in
// between. The stream holds a prepared transaction's rows back until its
// outcome: at XA COMMIT it reads them again from the binlog (memory stays
// bounded, whatever their size) and hands them on; at XA ROLLBACK they are
// dropped. The resume position never passes a prepared transaction whose
// outcome is unread, so a restart reads its rows again: nothing about it
// needs storing beside the checkpoint.
//
// Its rows keep the versions of their own positions: no other transaction
// can change them between PREPARE and COMMIT (a prepared transaction
// keeps its row locks), and everything after the COMMIT has higher ones.
//
// MariaDB marks the start of a prepared XA transaction in its GTID event
// (FL_PREPARED_XA) and writes XA COMMIT ... ONE PHASE as an ordinary
// transaction; MySQL starts it with an `XA START xid` query event and
// writes ONE PHASE as an XA_PREPARE_LOG_EVENT with its one-phase flag.

// mariadbPreparedXA is MariaDB's GTID-event flag FL_PREPARED_XA.
const mariadbPreparedXA = 0x40

// XAID is an XA transaction's identity as the binlog prints it in XA
// statements: X'gtrid',X'bqual',formatID (hexadecimal in upper case).
type XAID string

// Readable is the id with its parts as text where they are printable,
// for messages: 'gtrid','bqual',formatID.
func (x XAID) Readable() string {
	parts := strings.SplitN(string(x), ",", 3)
	if len(parts) != 3 {
		return string(x)
	}
	out := make([]string, 0, 3)
	for _, p := range parts[:2] {
		b, err := hex.DecodeString(strings.TrimSuffix(strings.TrimPrefix(p, "X'"), "'"))
		if err != nil || !printable(b) {
			return string(x)
		}
		out = append(out, "'"+string(b)+"'")
	}
	return strings.Join(append(out, parts[2]), ",")
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\'' {
			return false
		}
	}
	return true
}

// parseXAPrepare decodes an XA_PREPARE_LOG_EVENT's body: one-phase flag
// (1 byte), formatID (4), gtrid length (4), bqual length (4), gtrid,
// bqual.
func parseXAPrepare(data []byte) (onePhase bool, id XAID, err error) {
	if len(data) < 13 {
		return false, "", fmt.Errorf("XA_PREPARE_LOG_EVENT of %d bytes, want at least 13", len(data))
	}
	format := int32(binary.LittleEndian.Uint32(data[1:]))
	gl, bl := binary.LittleEndian.Uint32(data[5:]), binary.LittleEndian.Uint32(data[9:])
	if gl > 64 || bl > 64 || 13+int(gl+bl) > len(data) {
		return false, "", fmt.Errorf("XA_PREPARE_LOG_EVENT with gtrid length %d and bqual length %d in %d bytes", gl, bl, len(data))
	}
	gtrid, bqual := data[13:13+gl], data[13+gl:13+gl+bl]
	return data[0] != 0, xaIDOf(format, gtrid, bqual), nil
}

// xaStatement splits a query event that is an XA statement into its verb
// (START, END, COMMIT, ROLLBACK...) and its xid; ok is false for any
// other statement. The server writes these in one form,
// `XA COMMIT X'..',X'..',1`, with ONE PHASE after it where that applies.
func xaStatement(q string) (verb string, id XAID, ok bool) {
	if len(q) < 3 || !strings.EqualFold(q[:3], "XA ") {
		return "", "", false
	}
	fields := strings.Fields(q[3:])
	if len(fields) < 2 {
		return strings.ToUpper(strings.Join(fields, " ")), "", true
	}
	return strings.ToUpper(fields[0]), XAID(strings.ToUpper(fields[1])), true
}

// openXA is an XA transaction read up to its XA PREPARE.
type openXA struct {
	start Position // the transaction boundary before it
	gtids string   // the executed GTID set there
	hist  History  // and its History
}

// preparedXA is an XA transaction prepared and not yet committed or
// rolled back, as far as the stream has read.
type preparedXA struct {
	id    XAID
	start Position // the boundary before its first event
	gtids string   // the executed GTID set at start
	hist  History  // the History at start
	end   Position // after its XA_PREPARE_LOG_EVENT
}

// xaCommitted asks Run to hand on a prepared transaction's rows, read
// again from the binlog: its XA COMMIT (or one-phase prepare) was read.
// old: prepared before the stream's start (xascan.go), its COMMIT's event
// from `from` to `at`; found: x is known (else Run looks it up).
type xaCommitted struct {
	x        preparedXA
	old      bool
	found    bool
	from, at Position
}

func (e xaCommitted) Error() string { return "XA COMMIT " + string(e.x.id) }

// XAUnknownError: an XA COMMIT whose XA PREPARE the stream never read,
// because it started reading after it, and cannot find in the binlog
// before its start. Its rows are nowhere binlog2ch can get them from.
type XAUnknownError struct {
	At    Position
	ID    XAID
	Start Position // where the stream started
	Cause string   // why the binlog before Start does not have it
}

func (e *XAUnknownError) Error() string {
	return fmt.Sprintf("binlog %s: XA COMMIT of XA transaction %s, whose XA PREPARE is before the position binlog2ch started reading from, %s (it was prepared while an initial snapshot, a fullsync -checkpoint or a checkpoint took its position), and not in the binlog before it: %s. Its rows, committed in MySQL now, may touch replicated tables and are in neither the copy nor the binlog read since",
		e.At, e.ID.Readable(), e.Start, e.Cause)
}

// xaQuery acts on an XA statement in a query event.
func (s *Stream) xaQuery(verb string, id XAID, h Handler) error {
	switch verb {
	case "START": // MySQL: the first event of a prepared or one-phase XA
		s.openXA()
		return nil
	case "END":
		return nil // XA_PREPARE_LOG_EVENT follows
	case "COMMIT":
		if i := s.preparedIndex(id); i >= 0 {
			return xaCommitted{x: s.prepared[i]}
		}
		// Prepared before the stream's start: known from XA RECOVER, or
		// looked up now (Run).
		x, found := s.old[id]
		if !found {
			x = preparedXA{id: id}
		}
		return xaCommitted{x: x, old: true, found: found, from: s.boundary, at: s.pos}
	case "ROLLBACK": // its rows were never handed on
		s.forget(id)
		s.log.Debug("XA transaction rolled back; its rows dropped", "xid", id.Readable(), "binlog", s.pos.String())
	}
	s.commit(h)
	return nil
}

// forget drops a prepared transaction whose outcome was read.
func (s *Stream) forget(id XAID) {
	delete(s.old, id)
	if i := s.preparedIndex(id); i >= 0 {
		s.prepared = append(s.prepared[:i], s.prepared[i+1:]...)
	}
}

func (s *Stream) preparedIndex(id XAID) int {
	for i, x := range s.prepared {
		if x.id == id {
			return i
		}
	}
	return -1
}

// xaPrepare acts on an XA_PREPARE_LOG_EVENT, at whose end s.pos is.
func (s *Stream) xaPrepare(data []byte, h Handler) error {
	onePhase, id, err := parseXAPrepare(data)
	if err != nil {
		return fatalError{fmt.Errorf("binlog %s: %w", s.pos, err)}
	}
	if s.xa == nil {
		// Its rows were handed on as they came: binlog2ch did not see the
		// transaction start as XA's.
		return fatalError{fmt.Errorf("binlog %s: XA PREPARE of %s without the start of its transaction being marked as XA's (no XA START query event, no FL_PREPARED_XA flag); binlog2ch cannot tell whether its rows were applied early and stops rather than guess. Report this with the output of mysqlbinlog around that position", s.pos, id.Readable())}
	}
	x := preparedXA{id: id, start: s.xa.start, gtids: s.xa.gtids, hist: s.xa.hist, end: s.pos}
	s.xa = nil
	if onePhase {
		return xaCommitted{x: x}
	}
	s.prepared = append(s.prepared, x)
	s.log.Debug("XA transaction prepared; its rows wait for its XA COMMIT", "xid", id.Readable(), "binlog", s.pos.String(), "open", len(s.prepared))
	s.commit(h)
	return nil
}

// replayXA reads a prepared transaction's events again, from the boundary
// before it to its XA_PREPARE_LOG_EVENT, and hands its rows on with their
// own positions. The stream's reading state is set aside meanwhile.
func (s *Stream) replayXA(ctx context.Context, x preparedXA, h Handler) error {
	pos, idx, tables, open, payload, last := s.pos, s.fileIdx, s.tables, s.xa, s.payload, s.last
	defer func() {
		s.pos, s.fileIdx, s.tables, s.xa, s.payload, s.replaying, s.last = pos, idx, tables, open, payload, false, last
	}()
	s.pos, s.tables, s.xa, s.replaying = x.start, map[uint64]*tableState{}, nil, true
	var err error
	if s.fileIdx, err = FileIndex(x.start.File); err != nil {
		return fatalError{err}
	}
	d, err := s.startDump(ctx, x.start, nil)
	if err != nil {
		return s.replayError(x, err)
	}
	defer d.Close()
	s.log.Debug("XA transaction committed; reading its rows again", "xid", x.id.Readable(), "from", x.start.String(), "to", x.end.String())
	for {
		ev, err := d.GetEvent(ctx)
		if err != nil {
			return s.replayError(x, err)
		}
		hd := ev.Header
		if hd.EventType == replication.HEARTBEAT_EVENT || hd.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			continue
		}
		switch e := ev.Event.(type) {
		case *replication.RotateEvent:
			if s.pos = (Position{File: string(e.NextLogName), Pos: uint32(e.Position)}); s.pos.File != x.start.File {
				return fatalError{fmt.Errorf("binlog %s: reading XA transaction %s again from %s, the binlog went on to another file before its XA PREPARE at %s", s.pos, x.id.Readable(), x.start, x.end)}
			}
			continue
		case *replication.MariadbGTIDEvent:
			if e.Flags&mariadbPreparedXA != 0 {
				s.xa = &openXA{start: x.start}
			}
		case *replication.QueryEvent:
			if verb, _, ok := xaStatement(string(e.Query)); ok && verb == "START" {
				s.xa = &openXA{start: x.start}
			}
		case *replication.TableMapEvent:
			if err := s.tableMap(e); err != nil {
				return fatalError{fmt.Errorf("binlog %s: %w", s.pos, err)}
			}
		case *replication.TransactionPayloadEvent: // MySQL's compressed XA transaction (payload.go)
			if err := s.payloadBegins(hd); err != nil {
				return err
			}
			continue
		case *replication.RowsEvent:
			if err := s.rows(ctx, ev, e, h); err != nil {
				return err
			}
			continue
		case *replication.GenericEvent:
			if hd.EventType == replication.XA_PREPARE_LOG_EVENT {
				s.advance(hd)
				if _, id, err := parseXAPrepare(e.Data); err == nil && id == x.id && s.pos == x.end {
					return nil
				}
				return fatalError{fmt.Errorf("binlog %s: reading XA transaction %s again from %s, found another XA PREPARE than the one read at %s", s.pos, x.id.Readable(), x.start, x.end)}
			}
		}
		s.advance(hd)
		if s.pos.Pos > x.end.Pos {
			return fatalError{fmt.Errorf("binlog %s: reading XA transaction %s again from %s, passed its XA PREPARE at %s without finding it", s.pos, x.id.Readable(), x.start, x.end)}
		}
	}
}

func (s *Stream) replayError(x preparedXA, err error) error {
	err = fmt.Errorf("reading the rows of XA transaction %s again from binlog %s, at its XA COMMIT: %w", x.id.Readable(), x.start, err)
	if fatal := s.fatal(err, x.start); fatal != nil {
		return fatalError{fatal}
	}
	return err
}

// errIsXACommitted reports whether err asks for a prepared transaction's
// rows, and which.
func errIsXACommitted(err error) (xaCommitted, bool) {
	var c xaCommitted
	if errors.As(err, &c) {
		return c, true
	}
	return xaCommitted{}, false
}

// openXA marks the transaction being read as an XA transaction's.
func (s *Stream) openXA() {
	x := &openXA{start: s.boundary, hist: s.boundHist}
	if !s.gtids.IsEmpty() && s.gtidsKnown {
		x.gtids = s.gtids.String()
	}
	s.xa = x
}
