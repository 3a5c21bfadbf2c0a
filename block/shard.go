package block

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-faster/city"
)

// KeyHasher computes what ClickHouse's cityHash64(k1, k2, ...) returns for
// each row of a block: the Distributed table's sharding key, so that rows
// sent straight to the shards land where the Distributed table would put
// them. ClickHouse hashes a fixed-width value (up to 8 bytes) as
// intHash64 of its bytes zero-extended to 64 bits, a string as CityHash64
// (v1.0.2) of its bytes, and folds each further argument in with
// Hash128to64. KeyHashProbe checks a server agrees before the hasher is
// trusted with its rows.
type KeyHasher struct {
	cols []int  // target column indexes, in the hash's argument order
	raw  []bool // per argument: reinterpretAsString(column)
	t    *schema.Target
}

// KeyArg is one argument of the sharding key's cityHash64: a column, or
// reinterpretAsString of a Decimal column (the stored integer's
// little-endian bytes without trailing zero bytes), which is how a server
// whose cityHash64 refuses Decimal shards by one.
type KeyArg struct {
	Column      string
	Reinterpret bool
}

// NewKeyHasher returns the hasher of cityHash64 over the given arguments,
// or an error naming a column it cannot hash as ClickHouse does.
func NewKeyHasher(t *schema.Target, args []KeyArg) (*KeyHasher, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: no sharding key columns", t.FullName())
	}
	k := &KeyHasher{t: t}
	for _, a := range args {
		i := t.ColumnIndex(a.Column)
		if i < 0 {
			return nil, fmt.Errorf("%s: sharding key column %q is not one of the table's columns", t.FullName(), a.Column)
		}
		typ := t.Columns[i].Type
		if !hashable(typ) || a.Reinterpret && typ.Kind != schema.CHDecimal {
			what := typ.String()
			if a.Reinterpret {
				what = "reinterpretAsString of " + what
			}
			return nil, fmt.Errorf("%s: sharding key column %s is %s, which binlog2ch does not hash", t.FullName(), a.Column, what)
		}
		k.cols = append(k.cols, i)
		k.raw = append(k.raw, a.Reinterpret)
	}
	return k, nil
}

// hashable reports whether the hasher knows ClickHouse's hash of type t. A
// NULL hashes to NULL, which the Distributed table places by rules of its
// own: Nullable columns are left to it.
func hashable(t schema.CHType) bool {
	if t.Nullable {
		return false
	}
	switch t.Kind {
	case schema.CHLowCardinalityString, schema.CHArrayString:
		return false
	case schema.CHDecimal:
		return decimalWidth(t.Precision) > 0
	}
	return true
}

// Hashes appends each row's hash to dst[:0] and returns it.
func (k *KeyHasher) Hashes(b *Block, dst []uint64) ([]uint64, error) {
	if b.target != k.t {
		return nil, fmt.Errorf("%s: block and key hasher are for different schemas", k.t.FullName())
	}
	n := b.Rows()
	if cap(dst) < n {
		dst = make([]uint64, n)
	}
	dst = dst[:n]
	for j, ci := range k.cols {
		if err := hashArg(b.cols[ci], k.t.Columns[ci].Type, k.raw[j], j == 0, dst); err != nil {
			return nil, fmt.Errorf("%s: sharding key column %s: %w", k.t.FullName(), k.t.Columns[ci].Name, err)
		}
	}
	return dst, nil
}

// hashArg folds one argument into h: the column, or its reinterpretAsString.
func hashArg(buf colBuf, t schema.CHType, raw, first bool, h []uint64) error {
	if !raw {
		return hashColumn(buf, t, first, h)
	}
	sb, ok := buf.(*strBuf)
	if !ok || t.Kind != schema.CHDecimal {
		return fmt.Errorf("no reinterpretAsString hash for %s", t)
	}
	width := decimalWidth(t.Precision)
	return eachDecimal(sb, t, func(i int, v [4]uint64) {
		b := decimalBytes(v, width)
		n := width // reinterpretAsString drops trailing zero bytes
		for n > 0 && b[n-1] == 0 {
			n--
		}
		put(h, i, first, city.CH64(b[:n]))
	})
}

// eachDecimal calls fn with each row's scaled decimal.
func eachDecimal(buf *strBuf, t schema.CHType, fn func(row int, v [4]uint64)) error {
	it := buf.iter()
	for i := range buf.ends {
		v, err := scaledDecimal(it.next(), t.Scale)
		if err != nil {
			return err
		}
		fn(i, v)
	}
	return nil
}

// intHash64 is ClickHouse's IntHash64Impl: a salted murmur finalizer.
func intHash64(x uint64) uint64 {
	x ^= 0x4CF2D2BAAE6DA887
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// combine is CityHash's Hash128to64 of (h, next): how cityHash64 folds in
// each argument after the first.
func combine(h, next uint64) uint64 {
	const k = 0x9ddfea08eb382d69
	a := (h ^ next) * k
	a ^= a >> 47
	b := (next ^ a) * k
	b ^= b >> 47
	return b * k
}

func put(h []uint64, i int, first bool, x uint64) {
	if first {
		h[i] = x
	} else {
		h[i] = combine(h[i], x)
	}
}

// hashInts hashes fixed-width values given as their bits zero-extended.
func hashInts[T any](vals []T, bits func(T) uint64, first bool, h []uint64) {
	for i, v := range vals {
		put(h, i, first, intHash64(bits(v)))
	}
}

// hashColumn folds one column's values into h.
func hashColumn(buf colBuf, t schema.CHType, first bool, h []uint64) error {
	switch buf := buf.(type) {
	case *numBuf[int8]:
		hashInts(buf.vals, func(v int8) uint64 { return uint64(uint8(v)) }, first, h)
	case *numBuf[int16]:
		hashInts(buf.vals, func(v int16) uint64 { return uint64(uint16(v)) }, first, h)
	case *numBuf[int32]:
		hashInts(buf.vals, func(v int32) uint64 { return uint64(uint32(v)) }, first, h)
	case *numBuf[int64]:
		if t.Kind == schema.CHDateTime { // held as Unix seconds
			hashInts(buf.vals, func(v int64) uint64 { return uint64(storedDateTime(v)) }, first, h)
		} else {
			hashInts(buf.vals, func(v int64) uint64 { return uint64(v) }, first, h)
		}
	case *numBuf[uint8]:
		hashInts(buf.vals, func(v uint8) uint64 { return uint64(v) }, first, h)
	case *numBuf[uint16]:
		hashInts(buf.vals, func(v uint16) uint64 { return uint64(v) }, first, h)
	case *numBuf[uint32]:
		hashInts(buf.vals, func(v uint32) uint64 { return uint64(v) }, first, h)
	case *numBuf[uint64]:
		hashInts(buf.vals, func(v uint64) uint64 { return v }, first, h)
	case *numBuf[float32]:
		hashInts(buf.vals, func(v float32) uint64 { return uint64(math.Float32bits(v)) }, first, h)
	case *numBuf[float64]:
		hashInts(buf.vals, math.Float64bits, first, h)
	case *numBuf[bool]:
		hashInts(buf.vals, func(v bool) uint64 {
			if v {
				return 1
			}
			return 0
		}, first, h)
	case *timeBuf:
		switch t.Kind {
		case schema.CHDate:
			hashInts(buf.vals, func(us int64) uint64 { return uint64(storedDate(us)) }, first, h)
		case schema.CHDate32:
			hashInts(buf.vals, func(us int64) uint64 { return uint64(storedDate32(us)) }, first, h)
		case schema.CHDateTime64:
			hashInts(buf.vals, dateTime64Ticks(t.Scale), first, h)
		default:
			return fmt.Errorf("no hash for %s", t)
		}
	case *strBuf:
		return hashStrings(buf, t, first, h)
	default:
		return fmt.Errorf("no hash for %s", t)
	}
	return nil
}

func hashStrings(buf *strBuf, t schema.CHType, first bool, h []uint64) error {
	switch t.Kind {
	case schema.CHDecimal:
		// The stored integer: up to 8 bytes hash as an integer, wider
		// ones as their bytes.
		width := decimalWidth(t.Precision)
		return eachDecimal(buf, t, func(i int, v [4]uint64) {
			b := decimalBytes(v, width)
			if width <= 8 {
				put(h, i, first, intHash64(binary.LittleEndian.Uint64(b[:8])))
			} else {
				put(h, i, first, city.CH64(b[:width]))
			}
		})
	case schema.CHString, schema.CHFixedString:
	default:
		return fmt.Errorf("no hash for %s", t)
	}
	var pad []byte
	it := buf.iter()
	for i := range buf.ends {
		v := it.next()
		if t.Kind == schema.CHFixedString {
			// Stored padded with zero bytes to the full length.
			if len(v) > t.Length {
				return fmt.Errorf("a value of %d bytes in a FixedString(%d)", len(v), t.Length)
			}
			pad = append(append(pad[:0], v...), make([]byte, t.Length-len(v))...)
			v = pad
		}
		put(h, i, first, city.CH64(v))
	}
	return nil
}

// KeyHashProbe is a query that has the server compute cityHash64 over a
// few values of each key column's type, with the hashes the hasher gives
// for the same values. Equal results mean the server hashes these types as
// the hasher does; a server that cannot hash one of them fails the query.
func (k *KeyHasher) KeyHashProbe() (query string, want []uint64, err error) {
	const rows = 4
	lits := make([][]string, rows)
	want = make([]uint64, rows)
	for j, ci := range k.cols {
		c := k.t.Columns[ci]
		buf := NewBlock(k.t).cols[ci] // one per argument: a column may repeat
		vals, err := probeValues(buf, c.Type, rows)
		if err != nil {
			return "", nil, fmt.Errorf("%s: sharding key column %s: %w", k.t.FullName(), c.Name, err)
		}
		for r := range rows {
			if k.raw[j] {
				vals[r] = "reinterpretAsString(" + vals[r] + ")"
			}
			lits[r] = append(lits[r], vals[r])
		}
		if err := hashArg(buf, c.Type, k.raw[j], j == 0, want); err != nil {
			return "", nil, err
		}
	}
	// One SELECT per row, in order: UNION ALL would not keep it.
	var q strings.Builder
	q.WriteString("SELECT [")
	for r := range rows {
		if r > 0 {
			q.WriteString(", ")
		}
		q.WriteString("cityHash64(")
		q.WriteString(strings.Join(lits[r], ", "))
		q.WriteString(")")
	}
	q.WriteString("]")
	return q.String(), want, nil
}

// probeValues fills buf with rows values of type t and returns them as
// ClickHouse literals of that type.
func probeValues(buf colBuf, t schema.CHType, rows int) ([]string, error) {
	lit := func(s string) string { return "CAST(" + s + " AS " + t.String() + ")" }
	out := make([]string, 0, rows)
	ints := []int64{0, 1, -1, 0x5a5a5a5a5a5a5a5a}
	uints := []uint64{0, 1, math.MaxUint64, 0xa5a5a5a5a5a5a5a5}
	switch buf := buf.(type) {
	case *numBuf[int8]:
		probeInts(buf, ints, rows, &out, lit, t)
	case *numBuf[int16]:
		probeInts(buf, ints, rows, &out, lit, t)
	case *numBuf[int32]:
		probeInts(buf, ints, rows, &out, lit, t)
	case *numBuf[int64]:
		if t.Kind == schema.CHDateTime {
			for r := range rows {
				s := int64(1577923200 + r*86461)
				buf.add(s)
				out = append(out, lit("toUInt32("+strconv.FormatInt(s, 10)+")"))
			}
			return out, nil
		}
		probeInts(buf, ints, rows, &out, lit, t)
	case *numBuf[uint8]:
		probeUints(buf, uints, rows, &out, lit)
	case *numBuf[uint16]:
		probeUints(buf, uints, rows, &out, lit)
	case *numBuf[uint32]:
		probeUints(buf, uints, rows, &out, lit)
	case *numBuf[uint64]:
		probeUints(buf, uints, rows, &out, lit)
	case *numBuf[float32]:
		for r := range rows {
			v := float32(r) * 1.25
			buf.add(v)
			out = append(out, lit("toFloat32("+strconv.FormatFloat(float64(v), 'g', -1, 32)+")"))
		}
	case *numBuf[float64]:
		for r := range rows {
			v := float64(r)*1.125 - 1
			buf.add(v)
			out = append(out, lit("toFloat64("+strconv.FormatFloat(v, 'g', -1, 64)+")"))
		}
	case *numBuf[bool]:
		for r := range rows {
			buf.add(r%2 == 1)
			out = append(out, lit(strconv.Itoa(r%2)))
		}
	case *timeBuf:
		for r := range rows {
			days := int64(18263 + r*397)
			buf.add(days * dayMicros)
			switch t.Kind {
			case schema.CHDate:
				out = append(out, lit("toUInt16("+strconv.FormatInt(days, 10)+")"))
			case schema.CHDate32:
				out = append(out, lit("toInt32("+strconv.FormatInt(days, 10)+")"))
			default: // DateTime64, from seconds
				out = append(out, lit("toUInt32("+strconv.FormatInt(days*86400, 10)+")"))
			}
		}
	case *strBuf:
		for r := range rows {
			var s string
			switch t.Kind {
			case schema.CHDecimal:
				// Up to r+1 integer digits and two fraction digits, as
				// the type allows; every other one negative.
				s = "0"
				if n := min(t.Precision-t.Scale, r+1); n > 0 {
					s = strings.Repeat("1", n)
				}
				if t.Scale > 0 {
					s += "." + strings.Repeat("7", min(t.Scale, 2))
				}
				if r%2 == 1 {
					s = "-" + s
				}
				buf.addString(s)
				out = append(out, lit(schema.QuoteString(s)))
				continue
			case schema.CHFixedString:
				s = "ab\x00c"[:min(t.Length, r)]
			default:
				s = strings.Repeat("binlog2ch-", r*4) + "\x00é"
			}
			buf.addString(s)
			out = append(out, lit(schema.QuoteString(s)))
		}
	default:
		return nil, fmt.Errorf("no probe for %s", t)
	}
	return out, nil
}

// probeInts fills buf with signed values: the Enum's labels for an Enum,
// vals truncated to the width (as stored) otherwise.
func probeInts[T int8 | int16 | int32 | int64](buf *numBuf[T], vals []int64, rows int, out *[]string, lit func(string) string, t schema.CHType) {
	for r := range rows {
		if t.Kind == schema.CHEnum8 || t.Kind == schema.CHEnum16 {
			e := t.Enum[r%len(t.Enum)]
			buf.add(T(e.Value))
			*out = append(*out, lit(schema.QuoteString(e.Label)))
			continue
		}
		v := T(vals[r%len(vals)])
		buf.add(v)
		*out = append(*out, lit("toInt64("+strconv.FormatInt(int64(v), 10)+")"))
	}
}

func probeUints[T uint8 | uint16 | uint32 | uint64](buf *numBuf[T], vals []uint64, rows int, out *[]string, lit func(string) string) {
	for r := range rows {
		v := T(vals[r%len(vals)])
		buf.add(v)
		*out = append(*out, lit("toUInt64("+strconv.FormatUint(uint64(v), 10)+")"))
	}
}

// Scatter appends row i of b to parts[to[i]], for every row: a block split
// by shard. The parts must be blocks of b's target.
func (b *Block) Scatter(to []uint32, parts []*Block) error {
	if len(to) != b.Rows() {
		return fmt.Errorf("%s: %d shard assignments for %d rows", b.target.FullName(), len(to), b.Rows())
	}
	dst := make([]colBuf, len(parts))
	for c, src := range b.cols {
		for p, part := range parts {
			if part.target != b.target {
				return fmt.Errorf("%s: scatter into a block of another schema", b.target.FullName())
			}
			dst[p] = part.cols[c]
		}
		src.scatter(to, dst)
	}
	return nil
}

// Subset returns a new block of the rows sel of b, in b's order.
func (b *Block) Subset(sel []uint32) (*Block, error) {
	// Scatter the selected rows to part 0 and the others to a scratch
	// block: a rare path (a shard whose table differs from the mapping).
	to := make([]uint32, b.Rows())
	for i := range to {
		to[i] = 1
	}
	for _, r := range sel {
		if int(r) >= len(to) {
			return nil, fmt.Errorf("%s: row %d of %d", b.target.FullName(), r, len(to))
		}
		to[r] = 0
	}
	parts := []*Block{NewBlock(b.target), NewBlock(b.target)}
	if err := b.Scatter(to, parts); err != nil {
		return nil, err
	}
	return parts[0], nil
}
