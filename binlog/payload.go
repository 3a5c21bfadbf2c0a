package binlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
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
// memory twice. The connection decodes the event itself instead and hands
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
// when the connection was closed or an error was queued.
func (d *Conn) payload(event []byte) bool {
	size := 1 + len(event)
	var hd replication.EventHeader
	err := hd.Decode(event)
	if err == nil && int(hd.EventSize) != len(event) {
		err = fmt.Errorf("TRANSACTION_PAYLOAD_EVENT of %d bytes in a packet of %d", hd.EventSize, len(event))
	}
	if err != nil {
		d.send(item{size: size, err: fmt.Errorf("binlog %s: %w", d.file, err)})
		return false
	}
	at := fmt.Sprintf("binlog %s:%d: compressed transaction (TRANSACTION_PAYLOAD_EVENT of %d bytes)", d.file, int64(hd.LogPos)-int64(hd.EventSize), hd.EventSize)
	r, f, err := d.openPayload(event)
	if err != nil {
		d.send(item{size: size, err: fmt.Errorf("%s: %w", at, err)})
		return false
	}
	marker := &replication.BinlogEvent{RawData: event, Header: &hd, Event: &replication.TransactionPayloadEvent{
		Size: f.size, CompressionType: f.compression, UncompressedSize: f.uncompressed,
	}}
	if !d.send(item{ev: marker, size: size}) {
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
			d.send(item{size: 1, err: fmt.Errorf("%s: %w", at, err)})
			return false
		}
		if ev == nil {
			break
		}
		if last != nil && !d.send(item{ev: last, size: len(last.RawData)}) {
			return false
		}
		last = ev
	}
	last.Header.LogPos = hd.LogPos
	return d.send(item{ev: last, size: len(last.RawData)})
}

// openPayload reads a payload event's fields and returns the reader of its
// events.
func (d *Conn) openPayload(event []byte) (*payloadReader, payloadFields, error) {
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
	fde, err := r.parser.Parse(formatEvent(d.format, replication.BINLOG_CHECKSUM_ALG_OFF))
	if err != nil {
		return nil, f, fmt.Errorf("format description for its events: %w", err)
	}
	if alg := fde.Event.(*replication.FormatDescriptionEvent).ChecksumAlgorithm; alg == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		return nil, f, fmt.Errorf("format description for its events has checksum algorithm %d", alg)
	}
	return r, f, nil
}

func (d *Conn) closePayloads() {
	if d.zr != nil {
		d.zr.Close()
	}
}

// formatEvent encodes a FORMAT_DESCRIPTION_EVENT like f with the checksum
// algorithm alg: binlog version, server version (50 bytes), creation
// time, header length, the post-header lengths, the checksum algorithm
// and the 4 bytes a checksum-aware server always writes after it (not a
// checksum: binlog2ch's parsers do not verify them).
func formatEvent(f *replication.FormatDescriptionEvent, alg replication.BinlogChecksum) []byte {
	body := binary.LittleEndian.AppendUint16(nil, f.Version)
	var version [50]byte
	copy(version[:], f.ServerVersion)
	body = append(body, version[:]...)
	body = binary.LittleEndian.AppendUint32(body, f.CreateTimestamp)
	body = append(body, replication.EventHeaderSize)
	body = append(body, f.EventTypeHeaderLengths...)
	body = append(body, byte(alg), 0, 0, 0, 0)
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
