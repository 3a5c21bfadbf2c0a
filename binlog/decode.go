package binlog

import (
	"sync"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/go-mysql-org/go-mysql/replication"
)

// RowsDecoder replaces go-mysql's rows-event decoding. For tables whose
// column types binlog2ch decodes itself (block.RawDecodable), it leaves
// the row images as bytes (RawRows), decoded later straight into the
// column buffers: go-mysql's decoding, an interface value per column and
// fmt for DATE and TIME, was half of the daemon's CPU. Other tables are
// decoded by go-mysql minus its per-row UnsignedMap (a fresh map for every
// row image); UNSIGNED values then arrive as signed Go integers of the
// column's width, which the schema converters reinterpret. MySQL's
// PARTIAL_UPDATE_ROWS_EVENT (binlog_row_value_options=PARTIAL_JSON) is read
// by partial.go: its after images lose their value_options, and its JSON
// diff vectors become whole documents. The rows of a table in its Skips
// are not decoded at all (Skipped).
type RowsDecoder struct {
	mu sync.Mutex // the parser may decode transaction payloads concurrently
	// byTable holds, per table id, the last table map seen, its copy
	// without signedness, and whether its rows stay raw.
	byTable map[uint64]tableDecoding
	raw     bool // raw rows allowed (not with MariaDB's compressed binlog)
	skips   *Skips
}

type tableDecoding struct {
	orig, unsigned *replication.TableMapEvent
	raw            bool
	skip           bool // in skips when its table map was first met
}

// RawRows are the undecoded row images of one rows event: the only value
// of its only row.
type RawRows []byte

// NewRowsDecoder is a decoder; skips, when not nil, are the tables whose
// rows it leaves undecoded.
func NewRowsDecoder(raw bool, skips *Skips) *RowsDecoder {
	return &RowsDecoder{byTable: map[uint64]tableDecoding{}, raw: raw, skips: skips}
}

func (d *RowsDecoder) Decode(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	orig := e.Table
	if orig == nil {
		return e.DecodeData(pos, data)
	}
	td := d.lookup(orig)
	if td.skip {
		// Only the header: most of a binlog may be other tables' rows.
		e.Rows = undecodedRows
		return nil
	}
	return d.decodeRows(e, pos, data, td)
}

// decodeRows decodes the rows of e, whose header is decoded, from
// data[pos:].
func (d *RowsDecoder) decodeRows(e *replication.RowsEvent, pos int, data []byte, td tableDecoding) error {
	orig := td.orig
	if isPartialUpdate(e) {
		return d.decodePartial(e, pos, data, td) // partial.go
	}
	if td.raw && FullImage(e.ColumnBitmap1, orig.ColumnCount) && (e.ColumnBitmap2 == nil || FullImage(e.ColumnBitmap2, orig.ColumnCount)) {
		e.Rows = [][]any{{RawRows(data[pos:])}}
		return nil
	}
	// The reader reads the real table map (names, signedness) from the
	// event after decoding.
	e.Table = td.unsigned
	defer func() { e.Table = orig }()
	return e.DecodeData(pos, data)
}

// FullImage reports whether a columns-present bitmap has every column.
func FullImage(bitmap []byte, columns uint64) bool {
	for i := uint64(0); i < columns; i++ {
		if i/8 >= uint64(len(bitmap)) || bitmap[i/8]&(1<<(i%8)) == 0 {
			return false
		}
	}
	return true
}

// lookup returns how to decode t's rows, cached per table id.
func (d *RowsDecoder) lookup(t *replication.TableMapEvent) tableDecoding {
	d.mu.Lock()
	defer d.mu.Unlock()
	if td, ok := d.byTable[t.TableID]; ok && td.orig == t {
		return td
	}
	if d.skips.has(t.Schema, t.Table) {
		td := tableDecoding{orig: t, skip: true}
		d.store(td)
		return td
	}
	c := *t
	c.SignednessBitmap = nil
	td := tableDecoding{orig: t, unsigned: &c, raw: d.raw}
	for i := range t.ColumnType {
		td.raw = td.raw && block.RawDecodable(t.ColumnType[i], t.ColumnMeta[i])
	}
	d.store(td)
	return td
}

// store caches td; d.mu is held.
func (d *RowsDecoder) store(td tableDecoding) {
	if len(d.byTable) > 10000 {
		clear(d.byTable) // many tables or ids churned by DDL: start over
	}
	d.byTable[td.orig.TableID] = td
}
