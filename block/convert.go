// Package block holds a table's rows on their way to ClickHouse: the Block,
// whose converters, built once per target, turn go-mysql's values, SQL
// text, raw binlog row images or MySQL's binary result rows into package column's
// buffers, without loss or with a counted fix-up; its Native encoding,
// split by shard and sharding-key hasher are column's, applied to the
// block's columns. It must not decide a mapping (package schema does) nor
// do I/O.
package block

import (
	"unsafe"

	"github.com/binlog2ch/binlog2ch/column"
	"github.com/binlog2ch/binlog2ch/mysqldecimal"

	"fmt"
	"strconv"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/binlog2ch/binlog2ch/charset"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
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
	if _, ok := e.Value.(*BadValue); ok {
		// The message says it all; the stand-in is no value to show.
		return fmt.Sprintf("%s.%s (%s): %s", e.Table, e.Column, e.Type, e.Msg)
	}
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

// BadValue stands in a decoded row for a value the rows decoder could not
// produce, such as a partial JSON update it cannot apply: the row cannot be
// written, and converting it fails with Msg (a ConvertError naming the
// table and the column, to which the writer adds the binlog position).
// Never a guess, never a NULL in place of a value.
type BadValue struct{ Msg string }

func (v *BadValue) Error() string { return v.Msg }

// Block accumulates the converted rows of one table in columnar buffers,
// ready to be handed to a clickhouse-go batch. Converters are chosen once per
// table schema, so the per-value work is one type switch and an append.
// A Block is used by one goroutine.
type Block struct {
	target *schema.Target
	cols   []column.Buf
	conv   []converter    // per MySQL column; nil for excluded ones
	raw    []rawConverter // per MySQL column: from binlog bytes; nil when excluded or not decodable
	puts   []intPut       // per MySQL column: the typed append of integer-like columns
	// res are the converters from result rows (result.go), per MySQL
	// column, built for the result columns resCols.
	res     []resultConverter
	resCols []mysqlproto.Column
	// dateTimeBufs are the DATETIME/TIMESTAMP columns' buffers, shared by
	// both decoders.
	dateTimeBufs map[*schema.Column]*dateTimeBuf
	offsets      []int       // scratch for SameKey
	layouts      []rawLayout // per MySQL column, set by RawOK
	rawOK        bool
	meta         []func(version uint64, op schema.Op)
	// Fixups counts values changed by the invalid_dates policy, by kind,
	// in rows that were appended.
	Fixups  [numFixups]uint64
	pending [numFixups]uint64 // fix-ups of the row being appended
	// OpRows counts the rows appended, by Op (index 1-3).
	OpRows [4]uint64
	// native are the columns' Native-format encoders, set by NativeOK.
	native   []column.NativeFn
	nativeOK bool
}

// converter appends one MySQL value to its column.
type converter func(v any) error

// NewBlock returns an empty block for the target table.
func NewBlock(t *schema.Target) *Block {
	b := &Block{target: t, cols: make([]column.Buf, len(t.Columns)), conv: make([]converter, len(t.Source.Columns)),
		raw: make([]rawConverter, len(t.Source.Columns)), puts: make([]intPut, len(t.Source.Columns)),
		dateTimeBufs: map[*schema.Column]*dateTimeBuf{}}
	for i, tc := range t.Columns {
		switch tc.Meta {
		case schema.MetaVersion:
			buf := &column.Num[uint64]{}
			b.cols[i] = buf
			b.meta = append(b.meta, func(v uint64, _ schema.Op) { buf.Add(v) })
		case schema.MetaIsDeleted:
			buf := &column.Num[uint8]{}
			b.cols[i] = buf
			b.meta = append(b.meta, func(_ uint64, op schema.Op) {
				if op == schema.OpDelete {
					buf.Add(1)
				} else {
					buf.Add(0)
				}
			})
		case schema.MetaOp:
			buf := &column.Num[int8]{}
			b.cols[i] = buf
			b.meta = append(b.meta, func(_ uint64, op schema.Op) { buf.Add(int8(op)) })
		default:
			c := &t.Source.Columns[tc.Source]
			buf, conv, put := b.newConverter(c, tc.Type)
			b.cols[i] = buf
			b.conv[tc.Source] = conv
			b.puts[tc.Source] = put
			b.raw[tc.Source] = b.rawConverter(c, tc.Type, buf, put)
		}
	}
	return b
}

// Target is the table the block is for.
func (b *Block) Target() *schema.Target { return b.target }

// Rows is the number of rows in the block.
func (b *Block) Rows() int {
	if len(b.cols) == 0 {
		return 0
	}
	return b.cols[0].Len()
}

// VersionCounts counts the rows by _version, with the least and the
// greatest (an empty map when the target has no _version column).
func (b *Block) VersionCounts() (counts map[uint64]uint64, lo, hi uint64) {
	counts, lo = map[uint64]uint64{}, ^uint64(0)
	for i, tc := range b.target.Columns {
		if tc.Meta == schema.MetaVersion {
			for _, v := range b.cols[i].(*column.Num[uint64]).Vals {
				counts[v]++
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	return counts, lo, hi
}

// VersionSpan is the _version of the block's first and last rows, rows
// being appended in binlog order; ok is false for an empty block or a
// target without _version.
func (b *Block) VersionSpan() (first, last uint64, ok bool) {
	for i, tc := range b.target.Columns {
		if tc.Meta == schema.MetaVersion {
			if v := b.cols[i].(*column.Num[uint64]).Vals; len(v) > 0 {
				return v[0], v[len(v)-1], true
			}
		}
	}
	return 0, 0, false
}

// Size is roughly the bytes the block holds.
func (b *Block) Size() int {
	n := 0
	for _, c := range b.cols {
		n += c.Size()
	}
	return n
}

// Append converts one row image (values in MySQL column order, as go-mysql
// decodes them) and adds it with its version and operation. On error the
// block is unchanged.
func (b *Block) Append(row []any, version uint64, op schema.Op) error {
	return b.appendRow(row, nil, version, op)
}

// AppendPartial is Append for a row image that holds only the columns
// has reports (binlog_row_image NOBLOB or MINIMAL): each column it lacks
// gets a placeholder, NULL or its type's zero, which nothing may read (the
// caller checked: a tombstone's columns outside its key and placement).
func (b *Block) AppendPartial(row []any, has func(i int) bool, version uint64, op schema.Op) error {
	return b.appendRow(row, has, version, op)
}

func (b *Block) appendRow(row []any, has func(i int) bool, version uint64, op schema.Op) error {
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
		if has != nil && !has(i) {
			b.appendPlaceholder(i)
			continue
		}
		if v == nil {
			c := &src.Columns[i]
			if tc := b.target.SourceToTarget[i]; b.target.Columns[tc].Type.Nullable {
				b.cols[tc].AppendNull()
				continue
			}
			err = &ConvertError{Table: src.FullName(), Column: c.Name, Type: c.Type, Value: v, Msg: "NULL in a column that is NOT NULL in the schema binlog2ch knows"}
		} else if bv, ok := v.(*BadValue); ok {
			err = errMsg(bv.Msg)
		} else {
			err = conv(v)
		}
		if err != nil {
			for _, c := range b.cols {
				c.Truncate(n)
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

// appendPlaceholder appends a value of MySQL column i that nothing reads:
// NULL, or a value its ClickHouse type takes (ENUM's first label, a
// decimal's 0; any other type's zero).
func (b *Block) appendPlaceholder(i int) {
	tc := b.target.SourceToTarget[i]
	t := b.target.Columns[tc].Type
	switch {
	case t.Nullable:
		b.cols[tc].AppendNull()
	case t.Kind == schema.CHEnum8 || t.Kind == schema.CHEnum16:
		// Enum values are MySQL's indexes, and an ENUM has a label 1.
		if put := b.puts[i]; put != nil && put(1, 1) == nil {
			return
		}
		b.cols[tc].AppendNull()
	default:
		b.cols[tc].AppendNull() // not Nullable: the zero value (a Decimal's 0)
	}
}

func (e errMsg) Error() string { return string(e) }

// AppendTo hands the block's columns to a batch prepared with the target's
// InsertSQL. The batch must be sent before the block is appended to again.
func (b *Block) AppendTo(batch driver.Batch) error {
	for i, c := range b.cols {
		if err := c.AppendTo(batch.Column(i)); err != nil {
			return fmt.Errorf("%s: column %s: %w", b.target.FullName(), b.target.Columns[i].Name, err)
		}
	}
	return nil
}

// Reserve makes room in b's buffers for an eighth more values and bytes
// than o holds, o being a block of the same target. A writer's next batch
// is usually about the size of its last: called while b is empty, one
// allocation per buffer (none once b has the room) replaces growing it
// value by value, which copies the buffer again at each step; a column
// holding a few more bytes than last time would otherwise copy its whole
// buffer once more.
func (b *Block) Reserve(o *Block) {
	if o.target != b.target {
		return
	}
	for i, c := range b.cols {
		values, bytes := o.cols[i].Fill()
		c.Reserve(values+values/8, bytes+bytes/8)
	}
}

// Reset empties the block, keeping its buffers for reuse.
func (b *Block) Reset() {
	for _, c := range b.cols {
		c.Reset()
	}
	b.OpRows = [4]uint64{}
}

// newConverter returns the column buffer and converter for a MySQL column
// written as ClickHouse type t, and for integer-like columns (integers,
// YEAR, BIT, ENUM, SET) the typed append both converters share.
func (b *Block) newConverter(c *schema.Column, t schema.CHType) (column.Buf, converter, intPut) {
	nl := column.Nulls{Nullable: t.Nullable}
	var buf column.Buf
	var put intPut
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt, schema.KindYear, schema.KindBit:
		buf, put = intConverter(c, t, nl)
		unsigned, bits := intShape(c)
		return buf, func(v any) error {
			u, s, ok := intValue(v, unsigned, bits)
			if !ok {
				return errMsg("want an integer")
			}
			return put(u, s)
		}, put
	case schema.KindEnum:
		buf, put = enumConverter(c, t, nl)
		return buf, func(v any) error {
			if s, ok := v.(string); ok { // already a label (a decoder that resolves them)
				if sb, ok := buf.(*column.Str); ok {
					sb.AddString(s)
					return nil
				}
			}
			u, s, ok := intValue(v, false, 64)
			if !ok {
				return errMsg("want an ENUM index")
			}
			return put(u, s)
		}, put
	case schema.KindSet:
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
func (b *Block) valueConverter(c *schema.Column, t schema.CHType, nl column.Nulls) (column.Buf, converter) {
	switch c.Kind {
	case schema.KindFloat:
		buf := &column.Num[float32]{Nulls: nl}
		return buf, func(v any) error {
			f, ok := v.(float32)
			if !ok {
				return errMsg("want a float32")
			}
			buf.Add(f)
			return nil
		}
	case schema.KindDouble:
		buf := &column.Num[float64]{Nulls: nl}
		return buf, func(v any) error {
			switch f := v.(type) {
			case float64:
				buf.Add(f)
			case float32:
				buf.Add(float64(f))
			default:
				return errMsg("want a float64")
			}
			return nil
		}
	case schema.KindDecimal:
		buf := decimalBuf(nl, t)
		add := decimalAdd(buf)
		intDigits := c.Precision - c.Scale
		bad := errMsg(fmt.Sprintf("not a DECIMAL(%d,%d)", c.Precision, c.Scale))
		return buf, func(v any) error {
			switch d := v.(type) {
			case string:
				if !mysqldecimal.Valid(d, intDigits, c.Scale) {
					return bad
				}
				return add(unsafe.Slice(unsafe.StringData(d), len(d)))
			case decimal.Decimal:
				// go-mysql's UseDecimal; not the hot path, so String may allocate.
				if !mysqldecimal.Valid(d.String(), intDigits, c.Scale) {
					return bad
				}
				return add([]byte(d.StringFixed(int32(c.Scale))))
			default:
				return errMsg("want a decimal string")
			}
		}
	case schema.KindDate:
		return b.dateConverter(c, t, nl)
	case schema.KindDateTime, schema.KindTimestamp:
		if t.Kind == schema.CHString {
			return dateTimeTextConverter(c, nl)
		}
		return b.dateTimeConverter(c, t, nl)
	case schema.KindTime:
		if t.Kind == schema.CHInt64 {
			buf := &column.Num[int64]{Nulls: nl}
			return buf, func(v any) error {
				s, ok := v.(string)
				if !ok {
					return errMsg("want a TIME string")
				}
				us, ok := mysqltime.ParseTimeMicros(s)
				if !ok {
					return errMsg("not a TIME value")
				}
				buf.Add(us)
				return nil
			}
		}
		// MySQL prints TIME(fsp) with exactly fsp fraction digits; go-mysql
		// drops a zero fraction.
		buf := &column.Str{Nulls: nl}
		fsp := c.Fsp
		return buf, func(v any) error {
			s, ok := v.(string)
			if !ok {
				return errMsg("want a TIME string")
			}
			if _, ok := mysqltime.ParseTimeMicros(s); !ok {
				return errMsg("not a TIME value")
			}
			buf.Arena = mysqltime.AppendFraction(buf.Arena, s, fsp)
			buf.End()
			return nil
		}
	case schema.KindChar, schema.KindBlob, schema.KindJSON:
		return textConverter(c, nl)
	case schema.KindBinary:
		if t.Kind == schema.CHString {
			return textConverter(c, nl)
		}
		buf := &column.Str{Nulls: nl}
		n := c.Length
		return buf, func(v any) error {
			var l int
			buf.Room(n)
			switch s := v.(type) {
			case string:
				buf.Arena, l = append(buf.Arena, s...), len(s)
			case []byte:
				buf.Arena, l = append(buf.Arena, s...), len(s)
			default:
				return errMsg("want a string")
			}
			if l > n {
				buf.Arena = buf.Arena[:len(buf.Arena)-l]
				return errMsg(fmt.Sprintf("longer than BINARY(%d)", n))
			}
			// The binlog drops BINARY's trailing zero bytes; MySQL holds them.
			for ; l < n; l++ {
				buf.Arena = append(buf.Arena, 0)
			}
			buf.End()
			return nil
		}
	case schema.KindUUID, schema.KindInet4, schema.KindInet6:
		buf := &column.Str{Nulls: nl}
		kind := fixedBinKind(c)
		return buf, func(v any) error {
			switch s := v.(type) {
			case string:
				return addFixedBin(buf, kind, unsafe.Slice(unsafe.StringData(s), len(s)))
			case []byte:
				return addFixedBin(buf, kind, s)
			}
			return errMsg("want bytes")
		}
	case schema.KindGeometry:
		buf := &column.Str{Nulls: nl}
		return buf, func(v any) error {
			switch g := v.(type) {
			case []byte:
				buf.Room(2 * len(g))
				buf.Arena = appendHex(buf.Arena, g)
			case string:
				buf.Room(2 * len(g))
				buf.Arena = appendHex(buf.Arena, []byte(g))
			default:
				return errMsg("want geometry bytes")
			}
			buf.End()
			return nil
		}
	}
	// Map refuses what it cannot convert, so this is a programming error.
	panic(fmt.Sprintf("schema: no converter for MySQL %s to ClickHouse %s", c.Type, t))
}

func textConverter(c *schema.Column, nl column.Nulls) (column.Buf, converter) {
	buf := &column.Str{Nulls: nl}
	if dec, err := textDecoder(c); dec != nil || err != nil {
		return buf, func(v any) error {
			switch s := v.(type) {
			case string:
				return addDecoded(buf, dec, err, unsafe.Slice(unsafe.StringData(s), len(s)))
			case []byte:
				return addDecoded(buf, dec, err, s)
			}
			return errMsg("want a string")
		}
	}
	return buf, func(v any) error {
		switch s := v.(type) {
		case string:
			buf.AddString(s)
		case []byte:
			buf.AddBytes(s)
		default:
			return errMsg("want a string")
		}
		return nil
	}
}

// textDecoder is the decoder of a text column whose character set is not
// UTF-8 (nil for the others): its values arrive in that set from the
// binlog, and from the snapshot, which reads them as bytes so that both
// paths convert alike.
func textDecoder(c *schema.Column) (*charset.Decoder, error) {
	if c.Kind != schema.KindChar || charset.Passthrough(c.Charset) {
		return nil, nil
	}
	return charset.New(c.Charset) // schema.Map refuses the others first
}

// addDecoded appends text converted to UTF-8.
func addDecoded(b *column.Str, dec *charset.Decoder, decErr error, p []byte) error {
	if decErr != nil {
		return decErr
	}
	b.Room(4 * len(p)) // UTF-8 takes at most 4 bytes a character
	out, err := dec.Append(b.Arena, p)
	if err != nil {
		return errMsg(err.Error() + ": the text is not valid in the column's character set, so binlog2ch cannot write it as UTF-8")
	}
	b.Arena = out
	b.End()
	return nil
}

const upperHex = "0123456789ABCDEF"

// appendHex appends p in upper-case hex, as MySQL's HEX() prints it.
func appendHex(dst, p []byte) []byte {
	for _, c := range p {
		dst = append(dst, upperHex[c>>4], upperHex[c&15])
	}
	return dst
}

// decimalBuf is the column of a DECIMAL written as type t: a Decimal's
// scaled integers, or the text (a String override, or more digits than
// the server's Decimal holds).
func decimalBuf(nl column.Nulls, t schema.CHType) column.Buf {
	if t.Kind == schema.CHDecimal {
		if db := column.NewDec(nl, t); db != nil {
			return db
		}
	}
	return &column.Str{Nulls: nl}
}

// decimalAdd is the append of a valid DECIMAL's text to its column.
func decimalAdd(buf column.Buf) func(text []byte) error {
	if db, ok := buf.(*column.Dec); ok {
		return func(text []byte) error {
			v, err := mysqldecimal.Parse(text, db.Scale)
			if err != nil {
				return err
			}
			db.Add(v)
			return nil
		}
	}
	sb := buf.(*column.Str)
	return func(text []byte) error { sb.AddBytes(text); return nil }
}
