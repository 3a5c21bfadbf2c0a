package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Rows events of skipped tables read at their header alone. go-mysql's
// parser allocates an event, its header and a RowsEvent of ~300 bytes for
// every event, and the collector then frees them: most of what reading a
// table nobody replicates cost beyond the socket. The reader reads such
// an event's header itself, into a pooled headerSkipped that Release
// takes back with the buffer: no allocation per event. It reads it so
// only for a table whose table map it saw the parser read and found in
// Skips, and never for the last event of a statement (STMT_END_F), which
// goes to the parser: the parser drops its table maps there, and the
// reader's own list (Conn.maps) with it, so both always hold the same.

// headerSkipped is a rows event read at its header: the event handed on
// (ev, whose Header and Event point into it) and what decoding it after
// all takes (DecodeSkipped): the format description and the bytes of the
// table map it was read under.
type headerSkipped struct {
	ev       replication.BinlogEvent
	hd       replication.EventHeader
	rows     replication.RowsEvent
	format   *replication.FormatDescriptionEvent
	tableMap []byte
	flavor   string
	// The mark in rows.Rows: one row whose only value is this event, in
	// arrays of its own (marking allocates nothing).
	mark [1][]any
	row  [1]any
}

// mappedTable is a table map the reader's parser read: its event, its
// bytes, and whether its table was in Skips then.
type mappedTable struct {
	event *replication.TableMapEvent
	raw   []byte
	skip  bool
}

// mapped records what the parser read of ev, to follow its table maps:
// it keeps each table map and drops them all at a statement's end, as the
// parser does.
func (d *Conn) mapped(ev *replication.BinlogEvent) {
	if d.skips == nil || ev == nil {
		return
	}
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		if d.maps == nil {
			d.maps = map[uint64]mappedTable{}
		}
		d.maps[e.TableID] = mappedTable{event: e, raw: ev.RawData, skip: d.skips.has(e.Schema, e.Table)}
	case *replication.RowsEvent:
		if e.Flags&replication.RowsEventStmtEndFlag != 0 {
			clear(d.maps)
		}
	case *replication.FormatDescriptionEvent:
		clear(d.maps) // the post-header lengths may differ from here on
	}
}

// rowsLayout is the header layout of the rows events the reader reads at
// their header: the version (2: with extra data) and whether a second
// column bitmap (an UPDATE's after image) follows.
func rowsLayout(t replication.EventType) (version int, bitmap2, ok bool) {
	switch t {
	case replication.WRITE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return 1, false, true
	case replication.UPDATE_ROWS_EVENTv1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		return 1, true, true
	case replication.WRITE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2:
		return 2, false, true
	case replication.UPDATE_ROWS_EVENTv2, replication.PARTIAL_UPDATE_ROWS_EVENT:
		return 2, true, true
	}
	return 0, false, false
}

// skipAtHeader reads data, an event, at its header if it is a rows event
// of a skipped table the parser need not see; nil leaves it to the
// parser (which also reports whatever is wrong with it).
func (d *Conn) skipAtHeader(data []byte) *replication.BinlogEvent {
	if len(d.maps) == 0 || d.format == nil || len(data) < replication.EventHeaderSize {
		return nil
	}
	typ := replication.EventType(data[4])
	version, bitmap2, ok := rowsLayout(typ)
	if !ok || int(typ) > len(d.format.EventTypeHeaderLengths) || int(binary.LittleEndian.Uint32(data[9:])) != len(data) {
		return nil
	}
	body := data[replication.EventHeaderSize:]
	if d.format.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		if len(body) < replication.BinlogChecksumLength {
			return nil
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	idSize := 6
	if d.format.EventTypeHeaderLengths[typ-1] == 6 {
		idSize = 4
	}
	if len(body) < idSize+2 {
		return nil
	}
	var id uint64
	for i := idSize - 1; i >= 0; i-- {
		id = id<<8 | uint64(body[i])
	}
	m, ok := d.maps[id]
	flags := binary.LittleEndian.Uint16(body[idSize:])
	if !ok || !m.skip || flags&replication.RowsEventStmtEndFlag != 0 {
		return nil
	}
	pos := idSize + 2
	if version == 2 {
		if len(body) < pos+2 {
			return nil
		}
		extra := int(binary.LittleEndian.Uint16(body[pos:]))
		if extra < 2 || len(body) < pos+extra {
			return nil
		}
		pos += extra
	}
	if pos >= len(body) {
		return nil
	}
	columns, _, n := mysql.LengthEncodedInt(body[pos:])
	pos += n
	bits := int((columns + 7) / 8)
	if n == 0 || columns > 1<<16 || pos+bits > len(body) || bitmap2 && pos+2*bits > len(body) {
		return nil
	}
	h := d.pool.getSkipped()
	if err := h.hd.Decode(data); err != nil {
		d.pool.putSkipped(h)
		return nil
	}
	h.rows = replication.RowsEvent{Version: version, TableID: id, Flags: flags, Table: m.event, ColumnCount: columns,
		ColumnBitmap1: body[pos : pos+bits : pos+bits]}
	if bitmap2 {
		h.rows.ColumnBitmap2 = body[pos+bits : pos+2*bits : pos+2*bits]
	}
	h.format, h.tableMap, h.flavor = d.format, m.raw, d.flavor
	h.row[0] = h
	h.mark[0] = h.row[:]
	h.rows.Rows = h.mark[:]
	h.ev = replication.BinlogEvent{RawData: data, Header: &h.hd, Event: &h.rows}
	return &h.ev
}

// readAtHeader returns the headerSkipped e is the rows event of, or nil.
func readAtHeader(e *replication.RowsEvent) *headerSkipped {
	if len(e.Rows) != 1 || len(e.Rows[0]) != 1 {
		return nil
	}
	h, _ := e.Rows[0][0].(*headerSkipped)
	return h
}

// decodeAtHeader decodes the rows of an event read at its header: a
// parser of its own reads the format description, the table map and the
// event as the reader's parser would have, and e becomes the event it
// reads.
func decodeAtHeader(ev *replication.BinlogEvent, e *replication.RowsEvent, h *headerSkipped, raw bool) error {
	if h.format == nil || len(h.tableMap) == 0 {
		return errors.New("rows event read at its header without its format description or table map")
	}
	p := newParserWith(h.flavor, NewRowsDecoder(raw, nil))
	if _, err := p.Parse(formatEvent(h.format, h.format.ChecksumAlgorithm)); err != nil {
		return fmt.Errorf("its format description: %w", err)
	}
	if _, err := p.Parse(h.tableMap); err != nil {
		return fmt.Errorf("its table map: %w", err)
	}
	full, err := p.Parse(ev.RawData)
	if err != nil {
		return err
	}
	r, ok := full.Event.(*replication.RowsEvent)
	if !ok {
		return fmt.Errorf("read at its header as a rows event, parsed as %T", full.Event)
	}
	*e = *r
	return nil
}

// getSkipped returns a headerSkipped from the pool, or a new one.
func (p *bufferPool) getSkipped() *headerSkipped {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.skipped); n > 0 {
		h := p.skipped[n-1]
		p.skipped = p.skipped[:n-1]
		return h
	}
	return new(headerSkipped)
}

// putSkipped takes back a headerSkipped nothing refers to any more,
// emptied: what still held it would read no event.
func (p *bufferPool) putSkipped(h *headerSkipped) {
	*h = headerSkipped{}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.skipped) < maxSkipped {
		p.skipped = append(p.skipped, h)
	}
}

// maxSkipped bounds the pooled headerSkipped: more than the events read
// ahead at most (the event cache) are never in use at once.
const maxSkipped = 4096
