package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// XA transactions prepared before the position the stream starts from (an
// initial snapshot's, a checkpoint's, fullsync -checkpoint's) are "old":
// their XA PREPARE is behind the stream. At their XA COMMIT the stream
// finds the PREPARE in the binlog before its start (findPrepared: the
// files read back from there, one at a time, only for the ids it looks
// for) and reads the rows again as for any other. Their rows get the
// versions of the XA COMMIT's own event, not of their positions: a copy
// taken while they were prepared holds the rows they change at the
// copy's version, above theirs, and nothing else changes those rows
// between the PREPARE and the COMMIT (the transaction holds their locks).
//
// At start, XA RECOVER lists the transactions prepared now (LearnPrepared):
// those whose PREPARE is before the start are looked up at once, so one
// whose PREPARE is gone (a purged binlog) is an ERROR at start, not only a
// stop at its COMMIT. Those committed or rolled back since the start are
// not in XA RECOVER; their COMMIT looks them up.

// xaFound is what a scan of the binlog read of one XA id: its last XA
// PREPARE (x), or an outcome after it (decided).
type xaFound struct {
	x       preparedXA
	decided bool
}

// LearnPrepared lists the XA transactions prepared on the server now (XA
// RECOVER) and finds in the binlog those prepared before start, for the
// stream's Run from start to use at their XA COMMIT. It logs, rather than
// returns, what it cannot find: the stream goes on (such a transaction
// may be rolled back, which costs nothing) and stops at the COMMIT of one
// it cannot read. It returns an error only when ctx ends.
func (s *Stream) LearnPrepared(ctx context.Context, db *sql.DB, start Position) error {
	s.old, s.oldFor = map[XAID]preparedXA{}, start
	if start.File == "" {
		return nil // by GTID: each is looked up at its COMMIT
	}
	ids, err := xaRecover(ctx, db)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Error("cannot list the XA transactions prepared on the server: an XA COMMIT of one prepared before the start position will be looked up in the binlog at its COMMIT, and stops binlog2ch there if its XA PREPARE is gone. MySQL needs GRANT XA_RECOVER_ADMIN ON *.* for XA RECOVER",
			"error", err, "position", start.String())
		return nil
	}
	if len(ids) == 0 {
		return nil
	}
	end, err := CurrentPosition(ctx, db)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Error("cannot read the binlog position to find the XA transactions prepared now; each will be looked up at its COMMIT", "error", err)
		return nil
	}
	found, err := s.findPrepared(ctx, end, ids)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var missing []string
	for _, id := range ids {
		f, ok := found[id]
		switch {
		case !ok:
			missing = append(missing, id.Readable())
		case !f.decided && !start.Before(f.x.end):
			s.old[id] = f.x
			s.log.Info("XA transaction prepared before the start position: its rows are read again from the binlog at its XA COMMIT",
				"xid", id.Readable(), "prepared", f.x.start.String()+"-"+f.x.end.String(), "position", start.String())
		}
	}
	if err != nil || len(missing) > 0 {
		s.log.Error("XA transactions are prepared on the server whose XA PREPARE binlog2ch cannot find in the binlog (a purged file?): an XA ROLLBACK of one costs nothing, an XA COMMIT stops binlog2ch with its id (then `binlog2ch fullsync -recreate -checkpoint` makes ClickHouse equal). To avoid the stop, decide them before they matter: XA COMMIT or XA ROLLBACK on the server, then resync the tables they touched",
			"xids", strings.Join(missing, " "), "position", start.String(), "error", err)
	}
	return nil
}

// xaRecover is XA RECOVER's ids in the binlog's form.
func xaRecover(ctx context.Context, db *sql.DB) ([]XAID, error) {
	rows, err := db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return nil, fmt.Errorf("XA RECOVER: %w", err)
	}
	defer rows.Close()
	var ids []XAID
	for rows.Next() {
		// formatID, gtrid_length, bqual_length, data: gtrid then bqual.
		var format int64
		var gl, bl int
		var data []byte
		if err := rows.Scan(&format, &gl, &bl, &data); err != nil {
			return nil, fmt.Errorf("XA RECOVER: %w", err)
		}
		if gl < 0 || bl < 0 || gl+bl > len(data) {
			return nil, fmt.Errorf("XA RECOVER: gtrid length %d and bqual length %d in %d bytes", gl, bl, len(data))
		}
		ids = append(ids, xaIDOf(int32(format), data[:gl], data[gl:gl+bl]))
	}
	return ids, rows.Err()
}

// findPrepared reads the binlog back from before, a file at a time, until
// every id's last XA PREPARE or outcome is found, or the files run out
// (the error then says why, a purged file, and found has what was read).
func (s *Stream) findPrepared(ctx context.Context, before Position, ids []XAID) (map[XAID]xaFound, error) {
	want := map[XAID]bool{}
	for _, id := range ids {
		want[id] = true
	}
	found := map[XAID]xaFound{}
	file, to := before.File, before.Pos
	for len(want) > 0 {
		got, err := s.scanFile(ctx, file, to, want)
		if err != nil {
			return found, err
		}
		for id, f := range got {
			found[id] = f
			delete(want, id)
		}
		if len(want) == 0 {
			break
		}
		prev, ok := previousFile(file)
		if !ok {
			return found, fmt.Errorf("binlog %s is the first file", file)
		}
		file, to = prev, 0
	}
	return found, nil
}

// previousFile is the binlog file before file: its index less one, with
// the same prefix and width.
func previousFile(file string) (string, bool) {
	i := strings.LastIndexByte(file, '.')
	idx, err := FileIndex(file)
	if err != nil || idx <= 1 {
		return "", false
	}
	digits := len(file) - i - 1
	return fmt.Sprintf("%s%0*d", file[:i+1], digits, idx-1), true
}

// scanFile reads one binlog file from its start up to to (0: its end) and
// returns the last XA PREPARE or outcome of each wanted id in it.
func (s *Stream) scanFile(ctx context.Context, file string, to uint32, want map[XAID]bool) (map[XAID]xaFound, error) {
	start := Position{File: file, Pos: 4}
	got := map[XAID]xaFound{}
	if to != 0 && to <= start.Pos {
		return got, nil
	}
	s.log.Info("reading a binlog file for the XA PREPARE of transactions prepared before the stream's start", "file", file, "xa_transactions", len(want))
	d, err := s.startDump(ctx, start, nil)
	if err != nil {
		return nil, scanError(file, err)
	}
	defer d.Close()
	var txStart, xaStart Position // the boundary before the transaction read; before the XA one
	inXA := false
	pos := start
	for {
		ev, err := d.GetEvent(ctx)
		if err != nil {
			return nil, scanError(file, err)
		}
		hd := ev.Header
		if hd.EventType == replication.HEARTBEAT_EVENT || hd.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			if to == 0 {
				return got, nil // the newest file read to its end
			}
			continue
		}
		if r, ok := ev.Event.(*replication.RotateEvent); ok {
			if string(r.NextLogName) != file {
				return got, nil // the file ended
			}
			continue
		}
		if hd.LogPos <= pos.Pos {
			continue // a header event re-sent (format description)
		}
		evStart := Position{File: file, Pos: hd.LogPos - hd.EventSize}
		switch e := ev.Event.(type) {
		case *replication.MariadbGTIDEvent:
			txStart = evStart
			if e.Flags&mariadbPreparedXA != 0 {
				inXA, xaStart = true, evStart
			}
		case *replication.GTIDEvent:
			txStart = evStart
		case *replication.QueryEvent:
			if verb, id, ok := xaStatement(string(e.Query)); ok {
				switch verb {
				case "START":
					// MySQL: after the transaction's GTID event, if any.
					inXA, xaStart = true, txStart
					if txStart.Pos == 0 {
						xaStart = evStart
					}
				case "COMMIT", "ROLLBACK":
					if want[id] {
						got[id] = xaFound{decided: true}
					}
				}
			}
		case *replication.GenericEvent:
			if hd.EventType == replication.XA_PREPARE_LOG_EVENT {
				onePhase, id, err := parseXAPrepare(e.Data)
				if err != nil {
					return nil, fmt.Errorf("binlog %s:%d: %w", file, hd.LogPos, err)
				}
				if want[id] && !onePhase && inXA {
					got[id] = xaFound{x: preparedXA{id: id, start: xaStart, end: Position{File: file, Pos: hd.LogPos}}}
				}
				inXA, txStart = false, Position{}
			}
		case *replication.XIDEvent:
			txStart = Position{}
		}
		pos.Pos = hd.LogPos
		if to != 0 && pos.Pos >= to {
			return got, nil
		}
	}
}

// scanError says why a binlog file could not be read for an XA PREPARE.
func scanError(file string, err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return fmt.Errorf("binlog %s cannot be read (purged?): %w", file, err)
	}
	return fmt.Errorf("reading binlog %s for an XA PREPARE: %w", file, err)
}

// xaIDOf is an id in the binlog's form (parseXAPrepare's).
func xaIDOf(format int32, gtrid, bqual []byte) XAID {
	return XAID("X'" + strings.ToUpper(fmt.Sprintf("%x", gtrid)) + "',X'" + strings.ToUpper(fmt.Sprintf("%x", bqual)) + "'," + strconv.Itoa(int(format)))
}

// oldVersions are the versions of an old XA transaction's rows: those of
// its XA COMMIT's event, (RowVersion(F, from, 0), RowVersion(F, at,
// MaxVersionRow)], in the order its rows come, as a compressed
// transaction's (payload.go). Rows beyond them stop the stream rather
// than share a version: two changes of one key among them would then be
// ClickHouse's pick.
type oldVersions struct {
	xid   XAID
	f     uint32
	rng   payloadState
	limit uint64
}

func (v *oldVersions) versions(st *tableState, hd *replication.EventHeader, e *replication.RowsEvent) (uint64, int, error) {
	n, err := rowsCount(st, hd, e)
	if err != nil {
		return 0, 0, err
	}
	if v.rng.used+uint64(n) > v.limit {
		return 0, 0, fmt.Errorf("XA transaction %s, prepared before the stream's start, has more rows than the %d versions of its XA COMMIT's event at binlog %s:%d, above the copy's and below every later change: binlog2ch cannot version them exactly", v.xid.Readable(), v.limit, v.rng.start.File, v.rng.end)
	}
	first, slots := v.rng.take(n)
	return v.rng.version(v.f, first), slots, nil
}

// commitXA hands on the rows of an XA transaction whose XA COMMIT was
// read: read again from the binlog, with the COMMIT's versions for one
// prepared before the stream's start.
func (s *Stream) commitXA(ctx context.Context, c xaCommitted, h Handler) error {
	if !c.old {
		return s.replayXA(ctx, c.x, h)
	}
	if !c.found {
		x, err := s.lookUpOld(ctx, c)
		if err != nil {
			return err
		}
		c.x = x
	}
	idx, err := FileIndex(c.at.File)
	if err != nil {
		return fatalError{err}
	}
	f, ok := VersionFile(idx, s.offset)
	if !ok {
		return fatalError{fmt.Errorf("binlog %s: file index %d with the history's version offset %d is outside the 20 bits row versions hold: re-copy every table with `binlog2ch fullsync -recreate -checkpoint`", c.at, idx, s.offset)}
	}
	from := c.from
	if from.File != c.at.File {
		from = Position{File: c.at.File, Pos: 4} // the COMMIT is its file's first transaction
	}
	// From above the position before the COMMIT's event and every version
	// there (a copy's rows at it have RowVersion(F, from, MaxVersionRow)).
	from.Pos++
	v := &oldVersions{xid: c.x.id, f: f, rng: payloadState{start: from, end: c.at.Pos}}
	v.limit = v.rng.capacity()
	s.oldXA = v
	defer func() { s.oldXA = nil }()
	s.log.Info("XA COMMIT of an XA transaction prepared before the stream's start: reading its rows again, with the versions of its COMMIT",
		"xid", c.x.id.Readable(), "prepared", c.x.start.String()+"-"+c.x.end.String(), "commit", c.at.String())
	return s.replayXA(ctx, c.x, h)
}

// lookUpOld finds in the binlog before the stream's start the XA PREPARE
// of a transaction committed at c.at: exact, or a stop naming why not.
func (s *Stream) lookUpOld(ctx context.Context, c xaCommitted) (preparedXA, error) {
	found, err := s.findPrepared(ctx, s.origin, []XAID{c.x.id})
	if f, ok := found[c.x.id]; ok && !f.decided {
		return f.x, nil
	}
	if ctx.Err() != nil {
		return preparedXA{}, ctx.Err()
	}
	var me *mysql.MyError
	cause := ""
	switch f, ok := found[c.x.id]; {
	case ok && f.decided:
		cause = "its last XA PREPARE there is followed by its XA COMMIT or ROLLBACK"
	case err != nil && errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
		cause = err.Error()
	case err != nil && strings.Contains(err.Error(), "is the first file"):
		cause = err.Error()
	case err != nil:
		return preparedXA{}, err // reconnecting reads the COMMIT, and looks again
	default:
		cause = "no XA PREPARE of it"
	}
	return preparedXA{}, fatalError{&XAUnknownError{At: c.at, ID: c.x.id, Start: s.origin, Cause: cause}}
}
