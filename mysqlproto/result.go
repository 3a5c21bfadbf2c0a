package mysqlproto

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Column is a result-set column as the server describes it (its column
// definition packet).
type Column struct {
	Name     string
	Type     byte   // MYSQL_TYPE_* (go-mysql's mysql package names them)
	Flags    uint16 // NOT_NULL_FLAG, UNSIGNED_FLAG, BINARY_FLAG...
	Decimals byte
	Charset  uint16 // the collation id of the value's bytes (63: binary)
	Length   uint32
}

// UnsignedFlag is the column flag of an unsigned number.
const UnsignedFlag = 32

// Result is a result set being read. Its rows must be read to the end
// (Done) before the connection takes another command.
type Result struct {
	c       *Conn
	Columns []Column
	// Binary: rows in the binary protocol (a prepared statement's),
	// else the text protocol.
	Binary bool
	done   bool
}

// Done reports whether every row has been read.
func (r *Result) Done() bool { return r.done }

// Framing of the rows ReadRows returns: each row is a 4-byte
// little-endian length and the row packet's payload, as the server sent
// it (a row longer than a packet joined into one).
const frameHeader = 4

// NextRow splits the first row off rows framed by ReadRows; ok is false
// when rows is empty or cut short.
func NextRow(rows []byte) (row, rest []byte, ok bool) {
	if len(rows) < frameHeader {
		return nil, rows, false
	}
	n := int(binary.LittleEndian.Uint32(rows))
	if len(rows)-frameHeader < n {
		return nil, rows, false
	}
	return rows[frameHeader : frameHeader+n], rows[frameHeader+n:], true
}

// AppendRow appends row framed as ReadRows frames it (for tests and
// fixtures).
func AppendRow(dst, row []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(row)))
	return append(dst, row...)
}

// ReadRows appends rows to dst (framed: see NextRow) until dst holds at
// least maxBytes or the result set ends, and returns them with their
// count. A row larger than maxBytes comes alone. An error ends the result
// set; a ServerError (the query failed while sending rows) leaves the
// connection usable.
func (r *Result) ReadRows(ctx context.Context, dst []byte, maxBytes int) ([]byte, int, error) {
	if r.done {
		return dst, 0, nil
	}
	c := r.c
	if c.broken {
		return dst, 0, ErrBroken
	}
	done := c.watch(ctx)
	dst, rows, err := c.readRows(r, dst, maxBytes)
	if cerr := done(); cerr != nil {
		return dst, rows, cerr
	}
	if err != nil {
		var se *ServerError
		if !errors.As(err, &se) {
			return dst, rows, c.fail(ctx, err)
		}
	}
	return dst, rows, err
}

// readRows reads row packets straight into dst, as the connection
// delivers them: each packet's header becomes its frame (the sequence
// byte zeroed: a packet is shorter than 2^24 bytes, so the 4 bytes read
// as its little-endian length), and a row is copied by nothing but the
// kernel. Bytes read past the last row are kept for the next read.
func (c *Conn) readRows(r *Result, dst []byte, maxBytes int) ([]byte, int, error) {
	pos := len(dst) // the next packet
	rows := 0
	var err error
	for pos < maxBytes {
		if dst, err = c.ensure(dst, pos+4, maxBytes); err != nil {
			break
		}
		n := int(dst[pos]) | int(dst[pos+1])<<8 | int(dst[pos+2])<<16
		if dst[pos+3] != c.seq {
			err = fmt.Errorf("mysqlproto: packet out of order: sequence %d, want %d", dst[pos+3], c.seq)
			break
		}
		c.seq++
		if n == maxPayload {
			if dst, err = c.joinRow(dst, pos); err != nil {
				break
			}
			pos = len(dst)
			rows++
			continue
		}
		if dst, err = c.ensure(dst, pos+4+n, maxBytes); err != nil {
			break
		}
		p := dst[pos+4 : pos+4+n]
		switch {
		case n == 0:
			err = errors.New("mysqlproto: empty row packet")
		case p[0] == eofHeader && n < 9:
			r.done, c.open = true, nil
			if n >= 5 && binary.LittleEndian.Uint16(p[3:])&serverMoreResultsExist != 0 {
				c.broken = true // more result sets follow, which nothing reads
			}
			c.unread(dst[pos+4+n:])
			return dst[:pos], rows, nil
		case p[0] == errHeader:
			r.done, c.open = true, nil
			err = serverError(p)
			c.unread(dst[pos+4+n:])
			return dst[:pos], rows, err
		default:
			dst[pos+3] = 0
			pos += 4 + n
			rows++
			continue
		}
		break
	}
	if err == nil {
		c.unread(dst[pos:])
	}
	return dst[:pos], rows, err
}

// ensure reads until dst holds need bytes: the buffered ones first, then
// from the connection, as much as it has up to maxBytes.
func (c *Conn) ensure(dst []byte, need, maxBytes int) ([]byte, error) {
	for len(dst) < need {
		if c.r < c.w {
			dst = append(dst, c.in[c.r:c.w]...)
			c.r, c.w = 0, 0
			continue
		}
		if cap(dst) < need {
			// Room for more than the bytes needed, as the caller allows:
			// reads of a few bytes each would cost a system call each.
			dst = slices.Grow(dst, max(need, min(maxBytes, len(dst)+growWindow))-len(dst))
		}
		end := min(cap(dst), max(need, maxBytes))
		k, err := c.readBatch(dst[len(dst):end])
		dst = dst[:len(dst)+k]
		if err != nil && len(dst) < need {
			return dst, err
		}
	}
	return dst, nil
}

// growWindow is how much ensure grows a buffer by beyond what it needs.
const growWindow = 256 << 10

// unread keeps bytes read past what was taken, for the next read, before
// any still buffered (ensure empties the buffer before reading into dst,
// so there are none but after joinRow, which leaves p empty).
func (c *Conn) unread(p []byte) {
	if len(p) == 0 {
		return
	}
	pending := c.in[c.r:c.w]
	buf := make([]byte, 0, max(len(c.in), len(p)+len(pending)))
	c.in = append(append(buf, p...), pending...)[:cap(buf)]
	c.r, c.w = 0, len(p)+len(pending)
}

// joinRow completes the row whose first packet, of the maximum size,
// starts at dst[pos]: the next packets' payloads are appended to its own,
// and its frame gets the whole length.
func (c *Conn) joinRow(dst []byte, pos int) ([]byte, error) {
	dst, err := c.ensure(dst, pos+4+maxPayload, pos+4+maxPayload)
	if err != nil {
		return dst, err
	}
	c.unread(dst[pos+4+maxPayload:])
	dst = dst[:pos+4+maxPayload]
	for n := maxPayload; n == maxPayload; {
		if n, err = c.readHeader(); err != nil {
			return dst, err
		}
		at := len(dst)
		dst = grow(dst, n)
		if err := c.readFull(dst[at:]); err != nil {
			return dst, err
		}
	}
	total := len(dst) - pos - 4
	if total > math.MaxUint32 {
		return dst, errors.New("mysqlproto: row larger than 4 GiB")
	}
	binary.LittleEndian.PutUint32(dst[pos:], uint32(total))
	return dst, nil
}

// serverMoreResultsExist is the status flag of a result set followed by
// another.
const serverMoreResultsExist = 0x0008

// Discard reads and drops the rows left, so the connection can take
// another command.
func (r *Result) Discard(ctx context.Context) error {
	var buf []byte
	for !r.done {
		var err error
		if buf, _, err = r.ReadRows(ctx, buf[:0], 1<<20); err != nil {
			return err
		}
	}
	return nil
}

// Query runs a statement in the text protocol (COM_QUERY) and returns its
// result set.
func (c *Conn) Query(ctx context.Context, query string) (*Result, error) {
	if !c.Usable() {
		return nil, ErrBroken
	}
	done := c.watch(ctx)
	var r *Result
	err := c.writeCommand(comQuery, []byte(query))
	if err == nil {
		r, err = c.readResultHead(false)
	}
	return c.finish(ctx, done, r, err)
}

// finish ends a command that opens a result set.
func (c *Conn) finish(ctx context.Context, done func() error, r *Result, err error) (*Result, error) {
	if cerr := done(); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		var se *ServerError
		if !errors.As(err, &se) {
			return nil, c.fail(ctx, err)
		}
		return nil, err
	}
	c.open = r
	return r, nil
}

// readResultHead reads a result set's column count and definitions.
func (c *Conn) readResultHead(binaryRows bool) (*Result, error) {
	p, err := c.readPacket(c.buf[:0])
	c.buf = p
	if err != nil {
		return nil, err
	}
	switch {
	case len(p) == 0:
		return nil, errors.New("mysqlproto: empty answer")
	case p[0] == errHeader:
		return nil, serverError(p)
	case p[0] == okHeader:
		c.broken = true
		return nil, errors.New("mysqlproto: the statement returned no result set")
	}
	n, _, ok := lenencInt(p)
	if !ok || n == 0 || n > 1<<16 {
		return nil, errors.New("mysqlproto: malformed column count")
	}
	cols, err := c.readColumns(int(n))
	if err != nil {
		return nil, err
	}
	return &Result{c: c, Columns: cols, Binary: binaryRows}, nil
}

// readColumns reads n column definitions and the EOF packet after them.
func (c *Conn) readColumns(n int) ([]Column, error) {
	cols := make([]Column, n)
	for i := range cols {
		p, err := c.readPacket(c.buf[:0])
		c.buf = p
		if err != nil {
			return nil, err
		}
		if cols[i], err = parseColumn(p); err != nil {
			return nil, err
		}
	}
	return cols, c.readEOF()
}

func (c *Conn) readEOF() error {
	p, err := c.readPacket(c.buf[:0])
	c.buf = p
	if err != nil {
		return err
	}
	if len(p) == 0 || p[0] != eofHeader || len(p) >= 9 {
		if len(p) > 0 && p[0] == errHeader {
			return serverError(p)
		}
		return errors.New("mysqlproto: expected an EOF packet")
	}
	return nil
}

var errMalformedColumn = errors.New("mysqlproto: malformed column definition")

// parseColumn reads a ColumnDefinition41 packet.
func parseColumn(p []byte) (Column, error) {
	var col Column
	var name []byte
	for i := 0; i < 6; i++ { // catalog, schema, table, org_table, name, org_name
		s, rest, ok := lenencBytes(p)
		if !ok {
			return col, errMalformedColumn
		}
		if i == 4 {
			name = s
		}
		p = rest
	}
	_, n, ok := lenencInt(p) // the length of the fixed fields, 0x0c
	if !ok || len(p) < n+10 {
		return col, errMalformedColumn
	}
	p = p[n:]
	col.Name = string(name)
	col.Charset = binary.LittleEndian.Uint16(p)
	col.Length = binary.LittleEndian.Uint32(p[2:])
	col.Type = p[6]
	col.Flags = binary.LittleEndian.Uint16(p[7:])
	col.Decimals = p[9]
	return col, nil
}

// lenencInt reads a length-encoded integer: its value and its size. A
// NULL (0xfb) is not an integer.
func lenencInt(p []byte) (v uint64, n int, ok bool) {
	if len(p) == 0 {
		return 0, 0, false
	}
	switch b := p[0]; {
	case b < 0xfb:
		return uint64(b), 1, true
	case b == 0xfc && len(p) >= 3:
		return uint64(binary.LittleEndian.Uint16(p[1:])), 3, true
	case b == 0xfd && len(p) >= 4:
		return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16, 4, true
	case b == 0xfe && len(p) >= 9:
		return binary.LittleEndian.Uint64(p[1:]), 9, true
	}
	return 0, 0, false
}

// lenencBytes reads a length-encoded string.
func lenencBytes(p []byte) (s, rest []byte, ok bool) {
	v, n, ok := lenencInt(p)
	if !ok || uint64(len(p)-n) < v {
		return nil, p, false
	}
	return p[n : n+int(v)], p[n+int(v):], true
}

// Stmt is a prepared statement.
type Stmt struct {
	c      *Conn
	id     uint32
	params int
}

// Prepare prepares a statement (COM_STMT_PREPARE).
func (c *Conn) Prepare(ctx context.Context, query string) (*Stmt, error) {
	if !c.Usable() {
		return nil, ErrBroken
	}
	done := c.watch(ctx)
	s, err := c.prepare(query)
	if cerr := done(); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		var se *ServerError
		if !errors.As(err, &se) {
			return nil, c.fail(ctx, err)
		}
		return nil, err
	}
	return s, nil
}

func (c *Conn) prepare(query string) (*Stmt, error) {
	if err := c.writeCommand(comStmtPrepare, []byte(query)); err != nil {
		return nil, err
	}
	p, err := c.readPacket(c.buf[:0])
	c.buf = p
	if err != nil {
		return nil, err
	}
	if len(p) > 0 && p[0] == errHeader {
		return nil, serverError(p)
	}
	if len(p) < 12 || p[0] != okHeader {
		return nil, errors.New("mysqlproto: malformed answer to a prepare")
	}
	s := &Stmt{c: c, id: binary.LittleEndian.Uint32(p[1:])}
	cols := int(binary.LittleEndian.Uint16(p[5:]))
	s.params = int(binary.LittleEndian.Uint16(p[7:]))
	// The parameters' and columns' definitions, each set ended by EOF.
	for _, n := range []int{s.params, cols} {
		if n == 0 {
			continue
		}
		if _, err := c.readColumns(n); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Close frees the statement on the server (COM_STMT_CLOSE, which has no
// answer).
func (s *Stmt) Close() error {
	if !s.c.Usable() {
		return nil
	}
	var id [4]byte
	binary.LittleEndian.PutUint32(id[:], s.id)
	if err := s.c.writeCommand(comStmtClose, id[:]); err != nil {
		s.c.broken = true
		return err
	}
	return nil
}

// Binary-protocol parameter types.
const (
	typeLongLong = 0x08
	typeString   = 0xfe
	typeNull     = 0x06
	flagUnsigned = 0x80
)

// Query executes the statement with args (each nil, int64, uint64, string
// or []byte) and returns its result set, whose rows are in the binary
// protocol.
func (s *Stmt) Query(ctx context.Context, args ...any) (*Result, error) {
	c := s.c
	if !c.Usable() {
		return nil, ErrBroken
	}
	if len(args) != s.params {
		return nil, fmt.Errorf("mysqlproto: %d arguments for %d parameters", len(args), s.params)
	}
	// COM_STMT_EXECUTE: id, no cursor, one iteration, then the NULL
	// bitmap, "types follow", the types and the values.
	p := binary.LittleEndian.AppendUint32(nil, s.id)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint32(p, 1)
	if len(args) > 0 {
		nulls := make([]byte, (len(args)+7)/8)
		var types, values []byte
		for i, a := range args {
			switch v := a.(type) {
			case nil:
				nulls[i/8] |= 1 << (i % 8)
				types = append(types, typeNull, 0)
			case int64:
				types = append(types, typeLongLong, 0)
				values = binary.LittleEndian.AppendUint64(values, uint64(v))
			case uint64:
				types = append(types, typeLongLong, flagUnsigned)
				values = binary.LittleEndian.AppendUint64(values, v)
			case string:
				types = append(types, typeString, 0)
				values = appendLenencString(values, []byte(v))
			case []byte:
				types = append(types, typeString, 0)
				values = appendLenencString(values, v)
			default:
				return nil, fmt.Errorf("mysqlproto: argument %d: unsupported type %T", i+1, a)
			}
		}
		p = append(p, nulls...)
		p = append(p, 1)
		p = append(p, types...)
		p = append(p, values...)
	}
	done := c.watch(ctx)
	var r *Result
	err := c.writeCommand(comStmtExecute, p)
	if err == nil {
		r, err = c.readResultHead(true)
	}
	return c.finish(ctx, done, r, err)
}

func appendLenencString(dst, s []byte) []byte {
	n := uint64(len(s))
	switch {
	case n < 0xfb:
		dst = append(dst, byte(n))
	case n <= 0xffff:
		dst = append(dst, 0xfc, byte(n), byte(n>>8))
	case n <= 0xffffff:
		dst = append(dst, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	default:
		dst = append(dst, 0xfe)
		dst = binary.LittleEndian.AppendUint64(dst, n)
	}
	return append(dst, s...)
}

// BinaryValues splits a binary-protocol row of columns cols into each
// value's bytes, appended to dst: nil for NULL; integers, FLOAT and DOUBLE
// as their little-endian bytes; dates and times as the bytes after their
// length (none for a zero value); everything else as the string's bytes.
// It is for reading a few values (keys); block decodes rows of a table copy
// straight into columns.
func BinaryValues(cols []Column, row []byte, dst [][]byte) ([][]byte, error) {
	nb := (len(cols) + 9) / 8
	if len(row) < 1+nb || row[0] != okHeader {
		return dst, errors.New("mysqlproto: not a binary-protocol row")
	}
	nulls, p := row[1:1+nb], row[1+nb:]
	for i, c := range cols {
		if bit := i + 2; nulls[bit/8]&(1<<(bit%8)) != 0 {
			dst = append(dst, nil)
			continue
		}
		n := 0
		switch c.Type {
		case typeTiny:
			n = 1
		case typeShort, typeYear:
			n = 2
		case typeInt24, typeLong, typeFloat:
			n = 4
		case typeLongLong, typeDouble:
			n = 8
		case typeNull:
		case typeDate, typeDateTime, typeTimestamp, typeTime, typeNewDate:
			if len(p) < 1 || len(p) < 1+int(p[0]) {
				return dst, errors.New("mysqlproto: binary row cut short")
			}
			dst, p = append(dst, p[1:1+p[0]]), p[1+p[0]:]
			continue
		default:
			v, rest, ok := lenencBytes(p)
			if !ok {
				return dst, errors.New("mysqlproto: binary row cut short")
			}
			dst, p = append(dst, v), rest
			continue
		}
		if len(p) < n {
			return dst, errors.New("mysqlproto: binary row cut short")
		}
		dst, p = append(dst, p[:n]), p[n:]
	}
	return dst, nil
}

// Column types BinaryValues tells apart.
const (
	typeTiny      = 0x01
	typeShort     = 0x02
	typeLong      = 0x03
	typeFloat     = 0x04
	typeDouble    = 0x05
	typeTimestamp = 0x07
	typeInt24     = 0x09
	typeDate      = 0x0a
	typeTime      = 0x0b
	typeDateTime  = 0x0c
	typeYear      = 0x0d
	typeNewDate   = 0x0e
)
