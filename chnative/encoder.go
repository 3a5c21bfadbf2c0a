package chnative

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// frameSize is how much uncompressed data goes into one frame, as
// ClickHouse's own max_compress_block_size.
const frameSize = 1 << 20

// Encoder writes a block in the Native format into compressed frames (LZ4
// unless the connection says otherwise), or plain with compression off.
// Values are appended to a frame buffer that is compressed and written out
// whenever it fills, so a block never exists a second time in memory.
type Encoder struct {
	w      *bufio.Writer
	buf    []byte // the frame's data after head bytes kept for its header
	head   int    // frameHead with LZ4 (frameWriter's NONE frames), else 0
	frames frameWriter
	method Compression
	err    error
	// captured keeps the uncompressed stream instead (NewCapture).
	captured []byte
	capture  bool
}

// NewCapture returns an Encoder that keeps what is written, uncompressed,
// for comparing encodings in tests.
func NewCapture() *Encoder { return &Encoder{capture: true} }

// NewDiscard returns an Encoder that compresses and discards what is
// written: for measuring the encoding alone.
func NewDiscard() *Encoder { return &Encoder{w: bufio.NewWriter(io.Discard)} }

// Encode runs write as the body of a data packet and finishes the packet.
func (e *Encoder) Encode(write func(*Encoder) error) error {
	e.begin(clientData)
	if err := write(e); err != nil {
		return err
	}
	if err := e.end(); err != nil {
		return err
	}
	return e.w.Flush()
}

// PlainFrames is how many LZ4 frames went as NONE frames so far, their
// bytes incompressible (frameWriter).
func (e *Encoder) PlainFrames() uint64 { return e.frames.plain }

// ProbedFrames is how many of those CompressionLZ4Adaptive sent plain
// after compressing only their start.
func (e *Encoder) ProbedFrames() uint64 { return e.frames.probed }

// Captured is what a capturing Encoder got so far.
func (e *Encoder) Captured() []byte {
	e.captured = append(e.captured, e.buf[e.head:]...)
	e.buf = e.buf[:e.head]
	return e.captured
}

func (e *Encoder) begin(kind uint64) {
	putUvarint(e.w, kind)
	putString(e.w, "") // table name: the query's table
	e.head = 0
	if !e.capture && (e.method == CompressionLZ4 || e.method == CompressionLZ4Adaptive) {
		e.head = frameHead
	}
	var head [frameHead]byte // written at each frame
	e.buf = append(e.buf[:0], head[:e.head]...)
	e.err = nil
}

// end writes out what is buffered and reports the first write error.
func (e *Encoder) end() error {
	if len(e.buf) > e.head {
		e.flush()
	}
	return e.err
}

func (e *Encoder) flush() {
	if e.capture {
		e.captured = append(e.captured, e.buf...)
		e.buf = e.buf[:0] // head is 0 when capturing
		return
	}
	if e.method == CompressionNone {
		if e.err == nil {
			_, e.err = e.w.Write(e.buf)
		}
		e.buf = e.buf[:0]
		return
	}
	if e.err == nil {
		// The frame may be e.buf itself: written out before e.buf is
		// reused.
		if frame, err := e.frames.frame(e.method, e.buf, e.head); err != nil {
			e.err = err
		} else if _, err := e.w.Write(frame); err != nil {
			e.err = err
		}
	}
	e.buf = e.buf[:e.head]
}

// room is the space left in the current frame, after flushing a full one
// (a length prefix may have taken the frame a few bytes past its size).
func (e *Encoder) room() int {
	if len(e.buf)-e.head >= frameSize {
		e.flush()
	}
	return frameSize - (len(e.buf) - e.head)
}

func (e *Encoder) grew() {
	if len(e.buf)-e.head >= frameSize {
		e.flush()
	}
}

// StartBlock writes the block header: block info, then the column and row
// counts. Each column follows with Column and its data.
func (e *Encoder) StartBlock(columns, rows int) { e.blockHeader(columns, rows) }

func (e *Encoder) blockHeader(columns, rows int) {
	// Block info: field 1 is_overflows = false, field 2 bucket_num = -1.
	e.buf = append(e.buf, 1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0)
	e.Uvarint(uint64(columns))
	e.Uvarint(uint64(rows))
}

// Column starts a column: its name and type, as the server's header has
// them.
func (e *Encoder) Column(name, typ string) {
	e.String(name)
	e.String(typ)
}

// Uvarint appends a variable-length unsigned integer.
func (e *Encoder) Uvarint(x uint64) {
	e.buf = binary.AppendUvarint(e.buf, x)
	e.grew()
}

// String appends a length-prefixed string (a String value).
func (e *Encoder) String(s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	if len(s) <= e.room() {
		e.buf = append(e.buf, s...)
		e.grew()
		return
	}
	e.bytes([]byte(s))
}

// StringBytes appends a length-prefixed byte string (a String value).
func (e *Encoder) StringBytes(p []byte) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(p)))
	e.Bytes(p)
}

// Bytes appends raw bytes: fixed-width values already in ClickHouse's
// (little-endian) layout, or FixedString data.
func (e *Encoder) Bytes(p []byte) {
	if len(p) <= e.room() {
		e.buf = append(e.buf, p...)
		e.grew()
		return
	}
	e.bytes(p)
}

// directMin is the size from which Direct frames bytes where they lie:
// below it a frame of its own costs more than the copy it saves.
const directMin = 64 << 10

// Direct appends p[head:], as Bytes does, but large data is not copied
// into the frame buffer: what is buffered goes out as a frame, then the
// data as frames of its own, compressed from where it lies. head is 0 or
// FrameHead: bytes before the data the header of a NONE frame (data LZ4
// did not shrink) may be written into, so that it goes out from p
// itself; without them it is copied into a frame. p must not change
// meanwhile; its head bytes are overwritten.
func (e *Encoder) Direct(p []byte, head int) {
	data := p[head:]
	if e.capture || len(data) < directMin {
		e.Bytes(data)
		return
	}
	if len(e.buf) > e.head {
		e.flush()
	}
	if e.err != nil {
		return
	}
	for len(data) > 0 {
		n := min(len(data), frameSize)
		var frame []byte
		var err error
		switch {
		case e.method == CompressionNone:
			frame = data[:n]
		case head == frameHead && n == len(p)-head && e.method != CompressionZSTD:
			// The whole of p in one frame: its header goes in the head
			// bytes. (A later frame's would overwrite the data before.)
			frame, err = e.frames.frame(e.method, p, head)
		default:
			frame, err = e.frames.frame(e.method, data[:n], 0)
		}
		if err == nil {
			_, err = e.w.Write(frame)
		}
		if err != nil {
			e.err = err
			return
		}
		data = data[n:]
	}
}

// Gather appends the size-byte values at the indexes sel of data, in that
// order: a column's selected rows, copied as many to a frame at a time as
// fit.
func (e *Encoder) Gather(data []byte, size int, sel []uint32) {
	for len(sel) > 0 {
		fit := e.room() / size
		if fit == 0 { // a value across the frame boundary
			r := int(sel[0]) * size
			e.bytes(data[r : r+size])
			sel = sel[1:]
			continue
		}
		fit = min(fit, len(sel))
		for _, r := range sel[:fit] {
			off := int(r) * size
			e.buf = append(e.buf, data[off:off+size]...)
		}
		sel = sel[fit:]
		e.grew()
	}
}

func (e *Encoder) bytes(p []byte) {
	for len(p) > 0 {
		n := min(len(p), e.room())
		e.buf = append(e.buf, p[:n]...)
		p = p[n:]
		e.grew()
	}
}

// Zeros appends n zero bytes.
func (e *Encoder) Zeros(n int) {
	for n > 0 {
		k := min(n, e.room())
		e.buf = append(e.buf, make([]byte, k)...)
		n -= k
		e.grew()
	}
}

// Uint8 appends one byte.
func (e *Encoder) Uint8(v uint8) { e.buf = append(e.buf, v); e.grew() }

// Uint16 appends a little-endian 16-bit value.
func (e *Encoder) Uint16(v uint16) { e.buf = binary.LittleEndian.AppendUint16(e.buf, v); e.grew() }

// Uint32 appends a little-endian 32-bit value.
func (e *Encoder) Uint32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v); e.grew() }

// Uint64 appends a little-endian 64-bit value.
func (e *Encoder) Uint64(v uint64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, v); e.grew() }

// Uint128 appends a little-endian 128-bit value, low half first.
func (e *Encoder) Uint128(lo, hi uint64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, lo)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, hi)
	e.grew()
}

// reader parses server blocks, only as far as an INSERT needs.
type reader struct{ r *bufio.Reader }

// formatError is a block that is not in the format this client reads (as
// opposed to a connection that failed while reading it).
type formatError struct{ msg string }

func (e *formatError) Error() string { return e.msg }

func errFormat(format string, args ...any) error {
	return &formatError{fmt.Sprintf(format, args...)}
}

func (r *reader) string() (string, error) {
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return "", err
	}
	if n > maxString {
		return "", errFormat("a string of %d bytes from the server: the stream is corrupt", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// blockInfo skips the block info fields.
func (r *reader) blockInfo() error {
	for {
		field, err := binary.ReadUvarint(r.r)
		if err != nil {
			return err
		}
		switch field {
		case 0:
			return nil
		case 1:
			_, err = r.r.Discard(1)
		case 2:
			_, err = r.r.Discard(4)
		default:
			return errFormat("unknown block info field %d", field)
		}
		if err != nil {
			return err
		}
	}
}

// blockColumns reads a block's header and column names and types; with
// rows > 0 the caller must skip the data.
func (r *reader) blockColumns() ([]Column, uint64, error) {
	if err := r.blockInfo(); err != nil {
		return nil, 0, err
	}
	ncols, err := binary.ReadUvarint(r.r)
	if err != nil {
		return nil, 0, err
	}
	rows, err := binary.ReadUvarint(r.r)
	if err != nil {
		return nil, 0, err
	}
	if ncols > 1<<16 {
		return nil, 0, errFormat("a block of %d columns: the stream is corrupt", ncols)
	}
	cols := make([]Column, ncols)
	for i := range cols {
		if cols[i].Name, err = r.string(); err != nil {
			return nil, 0, err
		}
		if cols[i].Type, err = r.string(); err != nil {
			return nil, 0, err
		}
		if rows > 0 && i < len(cols) {
			// Column data follows each column's header; blockColumns is
			// for empty blocks, skipBlock for the rest.
			if err := r.skipColumn(cols[i].Type, rows); err != nil {
				return nil, 0, fmt.Errorf("column %s: %w", cols[i].Name, err)
			}
		}
	}
	return cols, rows, nil
}

// skipBlock reads a block and drops it.
func (r *reader) skipBlock() error {
	_, _, err := r.blockColumns()
	return err
}

// fixedWidth are the sizes of the fixed-width types a server's log and
// profile-event blocks use.
var fixedWidth = map[string]int{
	"UInt8": 1, "Int8": 1, "UInt16": 2, "Int16": 2, "UInt32": 4, "Int32": 4, "Float32": 4,
	"UInt64": 8, "Int64": 8, "Float64": 8, "DateTime": 4, "Date": 2,
}

func (r *reader) skipColumn(typ string, rows uint64) error {
	if w, ok := fixedWidth[typ]; ok {
		if rows > math.MaxInt32 {
			return errFormat("too many rows")
		}
		_, err := r.r.Discard(w * int(rows))
		return err
	}
	switch {
	case typ == "String":
		for i := uint64(0); i < rows; i++ {
			n, err := binary.ReadUvarint(r.r)
			if err != nil {
				return err
			}
			if n > maxString {
				return errFormat("corrupt string length")
			}
			if _, err := r.r.Discard(int(n)); err != nil {
				return err
			}
		}
		return nil
	case strings.HasPrefix(typ, "FixedString("):
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(typ, "FixedString("), ")"))
		if err != nil || n < 0 || rows > math.MaxInt32 {
			return errFormat("cannot skip a %s column", typ)
		}
		_, err = r.r.Discard(n * int(rows))
		return err
	}
	return errFormat("cannot skip a %s column", typ)
}

// validTypeName reports whether s can be a ClickHouse type name: a name,
// then arguments in balanced parentheses (names, numbers, nested types,
// quoted strings such as time zones and Enum labels, key=value settings as
// JSON takes). It accepts every type a server has; what it refuses is a
// block this client misread (binary-encoded types, a format it does not
// know), whose "type names" are bytes.
func validTypeName(s string) bool {
	if s == "" || len(s) > 1<<20 || !isLetter(s[0]) {
		return false
	}
	ok := true
	depth, inQuote := scanTypeText(s, func(i, depth int) bool {
		switch c := s[i]; {
		case c == '(':
		case c == ')':
			ok = depth > 0
		case isLetter(c), c >= '0' && c <= '9', strings.IndexByte(" ,._=-+", c) >= 0:
		default:
			ok = false
		}
		return ok
	})
	return ok && depth == 0 && !inQuote
}

// SplitTypeArgs splits an argument list opened just before s at its commas
// outside parentheses and quotes, up to the ')' that closes it: the
// arguments and the index in s of that ')', or -1 when nothing closes it.
// It reads type arguments and engine arguments as the server prints them
// (chtables reads a Distributed table's sharding key with it).
func SplitTypeArgs(s string) (args []string, end int) {
	start := 0
	end = -1
	scanTypeText(s, func(i, depth int) bool {
		switch c := s[i]; {
		case c == ')' && depth == 0:
			args, end = append(args, s[start:i]), i
			return false
		case c == ',' && depth == 0:
			args = append(args, s[start:i])
			start = i + 1
		}
		return true
	})
	if end < 0 {
		return nil, -1
	}
	return args, end
}

// scanTypeText walks ClickHouse type or expression text as the server
// prints it, the one scanner of validTypeName and SplitTypeArgs: quoted
// strings (', ` and ", with backslash escapes) are skipped whole, and
// fn is called with the index of every other byte and the depth of the
// parentheses open before it, until it returns false. It returns the
// depth after the last byte walked and whether s ended inside a quote.
func scanTypeText(s string, fn func(i, depth int) bool) (depth int, inQuote bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '\'' || c == '`' || c == '"':
			quote = c
			continue
		}
		if !fn(i, depth) {
			return depth, quote != 0
		}
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		}
	}
	return depth, quote != 0
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
