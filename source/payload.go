package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"

	"github.com/binlog2ch/binlog2ch/block"
)

// MySQL's compressed transactions (binlog_transaction_compression=ON,
// 8.0.20+). The server writes the transaction's GTID event as it is, then
// one TRANSACTION_PAYLOAD_EVENT holding all of the transaction's other
// events (Query BEGIN, table maps, rows events, the XID; for XA, XA START
// to the XA_PREPARE_LOG_EVENT), compressed together, without checksums
// and with log_pos 0. Statements logged as statements (DDL) and
// transactions touching non-transactional tables are never compressed.
//
// go-mysql's parser decompresses a whole payload and parses every event in
// it before handing any on: a transaction of millions of rows would sit in
// memory twice. The dump reader decodes the event itself instead and hands
// its events on one at a time, through the same bounded queue as all
// others: first the payload event itself (a TransactionPayloadEvent with
// no Events: the marker), then the inner events, parsed by a parser with
// the reader's options; the last one carries the payload's end position.
// The memory a payload takes is its compressed bytes, the zstd window
// (2 MiB at MySQL's default level 3, up to 128 MiB at level 22) and the
// events read ahead.
//
// For the stream, the payload is one transaction: its inner events are
// read at the payload's start (a reconnect or restart reads it again from
// the boundary before it), its last event (the XID) ends at the payload's
// end, so the transaction's Commit is there. Its rows get consecutive
// versions between the two positions (payloadState).

// The payload event's fields (MySQL's binary_log::codecs::binary::
// Transaction_payload): type, length and value, each a length-encoded
// integer, until the end mark.
const (
	payloadEndMark          = 0
	payloadSizeField        = 1
	payloadCompressionField = 2
	payloadUncompressedSize = 3
)

// The compression types.
const (
	payloadZSTD = 0
	payloadNone = 255
)

// maxInnerEvent is the largest event MySQL writes (max_log_event_size).
const maxInnerEvent = 1 << 30

// payloadFields is what a TRANSACTION_PAYLOAD_EVENT says of its payload.
type payloadFields struct {
	size, compression, uncompressed uint64
	hasUncompressed                 bool
	payload                         []byte
}

// parsePayloadFields reads the fields of a payload event's body (its
// checksum removed) and finds its payload.
func parsePayloadFields(body []byte) (payloadFields, error) {
	var f payloadFields
	hasSize := false
	pos := 0
	next := func(what string) (uint64, error) {
		v, n := lengthEncodedInt(body[pos:])
		if n == 0 {
			return 0, fmt.Errorf("the event's fields end inside a %s, or it is not a length-encoded integer, at byte %d of %d", what, pos, len(body))
		}
		pos += n
		return v, nil
	}
	for {
		typ, err := next("field type")
		if err != nil {
			return f, err
		}
		if typ == payloadEndMark {
			break
		}
		length, err := next("field length")
		if err != nil {
			return f, err
		}
		switch typ {
		case payloadSizeField:
			f.size, err = next("payload size")
			hasSize = true
		case payloadCompressionField:
			f.compression, err = next("compression type")
		case payloadUncompressedSize:
			f.uncompressed, err = next("uncompressed size")
			f.hasUncompressed = true
		default: // a field of a later version: skipped, as MySQL does
			if length > uint64(len(body)-pos) {
				return f, fmt.Errorf("field %d of %d bytes runs past the event's end", typ, length)
			}
			pos += int(length)
		}
		if err != nil {
			return f, err
		}
	}
	f.payload = body[pos:]
	if hasSize && f.size != uint64(len(f.payload)) {
		return f, fmt.Errorf("the event says its payload has %d bytes, it holds %d", f.size, len(f.payload))
	}
	f.size = uint64(len(f.payload))
	if !f.hasUncompressed && f.compression == payloadNone {
		f.uncompressed, f.hasUncompressed = f.size, true
	}
	return f, nil
}

// lengthEncodedInt decodes a MySQL length-encoded integer; n is 0 when p
// is too short or does not start one.
func lengthEncodedInt(p []byte) (v uint64, n int) {
	if len(p) == 0 {
		return 0, 0
	}
	size := 1
	switch p[0] {
	case 0xfb, 0xff:
		return 0, 0
	case 0xfc:
		size = 3
	case 0xfd:
		size = 4
	case 0xfe:
		size = 9
	default:
		return uint64(p[0]), 1
	}
	if len(p) < size {
		return 0, 0
	}
	for i := size - 1; i >= 1; i-- {
		v = v<<8 | uint64(p[i])
	}
	return v, size
}

// payload reads a TRANSACTION_PAYLOAD_EVENT and queues the marker and its
// events, or an error naming the payload's position. It reports false
// when the dump was closed or an error was queued.
func (d *dump) payload(event []byte) bool {
	size := 1 + len(event)
	var hd replication.EventHeader
	err := hd.Decode(event)
	if err == nil && int(hd.EventSize) != len(event) {
		err = fmt.Errorf("TRANSACTION_PAYLOAD_EVENT of %d bytes in a packet of %d", hd.EventSize, len(event))
	}
	if err != nil {
		d.send(dumpItem{size: size, err: fmt.Errorf("binlog %s: %w", d.file, err)})
		return false
	}
	at := fmt.Sprintf("binlog %s:%d: compressed transaction (TRANSACTION_PAYLOAD_EVENT of %d bytes)", d.file, int64(hd.LogPos)-int64(hd.EventSize), hd.EventSize)
	r, f, err := d.openPayload(event)
	if err != nil {
		d.send(dumpItem{size: size, err: fmt.Errorf("%s: %w", at, err)})
		return false
	}
	marker := &replication.BinlogEvent{RawData: event, Header: &hd, Event: &replication.TransactionPayloadEvent{
		Size: f.size, CompressionType: f.compression, UncompressedSize: f.uncompressed,
	}}
	if !d.send(dumpItem{ev: marker, size: size}) {
		return false
	}
	// Each event is queued once the next one is read, so the last one,
	// which ends the transaction, carries the payload's end.
	var last *replication.BinlogEvent
	for {
		ev, err := r.next()
		if err == nil && ev == nil && last == nil {
			err = errors.New("it holds no events")
		}
		if err != nil {
			d.send(dumpItem{size: 1, err: fmt.Errorf("%s: %w", at, err)})
			return false
		}
		if ev == nil {
			break
		}
		if last != nil && !d.send(dumpItem{ev: last, size: len(last.RawData)}) {
			return false
		}
		last = ev
	}
	last.Header.LogPos = hd.LogPos
	return d.send(dumpItem{ev: last, size: len(last.RawData)})
}

// openPayload reads a payload event's fields and returns the reader of its
// events.
func (d *dump) openPayload(event []byte) (*payloadReader, payloadFields, error) {
	if d.format == nil {
		return nil, payloadFields{}, errors.New("no format description event before it")
	}
	body := event[replication.EventHeaderSize:]
	if d.format.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		if len(body) < replication.BinlogChecksumLength {
			return nil, payloadFields{}, errors.New("shorter than its checksum")
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	f, err := parsePayloadFields(body)
	if err != nil {
		return nil, f, err
	}
	r := &payloadReader{size: f.uncompressed, sized: f.hasUncompressed, parser: d.newParser()}
	switch f.compression {
	case payloadZSTD:
		if d.zr == nil {
			// One block at a time, no read-ahead goroutines.
			if d.zr, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true)); err != nil {
				return nil, f, err
			}
		}
		// A bytes.Reader, not a bytes.Buffer: the decoder decodes a buffer
		// (which has Bytes) whole.
		if err := d.zr.Reset(bytes.NewReader(f.payload)); err != nil {
			return nil, f, fmt.Errorf("zstd: %w", err)
		}
		r.src = d.zr
	case payloadNone:
		r.src = bytes.NewReader(f.payload)
	default:
		return nil, f, fmt.Errorf("unknown compression type %d (binlog2ch reads ZSTD, 0, and NONE, 255)", f.compression)
	}
	// The events inside have no checksums: the inner parser gets the
	// reader's format description with checksums off.
	fde, err := r.parser.Parse(formatWithoutChecksum(d.format))
	if err != nil {
		return nil, f, fmt.Errorf("format description for its events: %w", err)
	}
	if alg := fde.Event.(*replication.FormatDescriptionEvent).ChecksumAlgorithm; alg == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		return nil, f, fmt.Errorf("format description for its events has checksum algorithm %d", alg)
	}
	return r, f, nil
}

func (d *dump) closePayloads() {
	if d.zr != nil {
		d.zr.Close()
	}
}

// formatWithoutChecksum encodes a FORMAT_DESCRIPTION_EVENT like f with
// checksums off: binlog version, server version (50 bytes), creation time,
// header length, the post-header lengths, the checksum algorithm and the
// 4 bytes a checksum-aware server always writes after it.
func formatWithoutChecksum(f *replication.FormatDescriptionEvent) []byte {
	body := binary.LittleEndian.AppendUint16(nil, f.Version)
	var version [50]byte
	copy(version[:], f.ServerVersion)
	body = append(body, version[:]...)
	body = binary.LittleEndian.AppendUint32(body, f.CreateTimestamp)
	body = append(body, replication.EventHeaderSize)
	body = append(body, f.EventTypeHeaderLengths...)
	body = append(body, byte(replication.BINLOG_CHECKSUM_ALG_OFF), 0, 0, 0, 0)
	ev := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body))
	ev[4] = byte(replication.FORMAT_DESCRIPTION_EVENT)
	binary.LittleEndian.PutUint32(ev[9:], uint32(replication.EventHeaderSize+len(body)))
	return append(ev, body...)
}

// payloadReader reads a payload's events one at a time.
type payloadReader struct {
	src    io.Reader // the uncompressed payload
	parser *replication.BinlogParser
	read   uint64 // uncompressed bytes read
	size   uint64 // the uncompressed size the event gives, when sized
	sized  bool
}

// next returns the next event, nil after the last.
func (r *payloadReader) next() (*replication.BinlogEvent, error) {
	var head [replication.EventHeaderSize]byte
	n, err := io.ReadFull(r.src, head[:])
	switch {
	case err == io.EOF:
		if r.sized && r.read != r.size {
			return nil, fmt.Errorf("its payload ends after %d uncompressed bytes; the event says %d", r.read, r.size)
		}
		return nil, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("its payload ends inside the header of the event at byte %d (%d bytes of 19)", r.read, n)
	case err != nil:
		return nil, fmt.Errorf("decompressing the event at byte %d of the payload: %w", r.read, err)
	}
	typ := replication.EventType(head[4])
	length := uint64(binary.LittleEndian.Uint32(head[9:]))
	switch {
	case typ == replication.TRANSACTION_PAYLOAD_EVENT:
		return nil, fmt.Errorf("the event at byte %d of the payload is a TRANSACTION_PAYLOAD_EVENT itself", r.read)
	case length < replication.EventHeaderSize || length > maxInnerEvent:
		return nil, fmt.Errorf("the %s at byte %d of the payload has length %d", typ, r.read, length)
	case r.sized && r.read+length > r.size:
		return nil, fmt.Errorf("the %s at byte %d of the payload has length %d, past the payload's end at %d", typ, r.read, length, r.size)
	}
	buf := make([]byte, length)
	copy(buf, head[:])
	if _, err := io.ReadFull(r.src, buf[len(head):]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return nil, fmt.Errorf("the %s at byte %d of the payload has length %d, past the payload's end", typ, r.read, length)
		}
		return nil, fmt.Errorf("decompressing the %s at byte %d of the payload: %w", typ, r.read, err)
	}
	at := r.read
	r.read += length
	ev, err := r.parser.Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("the %s at byte %d of the payload: %w", typ, at, err)
	}
	return ev, nil
}

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
// offset above RowVersion(F, start, 0) and the slots (Rows.Slots), or ok
// false outside a payload. Every rows event counts, of selected tables or
// not, so the versions do not depend on the configuration.
func (s *Stream) payloadRows(at Position, st *tableState, hd *replication.EventHeader, e *replication.RowsEvent) (first uint64, slots int, ok bool, err error) {
	p := s.payload
	if p == nil || at != p.start {
		return 0, 0, false, nil
	}
	n := len(e.Rows)
	if len(e.Rows) == 1 && len(e.Rows[0]) == 1 {
		if raw, isRaw := e.Rows[0][0].(RawRows); isRaw {
			if n, err = block.CountImages(st.event.ColumnType, st.event.ColumnMeta, raw); err != nil {
				return 0, 0, false, fmt.Errorf("%s: rows event in a compressed transaction: %w", st.name, err)
			}
		}
	}
	switch hd.EventType {
	case replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.PARTIAL_UPDATE_ROWS_EVENT:
		n /= 2 // a before and after image share a version
	}
	capacity := uint64(p.end-p.start.Pos)<<versionRowBits + MaxVersionRow
	first = min(p.used, capacity-1)
	slots = int(min(uint64(max(n, 1)), capacity-first))
	p.used += uint64(n)
	return first, slots, true, nil
}

// payloadVersion is the version at offset first of the payload's range in
// the file whose F is f.
func (p *payloadState) version(f uint32, first uint64) uint64 {
	return RowVersion(f, p.start.Pos, 0) + 1 + first
}
