package block

import (
	"fmt"
	"math"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/schema"
)

// intPut appends an integer-like value read as unsigned (u) and signed (s).
type intPut func(u uint64, s int64) error

// intShape is how a column's integers are read: signedness and width.
func intShape(c *schema.Column) (unsigned bool, bits uint) {
	bits = map[schema.MySQLKind]uint{schema.KindTinyInt: 8, schema.KindSmallInt: 16, schema.KindMediumInt: 24, schema.KindInt: 32, schema.KindBigInt: 64, schema.KindYear: 16, schema.KindBit: 64}[c.Kind]
	return c.Unsigned || c.Kind == schema.KindYear || c.Kind == schema.KindBit, bits
}

// intConverter handles the integer families, YEAR and BIT. MySQL values
// arrive as Go integers of the column's width; without signedness metadata
// in the binlog an UNSIGNED column's value arrives signed and is
// reinterpreted at the column's width (intValue).
func intConverter(c *schema.Column, t schema.CHType, nl column.Nulls) (column.Buf, intPut) {
	switch t.Kind {
	case schema.CHInt8:
		return signedBuf[int8](nl, math.MinInt8, math.MaxInt8)
	case schema.CHInt16:
		return signedBuf[int16](nl, math.MinInt16, math.MaxInt16)
	case schema.CHInt32:
		return signedBuf[int32](nl, math.MinInt32, math.MaxInt32)
	case schema.CHInt64:
		return signedBuf[int64](nl, math.MinInt64, math.MaxInt64)
	case schema.CHUInt8:
		if c.Kind == schema.KindTinyInt && c.Precision == 1 && !c.Unsigned {
			// TINYINT(1) as a boolean on a server without Bool.
			buf := &column.Num[uint8]{Nulls: nl}
			return buf, func(_ uint64, s int64) error {
				if err := checkBool(s); err != nil {
					return err
				}
				buf.Add(uint8(s))
				return nil
			}
		}
		return unsignedBuf[uint8](nl, math.MaxUint8)
	case schema.CHUInt16:
		return unsignedBuf[uint16](nl, math.MaxUint16)
	case schema.CHUInt32:
		return unsignedBuf[uint32](nl, math.MaxUint32)
	case schema.CHUInt64:
		return unsignedBuf[uint64](nl, math.MaxUint64)
	case schema.CHBool:
		buf := &column.Num[bool]{Nulls: nl}
		return buf, func(_ uint64, s int64) error {
			if err := checkBool(s); err != nil {
				return err
			}
			buf.Add(s == 1)
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

func signedBuf[T int8 | int16 | int32 | int64](nl column.Nulls, lo, hi int64) (column.Buf, intPut) {
	buf := &column.Num[T]{Nulls: nl}
	return buf, func(_ uint64, s int64) error {
		if s < lo || s > hi {
			return errMsg("out of the ClickHouse column's range")
		}
		buf.Add(T(s))
		return nil
	}
}

func unsignedBuf[T uint8 | uint16 | uint32 | uint64](nl column.Nulls, hi uint64) (column.Buf, intPut) {
	buf := &column.Num[T]{Nulls: nl}
	return buf, func(u uint64, _ int64) error {
		if u > hi {
			return errMsg("out of the ClickHouse column's range")
		}
		buf.Add(T(u))
		return nil
	}
}

// enumConverter writes ENUM indexes (in s): MySQL's 1-based index, 0 for
// an invalid value stored as ”.
func enumConverter(c *schema.Column, t schema.CHType, nl column.Nulls) (column.Buf, intPut) {
	labels := c.Labels
	index := enumIndex(labels)
	switch t.Kind {
	case schema.CHEnum8:
		buf := &column.Num[int8]{Nulls: nl}
		return buf, func(_ uint64, s int64) error {
			i, err := index(s)
			if err == nil {
				buf.Add(int8(i))
			}
			return err
		}
	case schema.CHEnum16:
		buf := &column.Num[int16]{Nulls: nl}
		return buf, func(_ uint64, s int64) error {
			i, err := index(s)
			if err == nil {
				buf.Add(int16(i))
			}
			return err
		}
	}
	buf := &column.Str{Nulls: nl}
	return buf, func(_ uint64, s int64) error {
		i, err := index(s)
		if err != nil {
			return err
		}
		if i == 0 {
			buf.AddString("")
		} else {
			buf.AddString(labels[i-1])
		}
		return nil
	}
}

// enumIndex maps MySQL's index of an ENUM value to the index written:
// MySQL's index 0 (an invalid value stored as the empty string) maps to
// the empty label when the column declares one.
func enumIndex(labels []string) func(i int64) (int64, error) {
	zero := int64(0)
	for i, l := range labels {
		if l == "" {
			zero = int64(i + 1)
		}
	}
	return func(i int64) (int64, error) {
		if i < 0 || i > int64(len(labels)) {
			return 0, errMsg(fmt.Sprintf("ENUM index out of range 0..%d", len(labels)))
		}
		if i == 0 {
			i = zero
		}
		return i, nil
	}
}

// setConverter writes SET bitmasks (in u).
func setConverter(c *schema.Column, t schema.CHType, nl column.Nulls) (column.Buf, intPut) {
	labels := c.Labels
	check := func(m uint64) error {
		if len(labels) < 64 && m>>uint(len(labels)) != 0 {
			return errMsg(fmt.Sprintf("SET bitmask has bits beyond its %d labels", len(labels)))
		}
		return nil
	}
	if t.Kind == schema.CHArrayString {
		buf := &column.Arr{}
		return buf, func(m uint64, _ int64) error {
			if err := check(m); err != nil {
				return err
			}
			for i := range labels {
				if m&(1<<uint(i)) != 0 {
					buf.AddString(labels[i])
				}
			}
			buf.EndRow()
			return nil
		}
	}
	buf := &column.Str{Nulls: nl}
	all := len(labels) // every label and comma
	for _, l := range labels {
		all += len(l)
	}
	if len(labels) <= 8 {
		// Every value's text made once (at most 256): a row's is then
		// one copy.
		texts := make([]string, 1<<len(labels))
		for m := range texts {
			var t []byte
			for i := range labels {
				if m&(1<<i) != 0 {
					if m&(1<<i-1) != 0 { // a label before it
						t = append(t, ',')
					}
					t = append(t, labels[i]...)
				}
			}
			texts[m] = string(t)
		}
		return buf, func(m uint64, _ int64) error {
			if m >= uint64(len(texts)) {
				return check(m)
			}
			buf.AddString(texts[m])
			return nil
		}
	}
	return buf, func(m uint64, _ int64) error {
		if err := check(m); err != nil {
			return err
		}
		buf.Room(all)
		first := true
		for i := range labels {
			if m&(1<<uint(i)) != 0 {
				if !first {
					buf.Arena = append(buf.Arena, ',')
				}
				first = false
				buf.Arena = append(buf.Arena, labels[i]...)
			}
		}
		buf.End()
		return nil
	}
}
