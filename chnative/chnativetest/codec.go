package chnativetest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/go-faster/city"
)

// The server's codec: the Native protocol's wire forms (uvarints, strings,
// exceptions), data blocks read from a client and built for it
// (blockWriter), and compression frames, all parsed here rather than
// shared with package chnative, so that the tests check the client.

// Protocol revisions the server gates on (ProtocolDefines.h).
const (
	revClientInfo             = 54032
	revServerTimezone         = 54058
	revQuotaKeyInClientInfo   = 54060
	revDisplayName            = 54372
	revVersionPatch           = 54401
	revServerLogs             = 54406
	revColumnDefaults         = 54410
	revClientWrite            = 54420
	revSettingsAsStrings      = 54429
	revInterserverSecret      = 54441
	revDistributedDepth       = 54448
	revInitialQueryStartTime  = 54449
	revIncrementalProfile     = 54451
	revCustomSerialization    = 54454
	revProfileEventsInInsert  = 54456
	revAddendum               = 54458
	revQueryTimeInProgress    = 54460
	revPasswordRules          = 54461
	revInterserverSecretV2    = 54462
	revTotalBytesInProgress   = 54463
	revTimezoneUpdates        = 54464
	revChunkedPackets         = 54470
	revParallelReplicasProto  = 54471
	revServerSettings         = 54474
	revQueryPlanSerialization = 54477

	// Revision26 is the protocol revision of a ClickHouse 26.x server.
	Revision26 = 54492
)

// Packet types.
const (
	clientHello = 0
	clientQuery = 1
	clientData  = 2
	clientPing  = 4

	serverHello          = 0
	serverData           = 1
	serverException      = 2
	serverProgress       = 3
	serverPong           = 4
	serverEndOfStream    = 5
	serverLog            = 10
	serverTableColumns   = 11
	serverProfileEvents  = 14
	serverTimezoneUpdate = 17
)

// Compression method bytes of a frame.
const (
	MethodNone = 0x02
	MethodLZ4  = 0x82
	MethodZSTD = 0x90
)

func (s *session) uvarint(v uint64) {
	var b [binary.MaxVarintLen64]byte
	s.w.Write(b[:binary.PutUvarint(b[:], v)])
}

func (s *session) str(v string) {
	s.uvarint(uint64(len(v)))
	s.w.WriteString(v)
}

func (s *session) readUvarint() (uint64, error) { return binary.ReadUvarint(s.r) }

func (s *session) readStr() (string, error) { return readString(s.r) }

func readString(r io.ByteReader) (string, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return "", err
	}
	if n > 1<<24 {
		return "", fmt.Errorf("a string of %d bytes", n)
	}
	b := make([]byte, n)
	for i := range b {
		if b[i], err = r.ReadByte(); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

func (s *session) exception(e Exception) {
	s.uvarint(serverException)
	var code [4]byte
	binary.LittleEndian.PutUint32(code[:], uint32(e.Code))
	s.w.Write(code[:])
	s.str(e.Name)
	s.str(e.Name + ": " + e.Message)
	s.str("") // stack trace
	s.w.WriteByte(0)
}

// compressed writes a block in one frame of the script's method.
func (s *session) compressed(data []byte) error {
	method := s.srv.script.Compression
	m := compress.None // also for a method no client knows, patched below
	switch method {
	case MethodLZ4:
		m = compress.LZ4
	case MethodZSTD:
		m = compress.ZSTD
	}
	w := compress.NewWriter(compress.LevelZero, m)
	if err := w.Compress(data); err != nil {
		return err
	}
	frame := w.Data
	if frame[16] != method {
		// A method no client knows, in a frame whose checksum holds.
		frame[16] = method
		h := city.CH128(frame[16:])
		binary.LittleEndian.PutUint64(frame[0:], h.Low)
		binary.LittleEndian.PutUint64(frame[8:], h.High)
	}
	_, err := s.w.Write(frame)
	return err
}

// readData reads a client Data packet: its type, table name and block.
func (s *session) readData(compressed bool) (Block, error) {
	kind, err := s.readUvarint()
	if err != nil {
		return Block{}, err
	}
	if kind != clientData {
		return Block{}, fmt.Errorf("packet %d instead of data", kind)
	}
	if _, err := s.readStr(); err != nil {
		return Block{}, err
	}
	var r *bufio.Reader = s.r
	var method byte
	if compressed {
		hdr, err := s.r.Peek(17)
		if err != nil {
			return Block{}, err
		}
		method = hdr[16]
		// The client ends a frame with each block: the reader stops at
		// the block's end, where the next packet begins.
		r = bufio.NewReader(compress.NewReader(s.r))
	}
	b, err := readBlock(r, s.rev)
	b.Method = method
	return b, err
}

func readBlock(r *bufio.Reader, rev uint64) (Block, error) {
	var b Block
	for {
		field, err := binary.ReadUvarint(r)
		if err != nil {
			return b, err
		}
		if field == 0 {
			break
		}
		n := map[uint64]int{1: 1, 2: 4}[field]
		if n == 0 {
			return b, fmt.Errorf("block info field %d", field)
		}
		if _, err := r.Discard(n); err != nil {
			return b, err
		}
	}
	ncols, err := binary.ReadUvarint(r)
	if err != nil {
		return b, err
	}
	rows, err := binary.ReadUvarint(r)
	if err != nil {
		return b, err
	}
	b.Rows = int(rows)
	for i := uint64(0); i < ncols; i++ {
		var c Column
		if c.Name, err = readString(r); err != nil {
			return b, err
		}
		if c.Type, err = readString(r); err != nil {
			return b, err
		}
		if rev >= revCustomSerialization {
			return b, errors.New("custom serialization is not read here")
		}
		var data bytes.Buffer
		if rows > 0 {
			if err := readValues(r, &data, c.Type, int(rows)); err != nil {
				return b, fmt.Errorf("column %s %s: %w", c.Name, c.Type, err)
			}
		}
		b.Columns = append(b.Columns, c)
		b.Data = append(b.Data, data.Bytes())
	}
	return b, nil
}

// readValues copies rows values of type typ from r to out.
func readValues(r *bufio.Reader, out *bytes.Buffer, typ string, rows int) error {
	if w := fixedWidth(typ); w > 0 {
		_, err := io.CopyN(out, r, int64(w*rows))
		return err
	}
	inner := func(prefix string) (string, bool) {
		if strings.HasPrefix(typ, prefix+"(") && strings.HasSuffix(typ, ")") {
			return typ[len(prefix)+1 : len(typ)-1], true
		}
		return "", false
	}
	if t, ok := inner("Nullable"); ok {
		if _, err := io.CopyN(out, r, int64(rows)); err != nil {
			return err
		}
		return readValues(r, out, t, rows)
	}
	if t, ok := inner("Array"); ok {
		var last uint64
		for i := 0; i < rows; i++ {
			var off [8]byte
			if _, err := io.ReadFull(r, off[:]); err != nil {
				return err
			}
			out.Write(off[:])
			last = binary.LittleEndian.Uint64(off[:])
		}
		return readValues(r, out, t, int(last))
	}
	if typ == "String" {
		for i := 0; i < rows; i++ {
			s, err := readString(r)
			if err != nil {
				return err
			}
			out.Write(stringValue(s))
		}
		return nil
	}
	return fmt.Errorf("a %s column: this server reads no such data", typ)
}

// fixedWidth is the width of a fixed-width type's values, 0 for others.
func fixedWidth(typ string) int {
	name, args, _ := strings.Cut(typ, "(")
	switch name {
	case "UInt8", "Int8", "Bool", "Enum8":
		return 1
	case "UInt16", "Int16", "Date", "Enum16":
		return 2
	case "UInt32", "Int32", "Float32", "DateTime", "Date32", "IPv4":
		return 4
	case "UInt64", "Int64", "Float64", "DateTime64":
		return 8
	case "UInt128", "Int128", "UUID", "IPv6":
		return 16
	case "UInt256", "Int256":
		return 32
	case "Decimal":
		p, _ := strconv.Atoi(strings.TrimSpace(strings.Split(args, ",")[0]))
		switch {
		case p <= 9:
			return 4
		case p <= 18:
			return 8
		case p <= 38:
			return 16
		}
		return 32
	case "FixedString":
		n, _ := strconv.Atoi(strings.TrimSuffix(args, ")"))
		return n
	}
	return 0
}

func stringValue(s string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(s))), s...)
}

// blockWriter builds a block in the Native format as NativeWriter writes
// it for a client's revision.
type blockWriter struct {
	bytes.Buffer
	rev uint64
}

func (b *blockWriter) uvarint(v uint64) { b.Write(binary.AppendUvarint(nil, v)) }

func (b *blockWriter) header(rev uint64, columns, rows int) {
	b.rev = rev
	// Block info: is_overflows, bucket_num (the fields below 54480), end.
	b.Write([]byte{1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0})
	b.uvarint(uint64(columns))
	b.uvarint(uint64(rows))
}

func (b *blockWriter) column(name, typ string, data []byte) {
	b.Write(stringValue(name))
	b.Write(stringValue(typ))
	if b.rev >= revCustomSerialization {
		b.WriteByte(0) // no custom serialization
	}
	b.Write(data)
}
