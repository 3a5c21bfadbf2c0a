package column

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/mysqldecimal"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Dec holds Decimal values as ClickHouse stores them: each value's scaled
// integer (the value times 10^Scale) in Width little-endian bytes, two's
// complement, one after another. That is the column's Native data, written
// as it lies. Held as text instead, each value was printed from the
// binlog's binary DECIMAL and parsed back at encoding, a tenth of a
// catch-up's CPU on a table with one DECIMAL column.
type Dec struct {
	Nulls
	Width int // 4, 8, 16 or 32 bytes: DecimalWidth of the precision
	Scale int
	Data  []byte
	text  []byte    // scratch for the hand-off: the values as text
	strs  []string  // pointing into text
	ptrs  []*string // for a Nullable hand-off
}

// NewDec is an empty column of Decimal type t; nil when t has no stored
// width (more than 76 digits).
func NewDec(nl Nulls, t schema.CHType) *Dec {
	w := DecimalWidth(t.Precision)
	if w == 0 {
		return nil
	}
	return &Dec{Nulls: nl, Width: w, Scale: t.Scale}
}

// Add appends a scaled value, 256-bit two's complement, least significant
// limb first; the caller checked that it fits the type's precision.
func (b *Dec) Add(v [4]uint64) {
	switch b.Width {
	case 4:
		b.Data = binary.LittleEndian.AppendUint32(b.Data, uint32(v[0]))
	case 8:
		b.Data = binary.LittleEndian.AppendUint64(b.Data, v[0])
	default:
		for _, limb := range v[:b.Width/8] {
			b.Data = binary.LittleEndian.AppendUint64(b.Data, limb)
		}
	}
	b.mark(false)
}

// AddInt64 appends a scaled value that fits an int64.
func (b *Dec) AddInt64(v int64) {
	switch b.Width {
	case 4:
		b.Data = binary.LittleEndian.AppendUint32(b.Data, uint32(v))
	case 8:
		b.Data = binary.LittleEndian.AppendUint64(b.Data, uint64(v))
	default:
		ext := uint64(v >> 63) // the sign in every bit
		b.Data = binary.LittleEndian.AppendUint64(b.Data, uint64(v))
		for l := 1; l < b.Width/8; l++ {
			b.Data = binary.LittleEndian.AppendUint64(b.Data, ext)
		}
	}
	b.mark(false)
}

// AppendNull appends a zero marked NULL.
func (b *Dec) AppendNull() {
	b.Data = append(b.Data, make([]byte, b.Width)...)
	b.mark(true)
}

func (b *Dec) Len() int { return len(b.Data) / b.Width }

func (b *Dec) Truncate(n int) {
	b.Data = b.Data[:n*b.Width]
	if b.Nullable {
		b.IsNull = b.IsNull[:n]
	}
}

func (b *Dec) Reset()           { b.Truncate(0) }
func (b *Dec) Size() int        { return len(b.Data) }
func (b *Dec) Fill() (int, int) { return b.Len(), 0 }
func (b *Dec) Reserve(values, _ int) {
	b.Data = slices.Grow(b.Data, values*b.Width)
	b.Nulls.Reserve(values)
}

// Value is value i, sign-extended to 256 bits, least significant limb
// first.
func (b *Dec) Value(i int) [4]uint64 {
	p := b.Data[i*b.Width : (i+1)*b.Width]
	var v [4]uint64
	limbs := 1
	if b.Width == 4 {
		v[0] = uint64(int64(int32(binary.LittleEndian.Uint32(p))))
	} else {
		limbs = b.Width / 8
		for l := range limbs {
			v[l] = binary.LittleEndian.Uint64(p[8*l:])
		}
	}
	ext := uint64(int64(v[limbs-1]) >> 63)
	for l := limbs; l < 4; l++ {
		v[l] = ext
	}
	return v
}

// AppendText appends value i as text: "-123.45", "0.50" for Decimal(P, 2).
func (b *Dec) AppendText(dst []byte, i int) []byte {
	return mysqldecimal.AppendScaled(dst, b.Value(i), b.Scale)
}

func (b *Dec) Scatter(to []uint32, dst []Buf) {
	w := b.Width
	for i, p := range to {
		d := dst[p].(*Dec)
		d.Data = append(d.Data, b.Data[i*w:(i+1)*w]...)
	}
	scatterNulls(&b.Nulls, to, func(p int) *Nulls { return &dst[p].(*Dec).Nulls })
}

// AppendTo hands the values to clickhouse-go as text, which its Decimal
// column parses (the fallback path: not per row on the native one).
func (b *Dec) AppendTo(c driver.BatchColumn) error {
	defer func() { b.text, b.strs, b.ptrs = nil, nil, nil }() // see Str.AppendTo
	n := b.Len()
	b.text = b.text[:0]
	ends := make([]int, n)
	for i := range n {
		b.text = b.AppendText(b.text, i)
		ends[i] = len(b.text)
	}
	b.strs = make([]string, n)
	start := 0
	for i, end := range ends {
		if end > start {
			b.strs[i] = unsafe.String(&b.text[start], end-start)
		}
		start = end
	}
	if !b.Nullable {
		return c.Append(b.strs)
	}
	b.ptrs = make([]*string, n)
	for i := range b.strs {
		if !b.IsNull[i] {
			b.ptrs[i] = &b.strs[i]
		}
	}
	return c.Append(b.ptrs)
}

// decColumn writes a Dec: its data is the Native column.
func decColumn(buf *Dec, t schema.CHType) NativeFn {
	if t.Kind != schema.CHDecimal || DecimalWidth(t.Precision) != buf.Width || t.Scale != buf.Scale {
		return nil
	}
	return func(e *chnative.Encoder, sel []uint32) error {
		nullMap(e, &buf.Nulls, sel)
		switch {
		case sel != nil:
			if len(buf.Data) > 0 {
				e.Gather(buf.Data, buf.Width, sel)
			}
		case len(buf.Data) > 0:
			e.Bytes(buf.Data)
		}
		return nil
	}
}

// DecimalWidth is the stored width in bytes of Decimal(precision, s), 0
// beyond Decimal256.
func DecimalWidth(precision int) int {
	switch {
	case precision <= 9:
		return 4
	case precision <= 18:
		return 8
	case precision <= 38:
		return 16
	case precision <= 76:
		return 32
	}
	return 0
}
