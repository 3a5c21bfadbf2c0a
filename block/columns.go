package block

import (
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// colBuf is one column of a Block: values appended row by row, without a
// per-value allocation, and handed to clickhouse-go as one slice per flush.
type colBuf interface {
	appendNull()
	len() int
	truncate(n int)
	reset()
	size() int // bytes held, for batch.max_bytes
	appendTo(c driver.BatchColumn) error
	// scatter appends value i to dst[to[i]], each dst a buffer of the
	// same type (a block split by shard).
	scatter(to []uint32, dst []colBuf)
}

// nulls tracks NULLs of a Nullable column (nil for NOT NULL ones).
type nulls struct {
	nullable bool
	isNull   []bool
}

func (n *nulls) isNullable() bool { return n.nullable }

func (n *nulls) mark(null bool) {
	if n.nullable {
		n.isNull = append(n.isNull, null)
	}
}

// numBuf holds fixed-width values: integers, floats, Enum indexes, Bool,
// DateTime seconds.
type numBuf[T any] struct {
	nulls
	vals []T
	ptrs []*T // scratch for Nullable hand-off: pointers into vals
}

func (b *numBuf[T]) add(v T)     { b.vals = append(b.vals, v); b.mark(false) }
func (b *numBuf[T]) appendNull() { var z T; b.vals = append(b.vals, z); b.mark(true) }
func (b *numBuf[T]) len() int    { return len(b.vals) }
func (b *numBuf[T]) truncate(n int) {
	b.vals = b.vals[:n]
	if b.nullable {
		b.isNull = b.isNull[:n]
	}
}
func (b *numBuf[T]) reset() { b.truncate(0) }
func (b *numBuf[T]) size() int {
	var z T
	return len(b.vals) * int(unsafe.Sizeof(z))
}
func (b *numBuf[T]) scatter(to []uint32, dst []colBuf) {
	ds := make([]*numBuf[T], len(dst))
	for i, d := range dst {
		ds[i] = d.(*numBuf[T])
	}
	scatterNums(b, to, ds)
}

func scatterNums[T any](b *numBuf[T], to []uint32, ds []*numBuf[T]) {
	for i, v := range b.vals {
		d := ds[to[i]]
		d.vals = append(d.vals, v)
	}
	scatterNulls(&b.nulls, to, func(p int) *nulls { return &ds[p].nulls })
}

// scatterNulls splits a Nullable column's null map like its values.
func scatterNulls(n *nulls, to []uint32, part func(p int) *nulls) {
	if !n.nullable {
		return
	}
	for i, null := range n.isNull {
		d := part(int(to[i]))
		d.isNull = append(d.isNull, null)
	}
}

func (b *numBuf[T]) appendTo(c driver.BatchColumn) error {
	if !b.nullable {
		return c.Append(b.vals)
	}
	if cap(b.ptrs) < len(b.vals) {
		b.ptrs = make([]*T, 0, len(b.vals))
	}
	b.ptrs = b.ptrs[:0]
	for i := range b.vals {
		if b.isNull[i] {
			b.ptrs = append(b.ptrs, nil)
		} else {
			b.ptrs = append(b.ptrs, &b.vals[i])
		}
	}
	return c.Append(b.ptrs)
}

// strBuf holds byte strings in one arena: appending copies the bytes (the
// binlog event buffer they come from is reused), and the hand-off points
// strings into the arena instead of allocating each.
type strBuf struct {
	nulls
	arena []byte
	ends  []int
	strs  []string  // scratch for the hand-off
	ptrs  []*string // scratch for Nullable hand-off
}

func (b *strBuf) addString(s string) { b.arena = append(b.arena, s...); b.end() }
func (b *strBuf) addBytes(p []byte)  { b.arena = append(b.arena, p...); b.end() }
func (b *strBuf) end()               { b.ends = append(b.ends, len(b.arena)); b.mark(false) }
func (b *strBuf) appendNull()        { b.ends = append(b.ends, len(b.arena)); b.mark(true) }
func (b *strBuf) len() int           { return len(b.ends) }
func (b *strBuf) truncate(n int) {
	b.ends = b.ends[:n]
	if n == 0 {
		b.arena = b.arena[:0]
	} else {
		b.arena = b.arena[:b.ends[n-1]]
	}
	if b.nullable {
		b.isNull = b.isNull[:n]
	}
}
func (b *strBuf) reset()    { b.truncate(0) }
func (b *strBuf) size() int { return len(b.arena) + 8*len(b.ends) }

func (b *strBuf) scatter(to []uint32, dst []colBuf) {
	ds := make([]*strBuf, len(dst))
	for i, d := range dst {
		ds[i] = d.(*strBuf)
	}
	scatterStrings(b, to, ds)
}

func scatterStrings(b *strBuf, to []uint32, ds []*strBuf) {
	start := 0
	for i, end := range b.ends {
		d := ds[to[i]]
		d.arena = append(d.arena, b.arena[start:end]...)
		d.ends = append(d.ends, len(d.arena))
		start = end
	}
	scatterNulls(&b.nulls, to, func(p int) *nulls { return &ds[p].nulls })
}

// strings returns the values as strings pointing into the arena, valid
// until the next append or reset.
func (b *strBuf) strings() []string {
	if cap(b.strs) < len(b.ends) {
		b.strs = make([]string, 0, len(b.ends)) // exact: no growth copies
	}
	b.strs = b.strs[:0]
	start := 0
	for _, end := range b.ends {
		if end == start {
			b.strs = append(b.strs, "")
		} else {
			b.strs = append(b.strs, unsafe.String(&b.arena[start], end-start))
		}
		start = end
	}
	return b.strs
}

func (b *strBuf) appendTo(c driver.BatchColumn) error {
	// The scratch slices are dropped after the hand-off: kept, they would
	// hold 16-24 bytes per value in every idle block.
	defer func() { b.strs, b.ptrs = nil, nil }()
	strs := b.strings()
	if !b.nullable {
		return c.Append(strs)
	}
	if cap(b.ptrs) < len(strs) {
		b.ptrs = make([]*string, 0, len(strs))
	}
	b.ptrs = b.ptrs[:0]
	for i := range strs {
		if b.isNull[i] {
			b.ptrs = append(b.ptrs, nil)
		} else {
			b.ptrs = append(b.ptrs, &strs[i])
		}
	}
	return c.Append(b.ptrs)
}

// timeBuf holds Date, Date32 and DateTime64 values as Unix microseconds
// (Date: midnight UTC); clickhouse-go takes them as time.Time.
type timeBuf struct {
	numBuf[int64]
	times []time.Time
	tptrs []*time.Time
}

func (b *timeBuf) scatter(to []uint32, dst []colBuf) {
	ds := make([]*numBuf[int64], len(dst))
	for i, d := range dst {
		ds[i] = &d.(*timeBuf).numBuf
	}
	scatterNums(&b.numBuf, to, ds)
}

func (b *timeBuf) appendTo(c driver.BatchColumn) error {
	defer func() { b.times, b.tptrs = nil, nil }() // see strBuf.appendTo
	if cap(b.times) < len(b.vals) {
		b.times = make([]time.Time, 0, len(b.vals))
	}
	b.times = b.times[:0]
	for _, us := range b.vals {
		b.times = append(b.times, time.UnixMicro(us).UTC())
	}
	if !b.nullable {
		return c.Append(b.times)
	}
	if cap(b.tptrs) < len(b.times) {
		b.tptrs = make([]*time.Time, 0, len(b.times))
	}
	b.tptrs = b.tptrs[:0]
	for i := range b.times {
		if b.isNull[i] {
			b.tptrs = append(b.tptrs, nil)
		} else {
			b.tptrs = append(b.tptrs, &b.times[i])
		}
	}
	return c.Append(b.tptrs)
}

// arrBuf holds Array(String) values (SET as an array).
type arrBuf struct {
	strBuf        // all elements, one after another
	rowEnds []int // element count at the end of each row
	rows    [][]string
}

func (b *arrBuf) endRow()     { b.rowEnds = append(b.rowEnds, len(b.ends)) }
func (b *arrBuf) appendNull() { b.endRow() } // not reached: mapping refuses nullable arrays
func (b *arrBuf) len() int    { return len(b.rowEnds) }
func (b *arrBuf) truncate(n int) {
	b.rowEnds = b.rowEnds[:n]
	elems := 0
	if n > 0 {
		elems = b.rowEnds[n-1]
	}
	b.strBuf.truncate(elems)
}
func (b *arrBuf) reset() { b.truncate(0) }
func (b *arrBuf) scatter(to []uint32, dst []colBuf) {
	start := 0
	for i, end := range b.rowEnds {
		d := dst[to[i]].(*arrBuf)
		from := 0
		if start > 0 {
			from = b.ends[start-1]
		}
		for e := start; e < end; e++ {
			d.arena = append(d.arena, b.arena[from:b.ends[e]]...)
			d.ends = append(d.ends, len(d.arena))
			from = b.ends[e]
		}
		d.rowEnds = append(d.rowEnds, len(d.ends))
		start = end
	}
}

func (b *arrBuf) appendTo(c driver.BatchColumn) error {
	defer func() { b.strs, b.rows = nil, nil }() // see strBuf.appendTo
	strs := b.strings()
	b.rows = b.rows[:0]
	start := 0
	for _, end := range b.rowEnds {
		b.rows = append(b.rows, strs[start:end:end])
		start = end
	}
	return c.Append(b.rows)
}
