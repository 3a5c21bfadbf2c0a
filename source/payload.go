package source

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/block"
)

// MySQL's compressed transactions (binlog_transaction_compression=ON) as
// the stream reads them: the binlog connection hands on the payload's
// marker, then its events one at a time (binlog/payload.go). For the
// stream, the payload is one transaction: its inner events are read at the
// payload's start (a reconnect or restart reads it again from the boundary
// before it), its last event (the XID) ends at the payload's end, so the
// transaction's Commit is there. Its rows get consecutive versions between
// the two positions (payloadState).

// payloadState is the compressed transaction the stream is reading.
// Its rows take the versions between its start and its end position,
// (RowVersion(F, start, 0), RowVersion(F, end, MaxVersionRow)], in the
// order they come: above every version before it, below every one after,
// and the same when read again. That is (end-start)*4096 + 4095 versions,
// 4096 per compressed byte; rows beyond those share the last one. Measured
// with zstd at level 3 over 1M rows in 8 KB rows events: 5-byte rows
// keyed by a sequential INT, 0.2 rows per compressed byte; identical
// 2-byte rows (one TINYINT, no key), 2,200; identical 1-byte rows (every
// column NULL), 8,900. Only near-identical rows of a byte or two, which
// have no key to tell them apart, get there; then the last rows of the
// payload share its last version, which matters only for two changes of
// one key among them (ClickHouse then keeps either).
type payloadState struct {
	start Position // where the payload event begins; its events are read there
	end   uint32   // where it ends
	used  uint64   // versions given to its rows so far
	// hist is the payload event's header: a boundary at its end is
	// checked against it (History), not against the inner event's.
	hist History
}

// payloadBegins starts a compressed transaction at its marker.
func (s *Stream) payloadBegins(hd *replication.EventHeader) error {
	if hd.LogPos <= s.pos.Pos {
		return fatalError{fmt.Errorf("binlog %s: compressed transaction ending at %d, not after it", s.pos, hd.LogPos)}
	}
	s.payload = &payloadState{start: s.pos, end: hd.LogPos,
		hist: History{LastType: byte(hd.EventType), LastTime: hd.Timestamp, LastSize: hd.EventSize}}
	return nil
}

// payloadRows gives the rows of a rows event read at `at` inside the
// compressed transaction being read their versions: the first one's
// offset above RowVersion(F, start, 0) and the versions (Rows.Versions), or ok
// false outside a payload. Every rows event counts, of selected tables or
// not, so the versions do not depend on the configuration.
func (s *Stream) payloadRows(at Position, st *tableState, hd *replication.EventHeader, e *replication.RowsEvent) (first uint64, slots int, ok bool, err error) {
	p := s.payload
	if p == nil || at != p.start {
		return 0, 0, false, nil
	}
	n, err := rowsCount(st, hd, e)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%s: rows event in a compressed transaction: %w", st.name, err)
	}
	first, slots = p.take(n)
	return first, slots, true, nil
}

// rowsCount is how many versions a rows event's rows take: its rows, an
// UPDATE's before and after image sharing one.
func rowsCount(st *tableState, hd *replication.EventHeader, e *replication.RowsEvent) (int, error) {
	n := len(e.Rows)
	if len(e.Rows) == 1 && len(e.Rows[0]) == 1 {
		if raw, isRaw := e.Rows[0][0].(binlog.RawRows); isRaw {
			var err error
			if n, err = block.CountImages(st.event.ColumnType, st.event.ColumnMeta, raw); err != nil {
				return 0, err
			}
		}
	}
	switch hd.EventType {
	case replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.PARTIAL_UPDATE_ROWS_EVENT:
		n /= 2 // a before and after image share a version
	}
	return n, nil
}

// take gives n rows the next versions of the range: the first one's
// offset and how many distinct ones they get (rows past the range share
// its last).
func (p *payloadState) take(n int) (first uint64, slots int) {
	capacity := p.capacity()
	first = min(p.used, capacity-1)
	slots = int(min(uint64(max(n, 1)), capacity-first))
	p.used += uint64(n)
	return first, slots
}

// capacity is how many versions the range holds.
func (p *payloadState) capacity() uint64 {
	return uint64(p.end-p.start.Pos)<<versionRowBits + MaxVersionRow
}

// payloadVersion is the version at offset first of the payload's range in
// the file whose F is f.
func (p *payloadState) version(f uint32, first uint64) uint64 {
	return RowVersion(f, p.start.Pos, 0) + 1 + first
}
