package binlog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Rows events of tables nobody replicates. Most of a production binlog
// may be other tables' rows: the decoder reads only such an event's
// header and leaves its rows in the event's bytes (Skipped), allocating
// nothing; the connection's reader reads most such events at their header
// itself, without the parser (skipread.go). The reader's goroutine
// decodes ahead of the stream, so which tables are skipped is only the
// stream's latest word (Skips): a reload may select a table whose events
// were already read, and a compressed transaction counts every rows
// event's rows. The stream then decodes the event itself (DecodeSkipped),
// which gives what the decoder would have.

// Skips is the set of tables whose rows events the decoder leaves
// undecoded. The stream sets it from its table maps; the readers of its
// connections read it concurrently.
type Skips struct {
	mu  sync.RWMutex
	dbs map[string]map[string]bool
}

// NewSkips is an empty set.
func NewSkips() *Skips { return &Skips{dbs: map[string]map[string]bool{}} }

// Set adds a table (skip) or removes it; on nil it does nothing.
func (s *Skips) Set(db, table string, skip bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tables := s.dbs[db]
	if !skip {
		delete(tables, table)
		return
	}
	if tables == nil {
		tables = map[string]bool{}
		s.dbs[db] = tables
	}
	tables[table] = true
}

// Clear empties the set: the selection changed.
func (s *Skips) Clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.dbs)
}

// Has reports whether a table is in the set.
func (s *Skips) Has(db, table string) bool { return s.has([]byte(db), []byte(table)) }

// has reports whether a table is in the set; nil holds none. The map
// lookups by string(b) do not allocate.
func (s *Skips) has(db, table []byte) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dbs[string(db)][string(table)]
}

// undecoded is the only value of the only row of an event the decoder
// skipped: how many bytes (a CRC32 checksum) follow the rows in the
// event's RawData.
type undecoded uint8

// Shared and never written: marking an event allocates nothing.
var (
	undecodedRows         = [][]any{{undecoded(0)}}
	undecodedRowsChecksum = [][]any{{undecoded(replication.BinlogChecksumLength)}}
)

// Skipped reports whether the decoder left e's rows undecoded: e.Rows then
// holds no rows but a mark, and DecodeSkipped decodes them.
func Skipped(e *replication.RowsEvent) bool {
	_, ok := skippedTrailer(e)
	return ok || readAtHeader(e) != nil
}

func skippedTrailer(e *replication.RowsEvent) (int, bool) {
	if len(e.Rows) != 1 || len(e.Rows[0]) != 1 {
		return 0, false
	}
	u, ok := e.Rows[0][0].(undecoded)
	return int(u), ok
}

// markChecksum records, on an event the decoder skipped, that its bytes
// end in a checksum (the parser removed it before decoding).
func markChecksum(ev *replication.BinlogEvent, format *replication.FormatDescriptionEvent) {
	if format == nil || format.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_CRC32 {
		return
	}
	if e, ok := ev.Event.(*replication.RowsEvent); ok && Skipped(e) {
		e.Rows = undecodedRowsChecksum
	}
}

// DecodeSkipped decodes the rows of a rows event the decoder skipped from
// the event's bytes, as a decoder without Skips would have (raw: as
// Config.RawRows). Call it from one goroutine per event.
func DecodeSkipped(ev *replication.BinlogEvent, raw bool) error {
	e, ok := ev.Event.(*replication.RowsEvent)
	if !ok {
		return errors.New("not a rows event")
	}
	if h := readAtHeader(e); h != nil {
		return decodeAtHeader(ev, e, h, raw)
	}
	trailer, ok := skippedTrailer(e)
	if !ok {
		return nil // decoded already
	}
	t := e.Table
	if t == nil {
		return errors.New("rows event without its table map")
	}
	// The rows start after the header's last bitmap, a slice of the
	// event's bytes (DecodeHeader read it; it is not read again: the
	// parser's table maps it would look in are the reader's).
	last := e.ColumnBitmap1
	if e.ColumnBitmap2 != nil {
		last = e.ColumnBitmap2
	}
	raw0 := ev.RawData
	start := cap(raw0) - cap(last)
	end := len(raw0) - trailer
	if len(last) == 0 || start < replication.EventHeaderSize || start+len(last) > end || &raw0[start] != &last[0] {
		return fmt.Errorf("rows event of %d bytes whose column bitmap is not among them", len(raw0))
	}
	data := raw0[replication.EventHeaderSize:end]
	e.Rows = nil
	d := NewRowsDecoder(raw, nil)
	return d.decodeRows(e, start+len(last)-replication.EventHeaderSize, data, d.lookup(t))
}
