package column

import (
	"fmt"
	"unsafe"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
)

// NativeFn writes one column's data in ClickHouse's Native format: the rows
// listed in sel, in that order, or every row when sel is nil.
type NativeFn func(e *chnative.Encoder, sel []uint32) error

// chWidth is the byte width of a fixed-width ClickHouse type (0: not one).
func chWidth(k schema.CHKind) uintptr {
	switch k {
	case schema.CHInt8, schema.CHUInt8, schema.CHEnum8, schema.CHBool:
		return 1
	case schema.CHInt16, schema.CHUInt16, schema.CHEnum16, schema.CHDate:
		return 2
	case schema.CHInt32, schema.CHUInt32, schema.CHFloat32, schema.CHDateTime, schema.CHDate32:
		return 4
	case schema.CHInt64, schema.CHUInt64, schema.CHFloat64, schema.CHDateTime64:
		return 8
	}
	return 0
}

// Native picks the encoder for a buffer written as type t, or nil.
func Native(buf Buf, t schema.CHType) NativeFn {
	switch buf := buf.(type) {
	case *Num[int8]:
		return rawColumn(buf, t)
	case *Num[int16]:
		return rawColumn(buf, t)
	case *Num[int32]:
		return rawColumn(buf, t)
	case *Num[uint8]:
		return rawColumn(buf, t)
	case *Num[uint16]:
		return rawColumn(buf, t)
	case *Num[uint32]:
		return rawColumn(buf, t)
	case *Num[uint64]:
		return rawColumn(buf, t)
	case *Num[float32]:
		return rawColumn(buf, t)
	case *Num[float64]:
		return rawColumn(buf, t)
	case *Num[bool]:
		return rawColumn(buf, t)
	case *Num[int64]:
		if t.Kind == schema.CHDateTime { // held as Unix seconds
			return convertedColumn(&buf.Nulls, &buf.Vals, func(e *chnative.Encoder, s int64) { e.Uint32(storedDateTime(s)) })
		}
		return rawColumn(buf, t)
	case *Time:
		return timeColumn(buf, t)
	case *Str:
		return stringColumn(buf, t)
	case *Dec:
		return decColumn(buf, t)
	case *Arr:
		if t.Kind != schema.CHArrayString || t.Nullable {
			return nil
		}
		return func(e *chnative.Encoder, sel []uint32) error {
			if sel == nil {
				for _, n := range buf.RowEnds {
					e.Uint64(uint64(n))
				}
				return writeStrings(e, &buf.Str, nil)
			}
			// Offsets count the selected rows' elements; then the
			// elements themselves.
			var total uint64
			for _, r := range sel {
				total += uint64(buf.RowEnds[r] - rowStart(buf.RowEnds, r))
				e.Uint64(total)
			}
			ends := buf.valueEnds()
			for _, r := range sel {
				for el := rowStart(buf.RowEnds, r); el < buf.RowEnds[r]; el++ {
					e.StringBytes(buf.value(ends, el))
				}
			}
			return nil
		}
	}
	return nil
}

// rawColumn writes values whose memory layout is the ClickHouse type's.
func rawColumn[T any](buf *Num[T], t schema.CHType) NativeFn {
	var z T
	if w := chWidth(t.Kind); w == 0 || w != unsafe.Sizeof(z) || t.Kind == schema.CHDateTime || t.Kind == schema.CHDate || t.Kind == schema.CHDate32 || t.Kind == schema.CHDateTime64 {
		return nil
	}
	size := int(unsafe.Sizeof(z))
	return func(e *chnative.Encoder, sel []uint32) error {
		nullMap(e, &buf.Nulls, sel)
		switch {
		case sel != nil:
			if len(buf.Vals) > 0 {
				e.Gather(unsafe.Slice((*byte)(unsafe.Pointer(&buf.Vals[0])), len(buf.Vals)*size), size, sel)
			}
		case len(buf.Vals) > 0:
			e.Bytes(unsafe.Slice((*byte)(unsafe.Pointer(&buf.Vals[0])), len(buf.Vals)*size))
		}
		return nil
	}
}

// convertedColumn writes values that need converting one by one. It takes
// the buffer's slice by pointer: the encoder is built once per block, and
// the slice grows after.
func convertedColumn[T any](n *Nulls, vals *[]T, put func(e *chnative.Encoder, v T)) NativeFn {
	return func(e *chnative.Encoder, sel []uint32) error {
		nullMap(e, n, sel)
		if sel == nil {
			for _, v := range *vals {
				put(e, v)
			}
			return nil
		}
		for _, r := range sel {
			put(e, (*vals)[r])
		}
		return nil
	}
}

// rowStart is where row r's span begins in a buffer of cumulative ends.
func rowStart(ends []int, r uint32) int {
	if r == 0 {
		return 0
	}
	return ends[r-1]
}

// nullMap writes a Nullable column's null map: one byte per row, 1 for
// NULL (a Go bool is one byte, 0 or 1). NULL rows hold a zero value in the
// data that follows.
func nullMap(e *chnative.Encoder, n *Nulls, sel []uint32) {
	switch {
	case !n.Nullable:
	case sel != nil:
		if len(n.IsNull) > 0 {
			e.Gather(unsafe.Slice((*byte)(unsafe.Pointer(&n.IsNull[0])), len(n.IsNull)), 1, sel)
		}
	case len(n.IsNull) > 0:
		e.Bytes(unsafe.Slice((*byte)(unsafe.Pointer(&n.IsNull[0])), len(n.IsNull)))
	}
}

// timeColumn writes Date, Date32 and DateTime64 values held as Unix
// microseconds.
func timeColumn(buf *Time, t schema.CHType) NativeFn {
	switch t.Kind {
	case schema.CHDate:
		return convertedColumn(&buf.Nulls, &buf.Vals, func(e *chnative.Encoder, us int64) { e.Uint16(storedDate(us)) })
	case schema.CHDate32:
		return convertedColumn(&buf.Nulls, &buf.Vals, func(e *chnative.Encoder, us int64) { e.Uint32(storedDate32(us)) })
	case schema.CHDateTime64:
		if t.Scale < 0 || t.Scale > 9 {
			return nil
		}
		ticks := dateTime64Ticks(t.Scale)
		return convertedColumn(&buf.Nulls, &buf.Vals, func(e *chnative.Encoder, us int64) { e.Uint64(ticks(us)) })
	}
	return nil
}

// The stored form of values the buffers hold otherwise. The encoders write
// it and the key hasher hashes it (ClickHouse hashes what it stores), so
// the two always agree.

// storedDateTime is a DateTime held as Unix seconds: UInt32.
func storedDateTime(s int64) uint32 { return uint32(s) }

// storedDate is a Date held as Unix microseconds: UInt16 days.
func storedDate(us int64) uint16 { return uint16(us / DayMicros) }

// storedDate32 is a Date32 held as Unix microseconds: Int32 days.
func storedDate32(us int64) uint32 { return uint32(int32(us / DayMicros)) }

// dateTime64Ticks converts Unix microseconds to DateTime64(scale) ticks.
func dateTime64Ticks(scale int) func(us int64) uint64 {
	mul, div := int64(1), int64(1)
	for p := scale; p > 6; p-- {
		mul *= 10
	}
	for p := scale; p < 6; p++ {
		div *= 10
	}
	return func(us int64) uint64 { return uint64(us * mul / div) }
}

func stringColumn(buf *Str, t schema.CHType) NativeFn {
	switch t.Kind {
	case schema.CHString:
		return func(e *chnative.Encoder, sel []uint32) error {
			nullMap(e, &buf.Nulls, sel)
			return writeStrings(e, buf, sel)
		}
	case schema.CHFixedString:
		n := t.Length
		return eachString(buf, func(e *chnative.Encoder, v []byte) error {
			if len(v) > n {
				return fmt.Errorf("a value of %d bytes in a FixedString(%d)", len(v), n)
			}
			e.Bytes(v)
			e.Zeros(n - len(v))
			return nil
		})
	case schema.CHUUID, schema.CHIPv4, schema.CHIPv6:
		return fixedBinColumn(buf, t)
	}
	return nil
}

// eachString writes a column of byte strings value by value.
func eachString(buf *Str, put func(e *chnative.Encoder, v []byte) error) NativeFn {
	return func(e *chnative.Encoder, sel []uint32) error {
		nullMap(e, &buf.Nulls, sel)
		if sel == nil {
			it := buf.iter()
			for range buf.n {
				if err := put(e, it.next()); err != nil {
					return err
				}
			}
			return nil
		}
		ends := buf.valueEnds()
		for _, r := range sel {
			if err := put(e, buf.value(ends, int(r))); err != nil {
				return err
			}
		}
		return nil
	}
}

func writeStrings(e *chnative.Encoder, buf *Str, sel []uint32) error {
	if sel != nil {
		ends := buf.valueEnds()
		for _, r := range sel {
			e.StringBytes(buf.value(ends, int(r)))
		}
		return nil
	}
	// The records are the column's Native data as they lie.
	buf.Chunks(e.Direct)
	return nil
}
