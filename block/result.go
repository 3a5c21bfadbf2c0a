package block

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/binlog2ch/binlog2ch/column"
	"github.com/binlog2ch/binlog2ch/mysqldecimal"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/charset"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Decoding table copies' rows straight from MySQL's binary result-set
// protocol (a prepared statement's rows, mysqlproto) into the column
// buffers, as binlog.go does for row images: one converter per column,
// built once per result format, no interface and no allocation per value.
// The binary protocol is the cheaper of MySQL's two on both sides: the
// server formats no numbers or dates, and the copy parses none (text rows
// cost MariaDB ~1.3 CPU-s more per million binlog_field_test rows and the
// decoder more too: docs/benchmarks.md). The formats are MySQL's
// (Protocol::BinaryResultsetRow); the every-type tests check each type
// against MySQL's own values and the binlog path.

// SelectExpr is the expression a table copy selects column c (quoted: its
// quoted name) with, in the form AppendResultRows decodes: BIT, ENUM and
// SET as numbers (col+0: BIT's bits, ENUM's index and SET's bitmask, as
// the binlog carries them, so an ENUM's invalid empty value, index 0,
// stays distinct from an empty label), and text in a character set other
// than UTF-8 as its bytes (CAST(col AS BINARY)), converted as the
// binlog's are.
func SelectExpr(c *schema.Column, quoted string) string {
	switch c.Kind {
	case schema.KindBit, schema.KindEnum, schema.KindSet:
		return quoted + "+0"
	case schema.KindChar:
		if !charset.Passthrough(c.Charset) {
			return "CAST(" + quoted + " AS BINARY)"
		}
	case schema.KindUUID, schema.KindInet4, schema.KindInet6:
		// Their bytes, as the binlog carries them: one decoder for both.
		return "CAST(" + quoted + " AS BINARY)"
	}
	return quoted
}

// resultConverter decodes one binary-protocol value at the start of p,
// appends it, and returns its length.
type resultConverter func(p []byte) (int, error)

// AppendResultRows decodes rows of a result set in MySQL's binary protocol
// (framed as mysqlproto.Result.ReadRows frames them) whose columns, cols,
// are the block's source columns in order, as SelectExpr selects them
// (an excluded column selected as NULL). Each row is appended with the
// version and operation. It returns the rows appended; on error the rows
// before the failing one stay in the block.
func (b *Block) AppendResultRows(cols []mysqlproto.Column, rows []byte, version uint64, op schema.Op) (int, error) {
	if err := b.resultConverters(cols); err != nil {
		return 0, err
	}
	n := 0
	for len(rows) > 0 {
		row, rest, ok := mysqlproto.NextRow(rows)
		if !ok {
			return n, fmt.Errorf("%s: result rows cut short", b.target.Source.FullName())
		}
		if err := b.appendResultRow(row, version, op); err != nil {
			return n, err
		}
		rows = rest
		n++
	}
	return n, nil
}

// resultConverters builds the converters for a result format, unless the
// block has them for it already (the table copy hands every batch of a
// table the same cols).
func (b *Block) resultConverters(cols []mysqlproto.Column) error {
	if len(cols) > 0 && len(cols) == len(b.resCols) && &cols[0] == &b.resCols[0] {
		return nil
	}
	src := b.target.Source
	if len(cols) != len(src.Columns) {
		return fmt.Errorf("%s: the result has %d columns, the table %d", src.FullName(), len(cols), len(src.Columns))
	}
	conv := make([]resultConverter, len(cols))
	for i := range src.Columns {
		if b.conv[i] == nil {
			continue // excluded: selected as NULL
		}
		c := &src.Columns[i]
		tc := b.target.SourceToTarget[i]
		fn, err := b.resultConverter(c, cols[i], b.target.Columns[tc].Type, b.cols[tc], b.puts[i])
		if err != nil {
			return &ConvertError{Table: src.FullName(), Column: c.Name, Type: c.Type, Value: &BadValue{}, Msg: err.Error()}
		}
		conv[i] = fn
	}
	b.resCols, b.res = cols, conv
	return nil
}

// appendResultRow decodes one binary-protocol row: a 0x00 header, a NULL
// bitmap offset by two bits, then each non-NULL value.
func (b *Block) appendResultRow(row []byte, version uint64, op schema.Op) error {
	src := b.target.Source
	cols := src.Columns
	nb := (len(cols) + 9) / 8
	if len(row) < 1+nb || row[0] != 0 {
		return fmt.Errorf("%s: not a binary-protocol row", src.FullName())
	}
	nulls := row[1 : 1+nb]
	rows := b.Rows()
	b.pending = [numFixups]uint64{}
	pos := 1 + nb
	res := b.res[:len(cols)]
	for i := range cols {
		var err error
		n := 0
		bit := i + 2
		switch {
		case nulls[bit>>3]&(1<<(bit&7)) != 0: // NULL
			if b.conv[i] == nil {
				continue
			}
			if tc := b.target.SourceToTarget[i]; b.target.Columns[tc].Type.Nullable {
				b.cols[tc].AppendNull()
				continue
			}
			err = errMsg("NULL in a column that is NOT NULL in the schema binlog2ch knows")
		case res[i] == nil:
			err = errMsg("a value for a column selected as NULL")
		default:
			n, err = res[i](row[pos:])
		}
		if err != nil {
			for _, col := range b.cols {
				col.Truncate(rows)
			}
			c := &cols[i]
			return &ConvertError{Table: src.FullName(), Column: c.Name, Type: c.Type, Value: resultValue(b.resCols[i], row[pos:]), Msg: err.Error()}
		}
		pos += n
	}
	for _, m := range b.meta {
		m(version, op)
	}
	for k, c := range b.pending {
		b.Fixups[k] += c
	}
	b.OpRows[op&3]++
	return nil
}

// resultConverter builds the binary-protocol decoder of column c, whose
// values the server describes as rc, into buffer buf of ClickHouse type t.
func (b *Block) resultConverter(c *schema.Column, rc mysqlproto.Column, t schema.CHType, buf column.Buf, put intPut) (resultConverter, error) {
	unsignedWire := rc.Flags&mysqlproto.UnsignedFlag != 0
	wrong := func() (resultConverter, error) {
		return nil, fmt.Errorf("the server sent MySQL type 0x%02x (flags 0x%x) for it, which binlog2ch does not read as %s", rc.Type, rc.Flags, c.Type)
	}
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt,
		schema.KindYear, schema.KindBit, schema.KindEnum, schema.KindSet:
		if put == nil {
			return wrong()
		}
		if width := wireIntWidth(rc.Type); width > 0 {
			if fn := directInt(c, t, buf, width, unsignedWire); fn != nil {
				return fn, nil
			}
			if fn := directEnum(c, t, buf, width, unsignedWire); fn != nil {
				return fn, nil
			}
			shift := uint(64 - 8*width)
			return func(p []byte) (int, error) {
				if len(p) < width {
					return 0, errShort
				}
				v := leUint(p, width)
				if unsignedWire {
					return width, put(v, int64(v))
				}
				s := int64(v<<shift) >> shift
				return width, put(uint64(s), s)
			}, nil
		}
		switch rc.Type {
		case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
			// An expression's integer as text (another server's col+0).
			return func(p []byte) (int, error) {
				start, end, err := lenenc(p)
				if err != nil {
					return 0, err
				}
				text := bytesString(p[start:end])
				if s, err := strconv.ParseInt(text, 10, 64); err == nil {
					return end, put(uint64(s), s)
				}
				u, err := strconv.ParseUint(text, 10, 64)
				if err != nil {
					return 0, errMsg("not an integer")
				}
				return end, put(u, int64(u))
			}, nil
		case mysql.MYSQL_TYPE_BIT:
			return func(p []byte) (int, error) {
				start, end, err := lenenc(p)
				if err != nil {
					return 0, err
				}
				if end-start > 8 {
					return 0, errMsg("BIT value longer than 8 bytes")
				}
				v := beUint(p[start:end], end-start)
				return end, put(v, int64(v))
			}, nil
		}
		return wrong()
	case schema.KindFloat:
		if rc.Type != mysql.MYSQL_TYPE_FLOAT {
			return wrong()
		}
		fb := buf.(*column.Num[float32])
		return func(p []byte) (int, error) {
			if len(p) < 4 {
				return 0, errShort
			}
			fb.Add(math.Float32frombits(binary.LittleEndian.Uint32(p)))
			return 4, nil
		}, nil
	case schema.KindDouble:
		if rc.Type != mysql.MYSQL_TYPE_DOUBLE {
			return wrong()
		}
		fb := buf.(*column.Num[float64])
		return func(p []byte) (int, error) {
			if len(p) < 8 {
				return 0, errShort
			}
			fb.Add(math.Float64frombits(binary.LittleEndian.Uint64(p)))
			return 8, nil
		}, nil
	case schema.KindDecimal:
		if rc.Type != mysql.MYSQL_TYPE_NEWDECIMAL && rc.Type != mysql.MYSQL_TYPE_DECIMAL {
			return wrong()
		}
		add := decimalAdd(buf)
		intDigits, scale := c.Precision-c.Scale, c.Scale
		bad := errMsg(fmt.Sprintf("not a DECIMAL(%d,%d)", c.Precision, c.Scale))
		return func(p []byte) (int, error) {
			start, end, err := lenenc(p)
			if err != nil {
				return 0, err
			}
			v := p[start:end]
			if !mysqldecimal.Valid(bytesString(v), intDigits, scale) {
				return 0, bad
			}
			return end, add(v)
		}, nil
	case schema.KindDate:
		if rc.Type != mysql.MYSQL_TYPE_DATE && rc.Type != mysql.MYSQL_TYPE_NEWDATE {
			return wrong()
		}
		tb := buf.(*column.Time)
		lo, hi := b.dateBounds(t)
		return func(p []byte) (int, error) {
			d, n, err := wireTemporal(p)
			if err != nil {
				return 0, err
			}
			return n, b.putDate(tb, lo, hi, d.Y, d.Mo, d.D)
		}, nil
	case schema.KindDateTime, schema.KindTimestamp:
		if rc.Type != mysql.MYSQL_TYPE_DATETIME && rc.Type != mysql.MYSQL_TYPE_TIMESTAMP {
			return wrong()
		}
		fsp := c.Fsp
		if t.Kind == schema.CHString { // ClickHouse without DateTime64: MySQL's text
			sb := buf.(*column.Str)
			return func(p []byte) (int, error) {
				parts, n, err := wireTemporal(p)
				if err != nil {
					return 0, err
				}
				sb.Arena = mysqltime.AppendParts(sb.Arena, parts, fsp)
				sb.End()
				return n, nil
			}, nil
		}
		// TIMESTAMPs arrive in the session's zone, UTC, and dt takes
		// them as UTC; DATETIMEs are wall clock in the configured zone.
		dt := b.dateTimeBufs[c]
		if nb, ok := dt.buf.(*column.Num[int64]); ok && dt.loc == nil {
			// DateTime in UTC, the common case: a valid value in range is
			// appended here, anything else goes through putParts.
			return func(p []byte) (int, error) {
				parts, n, err := wireTemporal(p)
				if err != nil {
					return 0, err
				}
				if parts.Mo < 1 || parts.Mo > 12 || parts.D < 1 || parts.D > 28 && !mysqltime.ValidDate(parts.Y, parts.Mo, parts.D) ||
					parts.H > 23 || parts.Mi > 59 || parts.S > 59 {
					return n, dt.putParts(parts)
				}
				us := parts.Micros(nil)
				if us < dt.lo || us > dt.hi {
					return n, dt.put(us, -1)
				}
				nb.Add(us / 1e6)
				return n, nil
			}, nil
		}
		return func(p []byte) (int, error) {
			parts, n, err := wireTemporal(p)
			if err != nil {
				return 0, err
			}
			return n, dt.putParts(parts)
		}, nil
	case schema.KindTime:
		if rc.Type != mysql.MYSQL_TYPE_TIME {
			return wrong()
		}
		fsp := c.Fsp
		if t.Kind == schema.CHInt64 {
			nb := buf.(*column.Num[int64])
			return func(p []byte) (int, error) {
				us, n, err := wireTime(p)
				if err != nil {
					return 0, err
				}
				nb.Add(us)
				return n, nil
			}, nil
		}
		sb := buf.(*column.Str)
		return func(p []byte) (int, error) {
			us, n, err := wireTime(p)
			if err != nil {
				return 0, err
			}
			sb.Arena = mysqltime.AppendTime(sb.Arena, us, fsp)
			sb.End()
			return n, nil
		}, nil
	case schema.KindChar, schema.KindBinary, schema.KindBlob, schema.KindJSON, schema.KindGeometry,
		schema.KindUUID, schema.KindInet4, schema.KindInet6:
		switch rc.Type {
		case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING,
			mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB,
			mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_GEOMETRY:
		default:
			return wrong()
		}
		return b.resultBytes(c, t, buf)
	}
	return wrong()
}

// resultBytes decodes length-prefixed values: text, bytes, JSON, geometry.
func (b *Block) resultBytes(c *schema.Column, t schema.CHType, buf column.Buf) (resultConverter, error) {
	sb := buf.(*column.Str)
	switch {
	case c.Kind == schema.KindGeometry:
		return func(p []byte) (int, error) {
			start, end, err := lenenc(p)
			if err != nil {
				return 0, err
			}
			sb.Room(2 * (end - start))
			sb.Arena = appendHex(sb.Arena, p[start:end])
			sb.End()
			return end, nil
		}, nil
	case fixedBinKind(c) != 0:
		kind := fixedBinKind(c)
		return func(p []byte) (int, error) {
			start, end, err := lenenc(p)
			if err != nil {
				return 0, err
			}
			return end, addFixedBin(sb, kind, p[start:end])
		}, nil
	case c.Kind == schema.KindBinary && t.Kind == schema.CHFixedString:
		width := c.Length
		tooLong := errMsg(fmt.Sprintf("longer than BINARY(%d)", width))
		return func(p []byte) (int, error) {
			start, end, err := lenenc(p)
			if err != nil {
				return 0, err
			}
			v := p[start:end]
			if len(v) > width {
				return 0, tooLong
			}
			sb.Room(width)
			sb.Arena = append(sb.Arena, v...)
			for l := len(v); l < width; l++ {
				sb.Arena = append(sb.Arena, 0)
			}
			sb.End()
			return end, nil
		}, nil
	}
	if dec, decErr := textDecoder(c); dec != nil || decErr != nil {
		return func(p []byte) (int, error) {
			start, end, err := lenenc(p)
			if err != nil {
				return 0, err
			}
			return end, addDecoded(sb, dec, decErr, p[start:end])
		}, nil
	}
	return func(p []byte) (int, error) {
		start, end, err := lenenc(p)
		if err != nil {
			return 0, err
		}
		sb.AddBytes(p[start:end])
		return end, nil
	}, nil
}

// directInt is the converter of an integer column (YEAR and BIT+0
// included) whose ClickHouse type holds every value of the column, so
// values are appended without a range check (as rawInt does for row
// images); nil for any other.
func directInt(c *schema.Column, t schema.CHType, buf column.Buf, width int, unsignedWire bool) resultConverter {
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt,
		schema.KindYear, schema.KindBit:
	default:
		return nil
	}
	unsigned, bits := intShape(c)
	if unsigned != unsignedWire {
		return nil
	}
	colWidth := int(bits / 8)
	switch {
	case t.Kind == schema.CHInt8 && !unsigned && colWidth <= 1:
		return wireInt[int8](buf, width, unsigned)
	case t.Kind == schema.CHInt16 && !unsigned && colWidth <= 2:
		return wireInt[int16](buf, width, unsigned)
	case t.Kind == schema.CHInt32 && !unsigned && colWidth <= 4:
		return wireInt[int32](buf, width, unsigned)
	case t.Kind == schema.CHInt64 && !unsigned:
		return wireInt[int64](buf, width, unsigned)
	case t.Kind == schema.CHUInt8 && unsigned && colWidth <= 1:
		return wireInt[uint8](buf, width, unsigned)
	case t.Kind == schema.CHUInt16 && unsigned && colWidth <= 2:
		return wireInt[uint16](buf, width, unsigned)
	case t.Kind == schema.CHUInt32 && unsigned && colWidth <= 4:
		return wireInt[uint32](buf, width, unsigned)
	case t.Kind == schema.CHUInt64 && unsigned:
		return wireInt[uint64](buf, width, unsigned)
	}
	return nil
}

// directEnum is the converter of an ENUM read as its index (col+0) into
// an Enum8 or Enum16 column: the index checked and mapped as enumConverter
// does, without its layers of calls.
func directEnum(c *schema.Column, t schema.CHType, buf column.Buf, width int, unsignedWire bool) resultConverter {
	if c.Kind != schema.KindEnum || width > 8 {
		return nil
	}
	index := enumIndex(c.Labels)
	read := func(p []byte) int64 {
		v := leUint(p, width)
		if unsignedWire {
			return int64(v)
		}
		shift := uint(64 - 8*width)
		return int64(v<<shift) >> shift
	}
	switch t.Kind {
	case schema.CHEnum8:
		nb := buf.(*column.Num[int8])
		return func(p []byte) (int, error) {
			if len(p) < width {
				return 0, errShort
			}
			i, err := index(read(p))
			if err != nil {
				return 0, err
			}
			nb.Add(int8(i))
			return width, nil
		}
	case schema.CHEnum16:
		nb := buf.(*column.Num[int16])
		return func(p []byte) (int, error) {
			if len(p) < width {
				return 0, errShort
			}
			i, err := index(read(p))
			if err != nil {
				return 0, err
			}
			nb.Add(int16(i))
			return width, nil
		}
	}
	return nil
}

// wireInt decodes a width-byte little-endian integer (the wire's width,
// which may exceed the column's: MEDIUMINT comes in 4 bytes) holding a
// value of the column, into a column of T that holds every such value.
func wireInt[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](buf column.Buf, width int, unsigned bool) resultConverter {
	nb := buf.(*column.Num[T])
	shift := 64 - 8*width
	switch {
	case width == 8:
		return func(p []byte) (int, error) {
			if len(p) < 8 {
				return 0, errShort
			}
			nb.Add(T(binary.LittleEndian.Uint64(p)))
			return 8, nil
		}
	case width == 4 && unsigned:
		return func(p []byte) (int, error) {
			if len(p) < 4 {
				return 0, errShort
			}
			nb.Add(T(binary.LittleEndian.Uint32(p)))
			return 4, nil
		}
	case width == 4:
		return func(p []byte) (int, error) {
			if len(p) < 4 {
				return 0, errShort
			}
			nb.Add(T(int32(binary.LittleEndian.Uint32(p))))
			return 4, nil
		}
	}
	return func(p []byte) (int, error) {
		if len(p) < width {
			return 0, errShort
		}
		v := leUint(p, width)
		if unsigned {
			nb.Add(T(v))
		} else {
			nb.Add(T(int64(v<<shift) >> shift))
		}
		return width, nil
	}
}

// resultValue renders the undecodable value at the start of p for an
// error message: dates and times as MySQL prints them, numbers as
// numbers, anything else as its bytes (cut short).
func resultValue(rc mysqlproto.Column, p []byte) any {
	switch rc.Type {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		if t, _, err := wireTemporal(p); err == nil {
			return string(mysqltime.AppendParts(nil, t, 0)[:10])
		}
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP:
		if t, _, err := wireTemporal(p); err == nil {
			return string(mysqltime.AppendParts(nil, t, 6))
		}
	case mysql.MYSQL_TYPE_TIME:
		if us, _, err := wireTime(p); err == nil {
			return string(mysqltime.AppendTime(nil, us, 6))
		}
	case mysql.MYSQL_TYPE_FLOAT:
		if len(p) >= 4 {
			return math.Float32frombits(binary.LittleEndian.Uint32(p))
		}
	case mysql.MYSQL_TYPE_DOUBLE:
		if len(p) >= 8 {
			return math.Float64frombits(binary.LittleEndian.Uint64(p))
		}
	}
	if w := wireIntWidth(rc.Type); w > 0 && len(p) >= w {
		v := leUint(p, w)
		if rc.Flags&mysqlproto.UnsignedFlag != 0 {
			return v
		}
		shift := 64 - 8*w
		return int64(v<<shift) >> shift
	}
	if start, end, err := lenenc(p); err == nil {
		v := p[start:end]
		if len(v) > 100 {
			v = v[:100]
		}
		return append([]byte(nil), v...)
	}
	return rawValue(p)
}
