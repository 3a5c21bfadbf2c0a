package schema

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"
)

// Fixup is a kind of value changed by the invalid_dates policy.
type Fixup int

// Fixup kinds.
const (
	FixupZeroDate       Fixup = iota // '0000-00-00'
	FixupInvalidDate                 // '2024-00-10', '2024-02-30'
	FixupDateOutOfRange              // valid in MySQL, outside the ClickHouse type
	numFixups
)

// NumFixups is the number of fix-up kinds (the size of Block.Fixups).
const NumFixups = int(numFixups)

var fixupNames = [numFixups]string{"zero_date", "invalid_date", "date_out_of_range"}

// String is the fix-up's metric label.
func (f Fixup) String() string { return fixupNames[f] }

// ConvertError is a value that cannot be written without loss; it names the
// table, the column and the value.
type ConvertError struct {
	Table  string // db.table in MySQL
	Column string
	Type   string // MySQL column type
	Value  any
	Msg    string
}

func (e *ConvertError) Error() string {
	v := fmt.Sprintf("%v", e.Value)
	if b, ok := e.Value.([]byte); ok {
		v = fmt.Sprintf("%q", b)
	} else if s, ok := e.Value.(string); ok {
		v = strconv.Quote(s)
	}
	if len(v) > 100 {
		v = v[:100] + "..."
	}
	return fmt.Sprintf("%s.%s (%s): %s: value %s (%T)", e.Table, e.Column, e.Type, e.Msg, v, e.Value)
}

// errMsg is a conversion failure before the column is known.
type errMsg string

// Block accumulates the converted rows of one table in columnar buffers,
// ready to be handed to a clickhouse-go batch. Converters are chosen once per
// table schema, so the per-value work is one type switch and an append.
// A Block is used by one goroutine.
type Block struct {
	target *Target
	cols   []colBuf
	conv   []converter    // per MySQL column; nil for excluded ones
	raw    []rawConverter // per MySQL column: from binlog bytes; nil when excluded or not decodable
	// dateTimeBufs are the DATETIME/TIMESTAMP columns' buffers, shared by
	// both decoders.
	dateTimeBufs map[*Column]*dateTimeBuf
	offsets      []int       // scratch for SameKey
	layouts      []rawLayout // per MySQL column, set by RawOK
	rawOK        bool
	meta         []func(version uint64, op Op)
	// Fixups counts values changed by the invalid_dates policy, by kind,
	// in rows that were appended.
	Fixups  [numFixups]uint64
	pending [numFixups]uint64 // fix-ups of the row being appended
	// OpRows counts the rows appended, by Op (index 1-3).
	OpRows [4]uint64
	// native are the columns' Native-format encoders, set by NativeOK.
	native   []nativeFn
	nativeOK bool
}

// converter appends one MySQL value to its column.
type converter func(v any) error

// NewBlock returns an empty block for the target table.
func NewBlock(t *Target) *Block {
	b := &Block{target: t, cols: make([]colBuf, len(t.Columns)), conv: make([]converter, len(t.Source.Columns)),
		raw: make([]rawConverter, len(t.Source.Columns)), dateTimeBufs: map[*Column]*dateTimeBuf{}}
	for i, tc := range t.Columns {
		switch tc.Meta {
		case MetaVersion:
			buf := &numBuf[uint64]{}
			b.cols[i] = buf
			b.meta = append(b.meta, func(v uint64, _ Op) { buf.add(v) })
		case MetaIsDeleted:
			buf := &numBuf[uint8]{}
			b.cols[i] = buf
			b.meta = append(b.meta, func(_ uint64, op Op) {
				if op == OpDelete {
					buf.add(1)
				} else {
					buf.add(0)
				}
			})
		case MetaOp:
			buf := &numBuf[int8]{}
			b.cols[i] = buf
			b.meta = append(b.meta, func(_ uint64, op Op) { buf.add(int8(op)) })
		default:
			c := &t.Source.Columns[tc.Source]
			buf, conv, put := b.newConverter(c, tc.Type)
			b.cols[i] = buf
			b.conv[tc.Source] = conv
			b.raw[tc.Source] = b.rawConverter(c, tc.Type, buf, put)
		}
	}
	return b
}

// Target is the table the block is for.
func (b *Block) Target() *Target { return b.target }

// Rows is the number of rows in the block.
func (b *Block) Rows() int {
	if len(b.cols) == 0 {
		return 0
	}
	return b.cols[0].len()
}

// Size is roughly the bytes the block holds.
func (b *Block) Size() int {
	n := 0
	for _, c := range b.cols {
		n += c.size()
	}
	return n
}

// Append converts one row image (values in MySQL column order, as go-mysql
// decodes them) and adds it with its version and operation. On error the
// block is unchanged.
func (b *Block) Append(row []any, version uint64, op Op) error {
	src := b.target.Source
	if len(row) != len(src.Columns) {
		return fmt.Errorf("%s: row has %d values but the table has %d columns: the binlog event does not match the known schema", src.FullName(), len(row), len(src.Columns))
	}
	n := b.Rows()
	b.pending = [numFixups]uint64{}
	for i, v := range row {
		conv := b.conv[i]
		if conv == nil {
			continue
		}
		var err error
		if v == nil {
			c := &src.Columns[i]
			if tc := b.target.SourceToTarget[i]; b.target.Columns[tc].Type.Nullable {
				b.cols[tc].appendNull()
				continue
			}
			err = &ConvertError{Table: src.FullName(), Column: c.Name, Type: c.Type, Value: v, Msg: "NULL in a column that is NOT NULL in the schema binlog2ch knows"}
		} else {
			err = conv(v)
		}
		if err != nil {
			for _, c := range b.cols {
				c.truncate(n)
			}
			if ce, ok := err.(*ConvertError); ok {
				return ce
			}
			c := &src.Columns[i]
			return &ConvertError{Table: src.FullName(), Column: c.Name, Type: c.Type, Value: v, Msg: err.Error()}
		}
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

func (e errMsg) Error() string { return string(e) }

// AppendTo hands the block's columns to a batch prepared with the target's
// InsertSQL. The batch must be sent before the block is appended to again.
func (b *Block) AppendTo(batch driver.Batch) error {
	for i, c := range b.cols {
		if err := c.appendTo(batch.Column(i)); err != nil {
			return fmt.Errorf("%s: column %s: %w", b.target.FullName(), b.target.Columns[i].Name, err)
		}
	}
	return nil
}

// Reset empties the block, keeping its buffers for reuse.
func (b *Block) Reset() {
	for _, c := range b.cols {
		c.reset()
	}
	b.OpRows = [4]uint64{}
}

// newConverter returns the column buffer and converter for a MySQL column
// written as ClickHouse type t, and for integer-like columns (integers,
// YEAR, BIT, ENUM, SET) the typed append both converters share.
func (b *Block) newConverter(c *Column, t CHType) (colBuf, converter, intPut) {
	nl := nulls{nullable: t.Nullable}
	var buf colBuf
	var put intPut
	switch c.Kind {
	case KindTinyInt, KindSmallInt, KindMediumInt, KindInt, KindBigInt, KindYear, KindBit:
		buf, put = intConverter(c, t, nl)
		unsigned, bits := intShape(c)
		return buf, func(v any) error {
			u, s, ok := intValue(v, unsigned, bits)
			if !ok {
				return errMsg("want an integer")
			}
			return put(u, s)
		}, put
	case KindEnum:
		buf, put = enumConverter(c, t, nl)
		return buf, func(v any) error {
			if s, ok := v.(string); ok { // already a label (a decoder that resolves them)
				if sb, ok := buf.(*strBuf); ok {
					sb.addString(s)
					return nil
				}
			}
			u, s, ok := intValue(v, false, 64)
			if !ok {
				return errMsg("want an ENUM index")
			}
			return put(u, s)
		}, put
	case KindSet:
		buf, put = setConverter(c, t, nl)
		return buf, func(v any) error {
			u, s, ok := intValue(v, true, 64)
			if !ok {
				return errMsg("want a SET bitmask")
			}
			return put(u, s)
		}, put
	}
	buf, conv := b.valueConverter(c, t, nl)
	return buf, conv, nil
}

// valueConverter handles the columns that are not integer-like.
func (b *Block) valueConverter(c *Column, t CHType, nl nulls) (colBuf, converter) {
	switch c.Kind {
	case KindFloat:
		buf := &numBuf[float32]{nulls: nl}
		return buf, func(v any) error {
			f, ok := v.(float32)
			if !ok {
				return errMsg("want a float32")
			}
			buf.add(f)
			return nil
		}
	case KindDouble:
		buf := &numBuf[float64]{nulls: nl}
		return buf, func(v any) error {
			switch f := v.(type) {
			case float64:
				buf.add(f)
			case float32:
				buf.add(float64(f))
			default:
				return errMsg("want a float64")
			}
			return nil
		}
	case KindDecimal:
		buf := &strBuf{nulls: nl}
		intDigits := c.Precision - c.Scale
		return buf, func(v any) error {
			switch d := v.(type) {
			case string:
				if !validDecimal(d, intDigits, c.Scale) {
					return errMsg(fmt.Sprintf("not a DECIMAL(%d,%d)", c.Precision, c.Scale))
				}
				buf.addString(d)
			case decimal.Decimal:
				// go-mysql's UseDecimal; not the hot path, so String may allocate.
				if !validDecimal(d.String(), intDigits, c.Scale) {
					return errMsg(fmt.Sprintf("not a DECIMAL(%d,%d)", c.Precision, c.Scale))
				}
				buf.arena = append(buf.arena, d.StringFixed(int32(c.Scale))...)
				buf.end()
			default:
				return errMsg("want a decimal string")
			}
			return nil
		}
	case KindDate:
		return b.dateConverter(c, t, nl)
	case KindDateTime, KindTimestamp:
		if t.Kind == CHString {
			return dateTimeTextConverter(c, nl)
		}
		return b.dateTimeConverter(c, t, nl)
	case KindTime:
		if t.Kind == CHInt64 {
			buf := &numBuf[int64]{nulls: nl}
			return buf, func(v any) error {
				s, ok := v.(string)
				if !ok {
					return errMsg("want a TIME string")
				}
				us, ok := parseTimeMicros(s)
				if !ok {
					return errMsg("not a TIME value")
				}
				buf.add(us)
				return nil
			}
		}
		// MySQL prints TIME(fsp) with exactly fsp fraction digits; go-mysql
		// drops a zero fraction.
		buf := &strBuf{nulls: nl}
		fsp := c.Fsp
		return buf, func(v any) error {
			s, ok := v.(string)
			if !ok {
				return errMsg("want a TIME string")
			}
			if _, ok := parseTimeMicros(s); !ok {
				return errMsg("not a TIME value")
			}
			buf.arena = appendFraction(buf.arena, s, fsp)
			buf.end()
			return nil
		}
	case KindChar, KindBlob, KindJSON:
		return textConverter(nl)
	case KindBinary:
		if t.Kind == CHString {
			return textConverter(nl)
		}
		buf := &strBuf{nulls: nl}
		n := c.Length
		return buf, func(v any) error {
			var l int
			switch s := v.(type) {
			case string:
				buf.arena, l = append(buf.arena, s...), len(s)
			case []byte:
				buf.arena, l = append(buf.arena, s...), len(s)
			default:
				return errMsg("want a string")
			}
			if l > n {
				buf.arena = buf.arena[:len(buf.arena)-l]
				return errMsg(fmt.Sprintf("longer than BINARY(%d)", n))
			}
			// The binlog drops BINARY's trailing zero bytes; MySQL holds them.
			for ; l < n; l++ {
				buf.arena = append(buf.arena, 0)
			}
			buf.end()
			return nil
		}
	case KindGeometry:
		buf := &strBuf{nulls: nl}
		return buf, func(v any) error {
			switch g := v.(type) {
			case []byte:
				buf.arena = appendHex(buf.arena, g)
			case string:
				buf.arena = appendHex(buf.arena, []byte(g))
			default:
				return errMsg("want geometry bytes")
			}
			buf.end()
			return nil
		}
	}
	// Map refuses what it cannot convert, so this is a programming error.
	panic(fmt.Sprintf("schema: no converter for MySQL %s to ClickHouse %s", c.Type, t))
}

func textConverter(nl nulls) (colBuf, converter) {
	buf := &strBuf{nulls: nl}
	return buf, func(v any) error {
		switch s := v.(type) {
		case string:
			buf.addString(s)
		case []byte:
			buf.addBytes(s)
		case *replication.JsonDiff:
			return errMsg("a partial JSON update (binlog_row_value_options=PARTIAL_JSON) carries no full value; set binlog_row_value_options='' on the source server")
		default:
			return errMsg("want a string")
		}
		return nil
	}
}

const upperHex = "0123456789ABCDEF"

// appendHex appends p in upper-case hex, as MySQL's HEX() prints it.
func appendHex(dst, p []byte) []byte {
	for _, c := range p {
		dst = append(dst, upperHex[c>>4], upperHex[c&15])
	}
	return dst
}

// validDecimal reports whether s is a plain decimal number with at most
// intDigits significant digits before the point and at most scale after.
func validDecimal(s string, intDigits, scale int) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[:i]
	if len(intPart) == 0 {
		return false
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if len(intPart) > intDigits && intPart != "0" {
		return false
	}
	if i == len(s) {
		return true
	}
	frac := s[i+1:]
	if s[i] != '.' || len(frac) == 0 || len(frac) > scale {
		return false
	}
	for j := 0; j < len(frac); j++ {
		if frac[j] < '0' || frac[j] > '9' {
			return false
		}
	}
	return true
}

// intPut appends an integer-like value read as unsigned (u) and signed (s).
type intPut func(u uint64, s int64) error

// intShape is how a column's integers are read: signedness and width.
func intShape(c *Column) (unsigned bool, bits uint) {
	bits = map[MySQLKind]uint{KindTinyInt: 8, KindSmallInt: 16, KindMediumInt: 24, KindInt: 32, KindBigInt: 64, KindYear: 16, KindBit: 64}[c.Kind]
	return c.Unsigned || c.Kind == KindYear || c.Kind == KindBit, bits
}

// intConverter handles the integer families, YEAR and BIT. MySQL values
// arrive as Go integers of the column's width; without signedness metadata
// in the binlog an UNSIGNED column's value arrives signed and is
// reinterpreted at the column's width (intValue).
func intConverter(c *Column, t CHType, nl nulls) (colBuf, intPut) {
	switch t.Kind {
	case CHInt8:
		return signedBuf[int8](nl, math.MinInt8, math.MaxInt8)
	case CHInt16:
		return signedBuf[int16](nl, math.MinInt16, math.MaxInt16)
	case CHInt32:
		return signedBuf[int32](nl, math.MinInt32, math.MaxInt32)
	case CHInt64:
		return signedBuf[int64](nl, math.MinInt64, math.MaxInt64)
	case CHUInt8:
		if c.Kind == KindTinyInt && c.Precision == 1 && !c.Unsigned {
			// TINYINT(1) as a boolean on a server without Bool.
			buf := &numBuf[uint8]{nulls: nl}
			return buf, func(_ uint64, s int64) error {
				if err := checkBool(s); err != nil {
					return err
				}
				buf.add(uint8(s))
				return nil
			}
		}
		return unsignedBuf[uint8](nl, math.MaxUint8)
	case CHUInt16:
		return unsignedBuf[uint16](nl, math.MaxUint16)
	case CHUInt32:
		return unsignedBuf[uint32](nl, math.MaxUint32)
	case CHUInt64:
		return unsignedBuf[uint64](nl, math.MaxUint64)
	case CHBool:
		buf := &numBuf[bool]{nulls: nl}
		return buf, func(_ uint64, s int64) error {
			if err := checkBool(s); err != nil {
				return err
			}
			buf.add(s == 1)
			return nil
		}
	}
	panic(fmt.Sprintf("schema: no integer converter for MySQL %s to ClickHouse %s", c.Type, t))
}

// checkBool accepts a TINYINT(1) written as a boolean: only 0 and 1 are.
func checkBool(s int64) error {
	if s < 0 || s > 1 {
		return errMsg("not 0 or 1, so not a boolean (schema.tinyint1_as: bool)")
	}
	return nil
}

// intValue extracts an integer. For unsigned columns it returns the value in
// u; for signed ones in s. ok is false for a non-integer.
func intValue(v any, unsigned bool, bits uint) (u uint64, s int64, ok bool) {
	switch x := v.(type) {
	case int8:
		s = int64(x)
	case int16:
		s = int64(x)
	case int32:
		s = int64(x)
	case int64:
		s = x
	case int:
		s = int64(x)
	case uint8:
		return uint64(x), int64(x), true
	case uint16:
		return uint64(x), int64(x), true
	case uint32:
		return uint64(x), int64(x), true
	case uint64:
		return x, int64(x), !(x > math.MaxInt64 && !unsigned)
	default:
		return 0, 0, false
	}
	u, s = fromSigned(s, unsigned, bits)
	return u, s, true
}

// fromSigned reads a signed, sign-extended value of a bits-wide column. For
// an unsigned column the binlog held the same bits: keep the column's width.
func fromSigned(s int64, unsigned bool, bits uint) (uint64, int64) {
	if !unsigned {
		return uint64(s), s
	}
	u := uint64(s)
	if bits < 64 {
		u &= 1<<bits - 1
	}
	return u, s
}

func signedBuf[T int8 | int16 | int32 | int64](nl nulls, lo, hi int64) (colBuf, intPut) {
	buf := &numBuf[T]{nulls: nl}
	return buf, func(_ uint64, s int64) error {
		if s < lo || s > hi {
			return errMsg("out of the ClickHouse column's range")
		}
		buf.add(T(s))
		return nil
	}
}

func unsignedBuf[T uint8 | uint16 | uint32 | uint64](nl nulls, hi uint64) (colBuf, intPut) {
	buf := &numBuf[T]{nulls: nl}
	return buf, func(u uint64, _ int64) error {
		if u > hi {
			return errMsg("out of the ClickHouse column's range")
		}
		buf.add(T(u))
		return nil
	}
}

// enumConverter writes ENUM indexes (in s): MySQL's 1-based index, 0 for
// an invalid value stored as ”.
func enumConverter(c *Column, t CHType, nl nulls) (colBuf, intPut) {
	labels := c.Labels
	// MySQL's index 0 maps to the '' label when the column declares one.
	zero := int64(0)
	for i, l := range labels {
		if l == "" {
			zero = int64(i + 1)
		}
	}
	index := func(i int64) (int64, error) {
		if i < 0 || i > int64(len(labels)) {
			return 0, errMsg(fmt.Sprintf("ENUM index out of range 0..%d", len(labels)))
		}
		if i == 0 {
			i = zero
		}
		return i, nil
	}
	switch t.Kind {
	case CHEnum8:
		buf := &numBuf[int8]{nulls: nl}
		return buf, func(_ uint64, s int64) error {
			i, err := index(s)
			if err == nil {
				buf.add(int8(i))
			}
			return err
		}
	case CHEnum16:
		buf := &numBuf[int16]{nulls: nl}
		return buf, func(_ uint64, s int64) error {
			i, err := index(s)
			if err == nil {
				buf.add(int16(i))
			}
			return err
		}
	}
	buf := &strBuf{nulls: nl}
	return buf, func(_ uint64, s int64) error {
		i, err := index(s)
		if err != nil {
			return err
		}
		if i == 0 {
			buf.addString("")
		} else {
			buf.addString(labels[i-1])
		}
		return nil
	}
}

// setConverter writes SET bitmasks (in u).
func setConverter(c *Column, t CHType, nl nulls) (colBuf, intPut) {
	labels := c.Labels
	check := func(m uint64) error {
		if len(labels) < 64 && m>>uint(len(labels)) != 0 {
			return errMsg(fmt.Sprintf("SET bitmask has bits beyond its %d labels", len(labels)))
		}
		return nil
	}
	if t.Kind == CHArrayString {
		buf := &arrBuf{}
		return buf, func(m uint64, _ int64) error {
			if err := check(m); err != nil {
				return err
			}
			for i := range labels {
				if m&(1<<uint(i)) != 0 {
					buf.addString(labels[i])
				}
			}
			buf.endRow()
			return nil
		}
	}
	buf := &strBuf{nulls: nl}
	return buf, func(m uint64, _ int64) error {
		if err := check(m); err != nil {
			return err
		}
		first := true
		for i := range labels {
			if m&(1<<uint(i)) != 0 {
				if !first {
					buf.arena = append(buf.arena, ',')
				}
				first = false
				buf.arena = append(buf.arena, labels[i]...)
			}
		}
		buf.end()
		return nil
	}
}

// Ranges of the ClickHouse date types.
const (
	dateMaxDays   = 65535  // Date: 2149-06-06
	legacyMaxDays = 49672  // 2105-12-31, see Capabilities.LegacyDateRange
	date32MinDays = -25567 // Date32: 1900-01-01
	date32MaxDays = 120529 // Date32: 2299-12-31
	dt64MinMicros = -2208988800 * 1e6
	dt64MaxMicros = (10413792000-1)*1e6 + 999999 // 2299-12-31 23:59:59.999999
	dayMicros     = 86400 * 1e6
)

// fix applies the invalid_dates policy to a value that cannot be written as
// is. It returns the replacement (the bound clampTo) or null=true.
func (b *Block) fix(kind Fixup, nullable bool, clampTo int64) (v int64, null bool, err error) {
	switch b.target.Options.InvalidDates {
	case InvalidClamp:
	case InvalidNull:
		if nullable {
			b.pending[kind]++
			return 0, true, nil
		}
	default:
		msg := map[Fixup]string{
			FixupZeroDate:       "zero date",
			FixupInvalidDate:    "invalid date",
			FixupDateOutOfRange: "date outside the ClickHouse type's range",
		}[kind]
		return 0, false, errMsg(msg + "; set schema.invalid_dates to clamp or null to write it anyway")
	}
	b.pending[kind]++
	return clampTo, false, nil
}

func (b *Block) dateConverter(c *Column, t CHType, nl nulls) (colBuf, converter) {
	lo, hi := b.dateBounds(t)
	buf := &timeBuf{numBuf: numBuf[int64]{nulls: nl}}
	return buf, func(v any) error {
		switch d := v.(type) {
		case string:
			y, m, dd, ok := parseDate(d)
			if !ok {
				return errMsg("not a DATE value")
			}
			return b.putDate(buf, lo, hi, y, m, dd)
		case time.Time:
			return b.putDays(buf, lo, hi, daysFromCivil(d.Year(), int(d.Month()), d.Day()), -1)
		}
		return errMsg("want a DATE string")
	}
}

// dateBounds is the range of a Date/Date32 column in days since 1970.
func (b *Block) dateBounds(t CHType) (lo, hi int64) {
	lo, hi = 0, dateMaxDays
	if b.target.Caps.LegacyDateRange {
		hi = legacyMaxDays
	}
	if t.Kind == CHDate32 {
		lo, hi = date32MinDays, date32MaxDays
	}
	return lo, hi
}

// putDate appends a DATE given as its parts, which may be zero or invalid.
func (b *Block) putDate(buf *timeBuf, lo, hi int64, y, m, d int) error {
	switch {
	case y == 0 && m == 0 && d == 0:
		return b.putDays(buf, lo, hi, 0, FixupZeroDate)
	case !validDate(y, m, d):
		return b.putDays(buf, lo, hi, 0, FixupInvalidDate)
	}
	return b.putDays(buf, lo, hi, daysFromCivil(y, m, d), -1)
}

// putDays appends a date, applying the invalid_dates policy to a value of
// fix-up kind `kind` (-1: none) or outside lo..hi.
func (b *Block) putDays(buf *timeBuf, lo, hi, days int64, kind Fixup) error {
	clampTo := lo
	if kind < 0 && (days < lo || days > hi) {
		kind = FixupDateOutOfRange
		if days > hi {
			clampTo = hi
		}
	}
	if kind >= 0 {
		fixed, null, err := b.fix(kind, buf.nullable, clampTo)
		if err != nil {
			return err
		}
		if null {
			buf.appendNull()
			return nil
		}
		days = fixed
	}
	buf.add(days * dayMicros)
	return nil
}

// dateTimeConverter writes DATETIME and TIMESTAMP as DateTime (seconds) or
// DateTime64 (microseconds). TIMESTAMP strings are taken as UTC (binlog2ch
// sets go-mysql's TimestampStringLocation to UTC); DATETIME values are wall
// clock in the configured zone.
func (b *Block) dateTimeConverter(c *Column, t CHType, nl nulls) (colBuf, converter) {
	dt := b.newDateTimeBuf(c, t, nl)
	b.dateTimeBufs[c] = dt
	wallClock := c.Kind == KindDateTime
	return dt.buf, func(v any) error {
		switch d := v.(type) {
		case string:
			p, ok := parseDateTime(d)
			if !ok {
				return errMsg("not a DATETIME value")
			}
			return dt.putParts(p)
		case time.Time:
			if wallClock && dt.loc != nil {
				d = time.Date(d.Year(), d.Month(), d.Day(), d.Hour(), d.Minute(), d.Second(), d.Nanosecond(), dt.loc)
			}
			return dt.put(d.UnixMicro(), -1)
		}
		return errMsg("want a DATETIME string or time.Time")
	}
}

// dateTimeBuf is a DateTime or DateTime64 column with its range and zone.
type dateTimeBuf struct {
	b      *Block
	buf    colBuf
	add    func(us int64)
	lo, hi int64
	loc    *time.Location // zone of wall-clock values; nil: UTC
}

func (b *Block) newDateTimeBuf(c *Column, t CHType, nl nulls) *dateTimeBuf {
	dt := &dateTimeBuf{b: b, loc: b.target.Options.DateTimeZone, lo: 0, hi: int64(math.MaxUint32)*1e6 + 999999}
	if c.Kind == KindTimestamp || dt.loc == time.UTC {
		dt.loc = nil // nil: UTC arithmetic, no zone lookups
	}
	if b.target.Caps.LegacyDateRange {
		dt.hi = (legacyMaxDays+1)*dayMicros - 1
	}
	if t.Kind == CHDateTime64 {
		dt.lo, dt.hi = dt64MinMicros, dt64MaxMicros
		tb := &timeBuf{numBuf: numBuf[int64]{nulls: nl}}
		dt.buf, dt.add = tb, tb.add
	} else {
		nb := &numBuf[int64]{nulls: nl}
		dt.buf, dt.add = nb, func(us int64) { nb.add(us / 1e6) }
	}
	return dt
}

// putParts appends a DATETIME given as its parts, wall clock in dt.loc.
func (dt *dateTimeBuf) putParts(p dateTimeParts) error {
	switch {
	case p.y == 0 && p.mo == 0 && p.d == 0:
		return dt.put(0, FixupZeroDate)
	case !validDate(p.y, p.mo, p.d) || p.h > 23 || p.mi > 59 || p.s > 59:
		return dt.put(0, FixupInvalidDate)
	}
	return dt.put(p.micros(dt.loc), -1)
}

// put appends an instant in microseconds, applying the invalid_dates
// policy to a value of fix-up kind `kind` (-1: none) or out of range.
func (dt *dateTimeBuf) put(us int64, kind Fixup) error {
	clampTo := dt.lo
	if kind < 0 && (us < dt.lo || us > dt.hi) {
		kind = FixupDateOutOfRange
		if us > dt.hi {
			clampTo = dt.hi
		}
	}
	if kind >= 0 {
		fixed, null, err := dt.b.fix(kind, dt.buf.(interface{ isNullable() bool }).isNullable(), clampTo)
		if err != nil {
			return err
		}
		if null {
			dt.buf.appendNull()
			return nil
		}
		us = fixed
	}
	dt.add(us)
	return nil
}

// dateTimeTextConverter keeps DATETIME(fsp)/TIMESTAMP(fsp) as text where the
// server has no DateTime64: "YYYY-MM-DD hh:mm:ss.ffffff" with fsp digits,
// TIMESTAMP in UTC. Zero dates stay as MySQL prints them.
func dateTimeTextConverter(c *Column, nl nulls) (colBuf, converter) {
	buf := &strBuf{nulls: nl}
	fsp := c.Fsp
	return buf, func(v any) error {
		switch d := v.(type) {
		case string:
			if _, ok := parseDateTime(d); !ok {
				return errMsg("not a DATETIME value")
			}
			buf.arena = appendFraction(buf.arena, d, fsp)
		case time.Time:
			if c.Kind == KindTimestamp {
				d = d.UTC()
			}
			buf.arena = appendDateTime(buf.arena, d, fsp)
		default:
			return errMsg("want a DATETIME string or time.Time")
		}
		buf.end()
		return nil
	}
}

// appendFraction appends a datetime text with exactly fsp fraction digits.
func appendFraction(dst []byte, s string, fsp int) []byte {
	base, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			base, frac = s[:i], s[i+1:]
			break
		}
	}
	dst = append(dst, base...)
	if fsp == 0 {
		return dst
	}
	dst = append(dst, '.')
	for i := 0; i < fsp; i++ {
		if i < len(frac) {
			dst = append(dst, frac[i])
		} else {
			dst = append(dst, '0')
		}
	}
	return dst
}

func appendDateTime(dst []byte, t time.Time, fsp int) []byte {
	dst = appendInt(dst, t.Year(), 4)
	dst = append(dst, '-')
	dst = appendInt(dst, int(t.Month()), 2)
	dst = append(dst, '-')
	dst = appendInt(dst, t.Day(), 2)
	dst = append(dst, ' ')
	dst = appendInt(dst, t.Hour(), 2)
	dst = append(dst, ':')
	dst = appendInt(dst, t.Minute(), 2)
	dst = append(dst, ':')
	dst = appendInt(dst, t.Second(), 2)
	if fsp > 0 {
		dst = append(dst, '.')
		us := t.Nanosecond() / 1000
		var digits [6]byte
		for i := 5; i >= 0; i-- {
			digits[i] = byte('0' + us%10)
			us /= 10
		}
		dst = append(dst, digits[:fsp]...)
	}
	return dst
}

func appendInt(dst []byte, v, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}
