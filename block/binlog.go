package block

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/mysqldecimal"
	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// Decoding row images straight from binlog bytes into the column buffers:
// go-mysql's decoder allocates an interface value per column and formats
// DATE and TIME through fmt, which made it half of the daemon's CPU. The
// formats are MySQL's binary row format (sql/log_event.cc, the packed
// temporal and decimal formats); the differential tests check every type
// against go-mysql's decoding of the same events.

// rawConverter decodes one value at the start of p, appends it, and
// returns its length.
type rawConverter func(p []byte) (int, error)

// RawDecodable reports whether binlog2ch decodes binlog values of this type
// itself. The others (MySQL's binary JSON, pre-5.6 temporal types) go
// through go-mysql.
func RawDecodable(typ byte, meta uint16) bool {
	_, ok := layoutOf(&schema.Column{BinlogType: typ, BinlogMeta: meta})
	return ok
}

// realType is the type a STRING column really has (CHAR, BINARY, ENUM or
// SET), which the table map puts in its metadata.
func realType(typ byte, meta uint16) byte {
	if typ == mysql.MYSQL_TYPE_STRING && meta >= 256 {
		if b0 := byte(meta >> 8); b0&0x30 != 0x30 {
			return b0 | 0x30
		} else {
			return b0
		}
	}
	return typ
}

// stringMaxLen is a CHAR/BINARY column's maximum length in bytes.
func stringMaxLen(meta uint16) int {
	b0, b1 := byte(meta>>8), int(meta&0xff)
	if b0&0x30 != 0x30 {
		return b1 | int((b0&0x30)^0x30)<<4
	}
	return b1
}

// fracBytes is the bytes of a temporal value's fraction of fsp digits.
func fracBytes(fsp int) int { return (fsp + 1) / 2 }

var errShort = errMsg("binlog row image ends inside the value")

// rawLayout is how a column's values are laid out in a row image: a fixed
// size, or a little-endian length of prefix bytes before the bytes.
type rawLayout struct {
	fixed  int
	prefix int
}

// layoutOf is the layout of column c's values; ok is false for a type
// binlog2ch does not decode.
func layoutOf(c *schema.Column) (l rawLayout, ok bool) {
	meta := c.BinlogMeta
	switch realType(c.BinlogType, meta) {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		l.fixed = 1
	case mysql.MYSQL_TYPE_SHORT:
		l.fixed = 2
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_DATE:
		l.fixed = 3
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT:
		l.fixed = 4
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE:
		l.fixed = 8
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		l.fixed = mysqldecimal.Size(int(meta>>8), int(meta&0xff))
	case mysql.MYSQL_TYPE_BIT:
		l.fixed = (int(meta>>8)*8 + int(meta&0xff) + 7) / 8
	case mysql.MYSQL_TYPE_DATETIME2:
		l.fixed = 5 + fracBytes(int(meta))
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		l.fixed = 4 + fracBytes(int(meta))
	case mysql.MYSQL_TYPE_TIME2:
		l.fixed = 3 + fracBytes(int(meta))
	case mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET:
		l.fixed = int(meta & 0xff)
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		l.prefix = prefixLen(int(meta))
	case mysql.MYSQL_TYPE_STRING:
		l.prefix = prefixLen(stringMaxLen(meta))
	case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY:
		l.prefix = int(meta)
		if l.prefix < 1 || l.prefix > 4 {
			return l, false
		}
	default:
		return l, false
	}
	return l, l.fixed > 0 || l.prefix > 0
}

// size is the length of the value at the start of p.
func (l rawLayout) size(p []byte) (int, error) {
	if l.fixed > 0 {
		if len(p) < l.fixed {
			return 0, errShort
		}
		return l.fixed, nil
	}
	return lengthPrefixed(p, l.prefix)
}

// prefixLen is the length prefix of a string of at most maxLen bytes.
func prefixLen(maxLen int) int {
	if maxLen >= 256 {
		return 2
	}
	return 1
}

// lengthPrefixed is the size of a value with a little-endian length of
// prefix bytes in front.
func lengthPrefixed(p []byte, prefix int) (int, error) {
	if prefix < 1 || prefix > 4 || len(p) < prefix {
		return 0, errShort
	}
	l := 0
	for i := prefix - 1; i >= 0; i-- {
		l = l<<8 | int(p[i])
	}
	if len(p) < prefix+l {
		return 0, errShort
	}
	return prefix + l, nil
}

// leUint reads n little-endian bytes.
func leUint(p []byte, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(p[i])
	}
	return v
}

// beUint reads n big-endian bytes.
func beUint(p []byte, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(p[i])
	}
	return v
}

// rawConverter builds the binlog-bytes decoder of a column; nil when the
// column has no binlog type (a definition from information_schema only) or
// binlog2ch has no decoder for it.
func (b *Block) rawConverter(c *schema.Column, t schema.CHType, buf column.Buf, put intPut) rawConverter {
	if c.BinlogType == 0 && c.BinlogMeta == 0 || !RawDecodable(c.BinlogType, c.BinlogMeta) {
		return nil
	}
	layout, _ := layoutOf(c)
	size := layout.size
	meta := c.BinlogMeta
	switch realType(c.BinlogType, meta) {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		unsigned, bits := intShape(c)
		width := int(bits / 8)
		// The mapping picks a type of the column's signedness at least as
		// wide as it, so such integers need no range check: append directly.
		// Anything else (TINYINT(1) as a boolean) goes through put.
		switch {
		case t.Kind == schema.CHInt8 && !unsigned && width <= 1:
			return rawInt[int8](buf, width, unsigned)
		case t.Kind == schema.CHInt16 && !unsigned && width <= 2:
			return rawInt[int16](buf, width, unsigned)
		case t.Kind == schema.CHInt32 && !unsigned && width <= 4:
			return rawInt[int32](buf, width, unsigned)
		case t.Kind == schema.CHInt64 && !unsigned:
			return rawInt[int64](buf, width, unsigned)
		case t.Kind == schema.CHUInt8 && unsigned && width <= 1:
			return rawInt[uint8](buf, width, unsigned)
		case t.Kind == schema.CHUInt16 && unsigned && width <= 2:
			return rawInt[uint16](buf, width, unsigned)
		case t.Kind == schema.CHUInt32 && unsigned && width <= 4:
			return rawInt[uint32](buf, width, unsigned)
		case t.Kind == schema.CHUInt64 && unsigned:
			return rawInt[uint64](buf, width, unsigned)
		}
		return func(p []byte) (int, error) {
			if len(p) < width {
				return 0, errShort
			}
			s := int64(leUint(p, width)<<(64-bits)) >> (64 - bits) // sign-extended
			u, s := fromSigned(s, unsigned, bits)
			return width, put(u, s)
		}
	case mysql.MYSQL_TYPE_YEAR:
		return func(p []byte) (int, error) {
			if len(p) < 1 {
				return 0, errShort
			}
			y := int64(p[0])
			if y != 0 {
				y += 1900
			}
			return 1, put(uint64(y), y)
		}
	case mysql.MYSQL_TYPE_BIT, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET:
		big := c.BinlogType == mysql.MYSQL_TYPE_BIT
		return func(p []byte) (int, error) {
			n, err := size(p)
			if err != nil {
				return 0, err
			}
			var v uint64
			if big {
				v = beUint(p, n)
			} else {
				v = leUint(p, n)
			}
			return n, put(v, int64(v))
		}
	case mysql.MYSQL_TYPE_FLOAT:
		fb := buf.(*column.Num[float32])
		return func(p []byte) (int, error) {
			if len(p) < 4 {
				return 0, errShort
			}
			fb.Add(math.Float32frombits(binary.LittleEndian.Uint32(p)))
			return 4, nil
		}
	case mysql.MYSQL_TYPE_DOUBLE:
		fb := buf.(*column.Num[float64])
		return func(p []byte) (int, error) {
			if len(p) < 8 {
				return 0, errShort
			}
			fb.Add(math.Float64frombits(binary.LittleEndian.Uint64(p)))
			return 8, nil
		}
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return rawDecimal(buf, t, int(meta>>8), int(meta&0xff), size)
	case mysql.MYSQL_TYPE_DATE:
		tb := buf.(*column.Time)
		lo, hi := b.dateBounds(t)
		return func(p []byte) (int, error) {
			if len(p) < 3 {
				return 0, errShort
			}
			v := int(leUint(p, 3))
			return 3, b.putDate(tb, lo, hi, v>>9, v>>5&15, v&31)
		}
	case mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
		return b.rawDateTime(c, t, buf, size)
	case mysql.MYSQL_TYPE_TIME2:
		fsp := int(meta)
		return func(p []byte) (int, error) {
			n, err := size(p)
			if err != nil {
				return 0, err
			}
			us := time2Micros(p, fsp)
			if t.Kind == schema.CHInt64 {
				buf.(*column.Num[int64]).Add(us)
			} else {
				sb := buf.(*column.Str)
				sb.Arena = mysqltime.AppendTime(sb.Arena, us, fsp)
				sb.End()
			}
			return n, nil
		}
	}
	// Length-prefixed bytes: strings, blobs, geometry.
	sb := buf.(*column.Str)
	switch {
	case c.Kind == schema.KindGeometry:
		return func(p []byte) (int, error) {
			n, err := size(p)
			if err != nil {
				return 0, err
			}
			sb.Room(2 * (n - layout.prefix))
			sb.Arena = appendHex(sb.Arena, p[layout.prefix:n])
			sb.End()
			return n, nil
		}
	case fixedBinKind(c) != 0:
		kind := fixedBinKind(c)
		return func(p []byte) (int, error) {
			n, err := size(p)
			if err != nil {
				return 0, err
			}
			return n, addFixedBin(sb, kind, p[layout.prefix:n])
		}
	case c.Kind == schema.KindBinary && t.Kind == schema.CHFixedString:
		width := c.Length
		return func(p []byte) (int, error) {
			n, err := size(p)
			if err != nil {
				return 0, err
			}
			v := p[layout.prefix:n]
			if len(v) > width {
				return 0, errMsg(fmt.Sprintf("longer than BINARY(%d)", width))
			}
			sb.Room(width)
			sb.Arena = append(sb.Arena, v...)
			for l := len(v); l < width; l++ {
				sb.Arena = append(sb.Arena, 0) // the binlog drops BINARY's trailing zeros
			}
			sb.End()
			return n, nil
		}
	}
	if dec, decErr := textDecoder(c); dec != nil || decErr != nil {
		return func(p []byte) (int, error) {
			n, err := size(p)
			if err != nil {
				return 0, err
			}
			return n, addDecoded(sb, dec, decErr, p[layout.prefix:n])
		}
	}
	return func(p []byte) (int, error) {
		n, err := size(p)
		if err != nil {
			return 0, err
		}
		sb.AddBytes(p[layout.prefix:n])
		return n, nil
	}
}

// rawInt decodes a width-byte little-endian integer into a column of T at
// least as wide (signed columns into signed T, unsigned into unsigned T).
func rawInt[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](buf column.Buf, width int, unsigned bool) rawConverter {
	nb := buf.(*column.Num[T])
	shift := 64 - 8*width
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

// rawDateTime decodes DATETIME2 and TIMESTAMP2 values.
func (b *Block) rawDateTime(c *schema.Column, t schema.CHType, buf column.Buf, size func([]byte) (int, error)) rawConverter {
	fsp := int(c.BinlogMeta)
	isTimestamp := realType(c.BinlogType, c.BinlogMeta) == mysql.MYSQL_TYPE_TIMESTAMP2
	var dt *dateTimeBuf
	if t.Kind != schema.CHString {
		dt = b.dateTimeBufs[c]
	}
	return func(p []byte) (int, error) {
		n, err := size(p)
		if err != nil {
			return 0, err
		}
		var parts mysqltime.Parts
		var unix int64 // TIMESTAMP: seconds since the epoch
		if isTimestamp {
			unix = int64(beUint(p, 4))
			parts.US = fraction(p[4:], fsp)
		} else {
			v := int64(beUint(p, 5)) - 0x8000000000
			ymd, hms := v>>17, v&(1<<17-1)
			ym := ymd >> 5
			parts = mysqltime.Parts{Y: int(ym / 13), Mo: int(ym % 13), D: int(ymd & 31),
				H: int(hms >> 12), Mi: int(hms >> 6 & 63), S: int(hms & 63), US: fraction(p[5:], fsp)}
		}
		if dt == nil { // text: ClickHouse without DateTime64
			sb := buf.(*column.Str)
			if isTimestamp {
				if unix == 0 && parts.US == 0 {
					sb.Arena = append(sb.Arena, "0000-00-00 00:00:00"...)
					sb.Arena = mysqltime.AppendFracDigits(sb.Arena, 0, fsp)
					sb.End()
					return n, nil
				}
				parts = mysqltime.PartsFromUnix(unix, parts.US)
			}
			sb.Arena = mysqltime.AppendParts(sb.Arena, parts, fsp)
			sb.End()
			return n, nil
		}
		if isTimestamp {
			if unix == 0 && parts.US == 0 {
				return n, dt.put(0, FixupZeroDate) // MySQL's zero TIMESTAMP
			}
			return n, dt.put(unix*1e6+int64(parts.US), -1)
		}
		return n, dt.putParts(parts)
	}
}

// fraction reads the microseconds of a temporal value's fsp-digit fraction.
func fraction(p []byte, fsp int) int {
	switch fracBytes(fsp) {
	case 1:
		return int(p[0]) * 10000
	case 2:
		return int(beUint(p, 2)) * 100
	case 3:
		return int(beUint(p, 3))
	}
	return 0
}

// time2Micros decodes a TIME2 value into signed microseconds.
func time2Micros(p []byte, fsp int) int64 {
	var packed int64 // hms << 24 | microseconds, signed
	switch fracBytes(fsp) {
	case 0:
		packed = (int64(beUint(p, 3)) - 0x800000) << 24
	case 1:
		ip, f := int64(beUint(p, 3))-0x800000, int64(p[3])
		if ip < 0 && f != 0 {
			ip++
			f -= 0x100
		}
		packed = ip<<24 + f*10000
	case 2:
		ip, f := int64(beUint(p, 3))-0x800000, int64(beUint(p[3:], 2))
		if ip < 0 && f != 0 {
			ip++
			f -= 0x10000
		}
		packed = ip<<24 + f*100
	case 3:
		packed = int64(beUint(p, 6)) - 0x800000000000
	}
	neg := packed < 0
	if neg {
		packed = -packed
	}
	hms, us := packed>>24, packed&(1<<24-1)
	v := ((hms>>12&1023)*3600+(hms>>6&63)*60+hms&63)*1e6 + us
	if neg {
		v = -v
	}
	return v
}

// rawDecimal decodes binary DECIMAL(precision, scale) values into their
// scaled integers: a Decimal column of type t takes them as they are, a
// String column (a Decimal wider than the server has, an override) their
// text at MySQL's scale.
func rawDecimal(buf column.Buf, t schema.CHType, precision, scale int, size func([]byte) (int, error)) rawConverter {
	db, _ := buf.(*column.Dec)
	up := 0
	if db != nil {
		up = t.Scale - scale
	}
	dec, err := mysqldecimal.NewBinary(precision, scale, up)
	if err == nil && db != nil && precision-scale > t.Precision-t.Scale {
		err = fmt.Errorf("%d integer digits", precision-scale)
	}
	if err != nil {
		err := errMsg(fmt.Sprintf("the binlog's DECIMAL(%d,%d) does not fit %s: %v", precision, scale, t, err))
		return func([]byte) (int, error) { return 0, err }
	}
	narrow := db != nil && dec.Narrow()
	sb, _ := buf.(*column.Str)
	return func(p []byte) (int, error) {
		n, err := size(p)
		if err != nil {
			return 0, err
		}
		if narrow {
			v, err := dec.Scaled64(p)
			if err != nil {
				return 0, err
			}
			db.AddInt64(v)
			return n, nil
		}
		v, err := dec.Scaled(p)
		if err != nil {
			return 0, err
		}
		if db != nil {
			db.Add(v)
		} else {
			sb.Arena = mysqldecimal.AppendScaled(sb.Arena, v, scale)
			sb.End()
		}
		return n, nil
	}
}

// RawOK reports whether every column of the block's table can be decoded
// from binlog bytes.
func (b *Block) RawOK() bool {
	if b.layouts == nil {
		ok := true
		b.layouts = make([]rawLayout, len(b.target.Source.Columns))
		for i := range b.target.Source.Columns {
			var decodable bool
			b.layouts[i], decodable = layoutOf(&b.target.Source.Columns[i])
			ok = ok && decodable && (b.conv[i] == nil || b.raw[i] != nil)
		}
		b.rawOK = ok
	}
	return b.rawOK
}

// ImageSize is the length of the full row image at the start of data.
func (b *Block) ImageSize(data []byte) (int, error) {
	if !b.RawOK() {
		return 0, errMsg("table not decodable from binlog bytes")
	}
	return b.walkImage(data, nil)
}

// walkImage measures an image; with offsets non-nil it records each
// column's value offset (-1 for NULL).
func (b *Block) walkImage(data []byte, offsets []int) (int, error) {
	cols := b.target.Source.Columns
	nb := (len(cols) + 7) / 8
	if len(data) < nb {
		return 0, errShort
	}
	pos := nb
	for i := range cols {
		if data[i/8]&(1<<(i%8)) != 0 {
			if offsets != nil {
				offsets[i] = -1
			}
			continue
		}
		if offsets != nil {
			offsets[i] = pos
		}
		n, err := b.layouts[i].size(data[pos:])
		if err != nil {
			return 0, err
		}
		pos += n
	}
	return pos, nil
}

// SameKey reports whether two full row images have the same sorting key.
func (b *Block) SameKey(before, after []byte, key []int) (bool, error) {
	if !b.RawOK() {
		return false, errMsg("table not decodable from binlog bytes")
	}
	cols := b.target.Source.Columns
	if cap(b.offsets) < 2*len(cols) {
		b.offsets = make([]int, 2*len(cols))
	}
	ob, oa := b.offsets[:len(cols)], b.offsets[len(cols):2*len(cols)]
	if _, err := b.walkImage(before, ob); err != nil {
		return false, err
	}
	if _, err := b.walkImage(after, oa); err != nil {
		return false, err
	}
	for _, i := range key {
		if ob[i] < 0 || oa[i] < 0 {
			if ob[i] != oa[i] {
				return false, nil
			}
			continue
		}
		nb, _ := b.layouts[i].size(before[ob[i]:])
		na, _ := b.layouts[i].size(after[oa[i]:])
		if string(before[ob[i]:ob[i]+nb]) != string(after[oa[i]:oa[i]+na]) {
			return false, nil
		}
	}
	return true, nil
}

// AppendImage decodes the full row image at the start of data (MySQL's
// binary row format: a NULL bitmap, then each non-NULL value) and appends
// it with its version and operation. It returns the image's length. On
// error the block is unchanged.
func (b *Block) AppendImage(data []byte, version uint64, op schema.Op) (int, error) {
	src := b.target.Source
	if !b.RawOK() {
		return 0, fmt.Errorf("%s: not decodable from binlog bytes", src.FullName())
	}
	cols := src.Columns
	nb := (len(cols) + 7) / 8
	if len(data) < nb {
		return 0, fmt.Errorf("%s: %w", src.FullName(), errShort)
	}
	rows := b.Rows()
	b.pending = [numFixups]uint64{}
	pos := nb
	for i := range cols {
		c := &cols[i]
		var err error
		n := 0
		switch {
		case data[i/8]&(1<<(i%8)) != 0: // NULL
			if b.conv[i] == nil {
				continue
			}
			if tc := b.target.SourceToTarget[i]; b.target.Columns[tc].Type.Nullable {
				b.cols[tc].AppendNull()
				continue
			}
			err = errMsg("NULL in a column that is NOT NULL in the schema binlog2ch knows")
		case b.raw[i] == nil: // excluded
			n, err = b.layouts[i].size(data[pos:])
		default:
			n, err = b.raw[i](data[pos:])
		}
		if err != nil {
			for _, col := range b.cols {
				col.Truncate(rows)
			}
			return 0, &ConvertError{Table: src.FullName(), Column: c.Name, Type: c.Type, Value: rawValue(data[pos:]), Msg: err.Error()}
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
	return pos, nil
}

// rawValue shows the bytes of an undecodable value in an error.
func rawValue(p []byte) []byte {
	if len(p) > 16 {
		p = p[:16]
	}
	return append([]byte(nil), p...)
}
