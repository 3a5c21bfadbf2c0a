package column

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/mysqldecimal"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-faster/city"
)

// cityHash64 of column values as ClickHouse computes it, for the sharding
// key hasher (block.KeyHasher, which says how ClickHouse hashes each type),
// and the probe values that check a server agrees.

// HashArg folds one argument into h: the column, or its reinterpretAsString.
func HashArg(buf Buf, t schema.CHType, raw, first bool, h []uint64) error {
	if !raw {
		return hashColumn(buf, t, first, h)
	}
	db, ok := buf.(*Dec)
	if !ok || t.Kind != schema.CHDecimal {
		return fmt.Errorf("no reinterpretAsString hash for %s", t)
	}
	w := db.Width
	for i := range db.Len() {
		b := db.Data[i*w : (i+1)*w]
		n := w // reinterpretAsString drops trailing zero bytes
		for n > 0 && b[n-1] == 0 {
			n--
		}
		put(h, i, first, city.CH64(b[:n]))
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
func hashColumn(buf Buf, t schema.CHType, first bool, h []uint64) error {
	switch buf := buf.(type) {
	case *Num[int8]:
		hashInts(buf.Vals, func(v int8) uint64 { return uint64(uint8(v)) }, first, h)
	case *Num[int16]:
		hashInts(buf.Vals, func(v int16) uint64 { return uint64(uint16(v)) }, first, h)
	case *Num[int32]:
		hashInts(buf.Vals, func(v int32) uint64 { return uint64(uint32(v)) }, first, h)
	case *Num[int64]:
		if t.Kind == schema.CHDateTime { // held as Unix seconds
			hashInts(buf.Vals, func(v int64) uint64 { return uint64(storedDateTime(v)) }, first, h)
		} else {
			hashInts(buf.Vals, func(v int64) uint64 { return uint64(v) }, first, h)
		}
	case *Num[uint8]:
		hashInts(buf.Vals, func(v uint8) uint64 { return uint64(v) }, first, h)
	case *Num[uint16]:
		hashInts(buf.Vals, func(v uint16) uint64 { return uint64(v) }, first, h)
	case *Num[uint32]:
		hashInts(buf.Vals, func(v uint32) uint64 { return uint64(v) }, first, h)
	case *Num[uint64]:
		hashInts(buf.Vals, func(v uint64) uint64 { return v }, first, h)
	case *Num[float32]:
		hashInts(buf.Vals, func(v float32) uint64 { return uint64(math.Float32bits(v)) }, first, h)
	case *Num[float64]:
		hashInts(buf.Vals, math.Float64bits, first, h)
	case *Num[bool]:
		hashInts(buf.Vals, func(v bool) uint64 {
			if v {
				return 1
			}
			return 0
		}, first, h)
	case *Time:
		switch t.Kind {
		case schema.CHDate:
			hashInts(buf.Vals, func(us int64) uint64 { return uint64(storedDate(us)) }, first, h)
		case schema.CHDate32:
			hashInts(buf.Vals, func(us int64) uint64 { return uint64(storedDate32(us)) }, first, h)
		case schema.CHDateTime64:
			hashInts(buf.Vals, dateTime64Ticks(t.Scale), first, h)
		default:
			return fmt.Errorf("no hash for %s", t)
		}
	case *Str:
		return hashStrings(buf, t, first, h)
	case *Dec:
		if t.Kind != schema.CHDecimal {
			return fmt.Errorf("no hash for %s", t)
		}
		// The stored integer: up to 8 bytes hash as an integer, wider
		// ones as their bytes.
		w := buf.Width
		for i := range buf.Len() {
			b := buf.Data[i*w : (i+1)*w]
			switch w {
			case 4:
				put(h, i, first, intHash64(uint64(binary.LittleEndian.Uint32(b))))
			case 8:
				put(h, i, first, intHash64(binary.LittleEndian.Uint64(b)))
			default:
				put(h, i, first, city.CH64(b))
			}
		}
	default:
		return fmt.Errorf("no hash for %s", t)
	}
	return nil
}

func hashStrings(buf *Str, t schema.CHType, first bool, h []uint64) error {
	switch t.Kind {
	case schema.CHString, schema.CHFixedString:
	default:
		return fmt.Errorf("no hash for %s", t)
	}
	var pad []byte
	it := buf.iter()
	for i := range buf.n {
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

// Probe fills buf with rows values of type t and returns them as
// ClickHouse literals of that type.
func Probe(buf Buf, t schema.CHType, rows int) ([]string, error) {
	lit := func(s string) string { return "CAST(" + s + " AS " + t.String() + ")" }
	out := make([]string, 0, rows)
	ints := []int64{0, 1, -1, 0x5a5a5a5a5a5a5a5a}
	uints := []uint64{0, 1, math.MaxUint64, 0xa5a5a5a5a5a5a5a5}
	switch buf := buf.(type) {
	case *Num[int8]:
		probeInts(buf, ints, rows, &out, lit, t)
	case *Num[int16]:
		probeInts(buf, ints, rows, &out, lit, t)
	case *Num[int32]:
		probeInts(buf, ints, rows, &out, lit, t)
	case *Num[int64]:
		if t.Kind == schema.CHDateTime {
			for r := range rows {
				s := int64(1577923200 + r*86461)
				buf.Add(s)
				out = append(out, lit("toUInt32("+strconv.FormatInt(s, 10)+")"))
			}
			return out, nil
		}
		probeInts(buf, ints, rows, &out, lit, t)
	case *Num[uint8]:
		probeUints(buf, uints, rows, &out, lit)
	case *Num[uint16]:
		probeUints(buf, uints, rows, &out, lit)
	case *Num[uint32]:
		probeUints(buf, uints, rows, &out, lit)
	case *Num[uint64]:
		probeUints(buf, uints, rows, &out, lit)
	case *Num[float32]:
		for r := range rows {
			v := float32(r) * 1.25
			buf.Add(v)
			out = append(out, lit("toFloat32("+strconv.FormatFloat(float64(v), 'g', -1, 32)+")"))
		}
	case *Num[float64]:
		for r := range rows {
			v := float64(r)*1.125 - 1
			buf.Add(v)
			out = append(out, lit("toFloat64("+strconv.FormatFloat(v, 'g', -1, 64)+")"))
		}
	case *Num[bool]:
		for r := range rows {
			buf.Add(r%2 == 1)
			out = append(out, lit(strconv.Itoa(r%2)))
		}
	case *Time:
		for r := range rows {
			days := int64(18263 + r*397)
			buf.Add(days * DayMicros)
			switch t.Kind {
			case schema.CHDate:
				out = append(out, lit("toUInt16("+strconv.FormatInt(days, 10)+")"))
			case schema.CHDate32:
				out = append(out, lit("toInt32("+strconv.FormatInt(days, 10)+")"))
			default: // DateTime64, from seconds
				out = append(out, lit("toUInt32("+strconv.FormatInt(days*86400, 10)+")"))
			}
		}
	case *Dec:
		for r := range rows {
			// Up to r+1 integer digits and two fraction digits, as the
			// type allows; every other one negative.
			s := "0"
			if n := min(t.Precision-t.Scale, r+1); n > 0 {
				s = strings.Repeat("1", n)
			}
			if t.Scale > 0 {
				s += "." + strings.Repeat("7", min(t.Scale, 2))
			}
			if r%2 == 1 {
				s = "-" + s
			}
			v, err := mysqldecimal.Parse([]byte(s), t.Scale)
			if err != nil {
				return nil, err
			}
			buf.Add(v)
			out = append(out, lit(schema.QuoteString(s)))
		}
	case *Str:
		for r := range rows {
			var s string
			switch t.Kind {
			case schema.CHFixedString:
				s = "ab\x00c"[:min(t.Length, r)]
			default:
				s = strings.Repeat("binlog2ch-", r*4) + "\x00é"
			}
			buf.AddString(s)
			out = append(out, lit(schema.QuoteString(s)))
		}
	default:
		return nil, fmt.Errorf("no probe for %s", t)
	}
	return out, nil
}

// probeInts fills buf with signed values: the Enum's labels for an Enum,
// vals truncated to the width (as stored) otherwise.
func probeInts[T int8 | int16 | int32 | int64](buf *Num[T], vals []int64, rows int, out *[]string, lit func(string) string, t schema.CHType) {
	for r := range rows {
		if t.Kind == schema.CHEnum8 || t.Kind == schema.CHEnum16 {
			e := t.Enum[r%len(t.Enum)]
			buf.Add(T(e.Value))
			*out = append(*out, lit(schema.QuoteString(e.Label)))
			continue
		}
		v := T(vals[r%len(vals)])
		buf.Add(v)
		*out = append(*out, lit("toInt64("+strconv.FormatInt(int64(v), 10)+")"))
	}
}

func probeUints[T uint8 | uint16 | uint32 | uint64](buf *Num[T], vals []uint64, rows int, out *[]string, lit func(string) string) {
	for r := range rows {
		v := T(vals[r%len(vals)])
		buf.Add(v)
		*out = append(*out, lit("toUInt64("+strconv.FormatUint(uint64(v), 10)+")"))
	}
}
