// Package column holds the values of ClickHouse columns in typed buffers
// (numbers, strings in an arena of 1 MiB chunks, dates, arrays), with all
// that reads them: the hand-off to clickhouse-go, Native encoding, the
// scatter of rows to shards and cityHash64 of them as ClickHouse computes
// it. Values arrive already converted (package block turns MySQL's values
// into them): it knows ClickHouse's types and storage, not MySQL's, and
// must not do I/O.
package column

import (
	"slices"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// DayMicros is a day in the Unix microseconds Time holds.
const DayMicros = 86400 * 1e6

// Buf is one column of a Block: values appended row by row, without a
// per-value allocation, and handed to clickhouse-go as one slice per flush.
type Buf interface {
	AppendNull()
	Len() int
	Truncate(n int)
	Reset()
	Size() int // bytes held, for batch.max_bytes
	// Fill is the values and the bytes of variable-length data held;
	// Reserve makes room for as many beyond those held.
	Fill() (values, bytes int)
	Reserve(values, bytes int)
	AppendTo(c driver.BatchColumn) error
	// Scatter appends value i to dst[to[i]], each dst a buffer of the
	// same type (a block split by shard).
	Scatter(to []uint32, dst []Buf)
}

// Nulls tracks NULLs of a Nullable column (nil for NOT NULL ones).
type Nulls struct {
	Nullable bool
	IsNull   []bool
}

func (n *Nulls) IsNullable() bool { return n.Nullable }

func (n *Nulls) mark(null bool) {
	if n.Nullable {
		n.IsNull = append(n.IsNull, null)
	}
}

// Num holds fixed-width values: integers, floats, Enum indexes, Bool,
// DateTime seconds.
type Num[T any] struct {
	Nulls
	Vals []T
	ptrs []*T // scratch for Nullable hand-off: pointers into vals
}

func (b *Num[T]) Add(v T)     { b.Vals = append(b.Vals, v); b.mark(false) }
func (b *Num[T]) AppendNull() { var z T; b.Vals = append(b.Vals, z); b.mark(true) }
func (b *Num[T]) Len() int    { return len(b.Vals) }
func (b *Num[T]) Truncate(n int) {
	b.Vals = b.Vals[:n]
	if b.Nullable {
		b.IsNull = b.IsNull[:n]
	}
}
func (b *Num[T]) Reset()           { b.Truncate(0) }
func (b *Num[T]) Fill() (int, int) { return len(b.Vals), 0 }
func (b *Num[T]) Reserve(values, _ int) {
	b.Vals = slices.Grow(b.Vals, values)
	b.Nulls.Reserve(values)
}

func (n *Nulls) Reserve(values int) {
	if n.Nullable {
		n.IsNull = slices.Grow(n.IsNull, values)
	}
}
func (b *Num[T]) Size() int {
	var z T
	return len(b.Vals) * int(unsafe.Sizeof(z))
}
func (b *Num[T]) Scatter(to []uint32, dst []Buf) {
	ds := make([]*Num[T], len(dst))
	for i, d := range dst {
		ds[i] = d.(*Num[T])
	}
	scatterNums(b, to, ds)
}

func scatterNums[T any](b *Num[T], to []uint32, ds []*Num[T]) {
	for i, v := range b.Vals {
		d := ds[to[i]]
		d.Vals = append(d.Vals, v)
	}
	scatterNulls(&b.Nulls, to, func(p int) *Nulls { return &ds[p].Nulls })
}

// scatterNulls splits a Nullable column's null map like its values.
func scatterNulls(n *Nulls, to []uint32, part func(p int) *Nulls) {
	if !n.Nullable {
		return
	}
	for i, null := range n.IsNull {
		d := part(int(to[i]))
		d.IsNull = append(d.IsNull, null)
	}
}

func (b *Num[T]) AppendTo(c driver.BatchColumn) error {
	if !b.Nullable {
		return c.Append(b.Vals)
	}
	if cap(b.ptrs) < len(b.Vals) {
		b.ptrs = make([]*T, 0, len(b.Vals))
	}
	b.ptrs = b.ptrs[:0]
	for i := range b.Vals {
		if b.IsNull[i] {
			b.ptrs = append(b.ptrs, nil)
		} else {
			b.ptrs = append(b.ptrs, &b.Vals[i])
		}
	}
	return c.Append(b.ptrs)
}

// Str holds byte strings in an arena of chunks: appending copies the
// bytes (the binlog event or result buffer they come from is reused), and
// the hand-off points strings into the arena instead of allocating each.
// A chunk that reached chunkMax bytes is kept as it is and values go on in
// another, so the arena never grows by copying what it holds (a batch's
// string columns are tens of MiB: growth by reallocation copied each
// several times over and left the old copies as garbage), and an emptied
// block keeps its chunks for the next batch. A value never spans chunks.
type Str struct {
	Nulls
	Arena  []byte      // the chunk values are appended to, the last
	base   int         // the offset of arena[0] among the buffer's bytes
	chunks []fullChunk // the chunks before arena, in order
	spare  [][]byte    // emptied chunks, for reuse
	Ends   []int       // each value's end, an offset among the buffer's bytes
	strs   []string    // scratch for the hand-off
	ptrs   []*string   // scratch for Nullable hand-off
}

// fullChunk is a chunk values are no longer appended to.
type fullChunk struct {
	data []byte
	base int
}

// chunkMax is the size of a chunk: large enough that a batch's column
// takes few, small enough to waste little. The first chunk grows by
// appending until it is that large.
const chunkMax = 1 << 20

// sealRoom is the room below which a chunk takes no more values: more
// than any value converters append without asking for room (dates,
// numbers as text), so those never outgrow a chunk.
const sealRoom = 256

func (b *Str) AddString(s string) { b.Room(len(s)); b.Arena = append(b.Arena, s...); b.End() }
func (b *Str) AddBytes(p []byte)  { b.Room(len(p)); b.Arena = append(b.Arena, p...); b.End() }
func (b *Str) End()               { b.closeValue(); b.mark(false) }
func (b *Str) AppendNull()        { b.Ends = append(b.Ends, b.base+len(b.Arena)); b.mark(true) }
func (b *Str) Len() int           { return len(b.Ends) }

// Room makes room for a value of n bytes: when the full-size chunk being
// filled lacks it, the value goes into the next chunk instead of the chunk
// being copied into a larger one. (A value larger than a chunk grows an
// empty one to its size.)
func (b *Str) Room(n int) {
	if cap(b.Arena)-len(b.Arena) < n && cap(b.Arena) >= chunkMax && len(b.Arena) > 0 {
		b.nextChunk()
	}
}

// closeValue ends the value appended to the arena, and the chunk when it
// is about full.
func (b *Str) closeValue() {
	b.Ends = append(b.Ends, b.base+len(b.Arena))
	if cap(b.Arena)-len(b.Arena) < sealRoom && cap(b.Arena) >= chunkMax {
		b.nextChunk()
	}
}

// nextChunk keeps the arena as a full chunk and continues in an empty one.
func (b *Str) nextChunk() {
	b.chunks = append(b.chunks, fullChunk{data: b.Arena, base: b.base})
	b.base += len(b.Arena)
	if n := len(b.spare); n > 0 {
		b.Arena, b.spare = b.spare[n-1], b.spare[:n-1]
	} else {
		b.Arena = make([]byte, 0, chunkMax)
	}
}

// BytesHeld is the bytes of the values.
func (b *Str) BytesHeld() int { return b.base + len(b.Arena) }

func (b *Str) Truncate(n int) {
	b.Ends = b.Ends[:n]
	end := 0
	if n > 0 {
		end = b.Ends[n-1]
	}
	// Back to the chunk the n-th value ended in; the later ones are spare.
	for end < b.base && len(b.chunks) > 0 {
		b.keepSpare(b.Arena)
		last := b.chunks[len(b.chunks)-1]
		b.chunks = b.chunks[:len(b.chunks)-1]
		b.Arena, b.base = last.data, last.base
	}
	b.Arena = b.Arena[:end-b.base]
	if b.Nullable {
		b.IsNull = b.IsNull[:n]
	}
}

// keepSpare keeps an emptied chunk for reuse, unless a large value made
// it much larger than a chunk.
func (b *Str) keepSpare(c []byte) {
	if cap(c) <= 2*chunkMax {
		b.spare = append(b.spare, c[:0])
	}
}

func (b *Str) Reset()           { b.Truncate(0) }
func (b *Str) Fill() (int, int) { return len(b.Ends), b.BytesHeld() }
func (b *Str) Reserve(values, bytes int) {
	if len(b.chunks) == 0 && len(b.spare) == 0 {
		b.Arena = slices.Grow(b.Arena, min(bytes, chunkMax))
	}
	b.Ends = slices.Grow(b.Ends, values)
	b.Nulls.Reserve(values)
}
func (b *Str) Size() int { return b.BytesHeld() + 8*len(b.Ends) }

// value is value i's bytes.
func (b *Str) value(i int) []byte {
	start := 0
	if i > 0 {
		start = b.Ends[i-1]
	}
	return b.span(start, b.Ends[i])
}

// span is the bytes from offset start to end, which lie in one chunk.
func (b *Str) span(start, end int) []byte {
	if start >= b.base {
		return b.Arena[start-b.base : end-b.base]
	}
	// The last full chunk starting at or before start.
	k, _ := slices.BinarySearchFunc(b.chunks, start, func(c fullChunk, off int) int {
		if c.base > off {
			return 1
		}
		return -1
	})
	c := b.chunks[k-1]
	return c.data[start-c.base : end-c.base]
}

// strIter walks a Str's values in order.
type strIter struct {
	b     *Str
	k     int    // the chunk of the next value: chunks[k], or the arena
	i     int    // the next value
	start int    // its start
	data  []byte // chunk k
	base  int    // its offset
	limit int    // the offset of its end
}

func (b *Str) iter() strIter {
	it := strIter{b: b}
	it.load()
	return it
}

// load makes chunk k the current one.
func (it *strIter) load() {
	if it.k < len(it.b.chunks) {
		c := it.b.chunks[it.k]
		it.data, it.base = c.data, c.base
	} else {
		it.data, it.base = it.b.Arena, it.b.base
	}
	it.limit = it.base + len(it.data)
}

// next returns the next value's bytes.
func (it *strIter) next() []byte {
	end := it.b.Ends[it.i]
	it.i++
	for end > it.limit { // the value is in a later chunk
		it.k++
		it.load()
	}
	v := it.data[it.start-it.base : end-it.base]
	it.start = end
	return v
}

func (b *Str) Scatter(to []uint32, dst []Buf) {
	ds := make([]*Str, len(dst))
	for i, d := range dst {
		ds[i] = d.(*Str)
	}
	scatterStrings(b, to, ds)
}

func scatterStrings(b *Str, to []uint32, ds []*Str) {
	it := b.iter()
	for i := range b.Ends {
		d := ds[to[i]]
		d.Arena = append(d.Arena, it.next()...)
		d.closeValue()
	}
	scatterNulls(&b.Nulls, to, func(p int) *Nulls { return &ds[p].Nulls })
}

// Strings returns the values as strings pointing into the arena, valid
// until the next append or reset.
func (b *Str) Strings() []string {
	if cap(b.strs) < len(b.Ends) {
		b.strs = make([]string, 0, len(b.Ends)) // exact: no growth copies
	}
	b.strs = b.strs[:0]
	it := b.iter()
	for range b.Ends {
		v := it.next()
		if len(v) == 0 {
			b.strs = append(b.strs, "")
		} else {
			b.strs = append(b.strs, unsafe.String(&v[0], len(v)))
		}
	}
	return b.strs
}

func (b *Str) AppendTo(c driver.BatchColumn) error {
	// The scratch slices are dropped after the hand-off: kept, they would
	// hold 16-24 bytes per value in every idle block.
	defer func() { b.strs, b.ptrs = nil, nil }()
	strs := b.Strings()
	if !b.Nullable {
		return c.Append(strs)
	}
	if cap(b.ptrs) < len(strs) {
		b.ptrs = make([]*string, 0, len(strs))
	}
	b.ptrs = b.ptrs[:0]
	for i := range strs {
		if b.IsNull[i] {
			b.ptrs = append(b.ptrs, nil)
		} else {
			b.ptrs = append(b.ptrs, &strs[i])
		}
	}
	return c.Append(b.ptrs)
}

// Time holds Date, Date32 and DateTime64 values as Unix microseconds
// (Date: midnight UTC); clickhouse-go takes them as time.Time.
type Time struct {
	Num[int64]
	times []time.Time
	tptrs []*time.Time
}

func (b *Time) Scatter(to []uint32, dst []Buf) {
	ds := make([]*Num[int64], len(dst))
	for i, d := range dst {
		ds[i] = &d.(*Time).Num
	}
	scatterNums(&b.Num, to, ds)
}

func (b *Time) AppendTo(c driver.BatchColumn) error {
	defer func() { b.times, b.tptrs = nil, nil }() // see Str.AppendTo
	if cap(b.times) < len(b.Vals) {
		b.times = make([]time.Time, 0, len(b.Vals))
	}
	b.times = b.times[:0]
	for _, us := range b.Vals {
		b.times = append(b.times, time.UnixMicro(us).UTC())
	}
	if !b.Nullable {
		return c.Append(b.times)
	}
	if cap(b.tptrs) < len(b.times) {
		b.tptrs = make([]*time.Time, 0, len(b.times))
	}
	b.tptrs = b.tptrs[:0]
	for i := range b.times {
		if b.IsNull[i] {
			b.tptrs = append(b.tptrs, nil)
		} else {
			b.tptrs = append(b.tptrs, &b.times[i])
		}
	}
	return c.Append(b.tptrs)
}

// Arr holds Array(String) values (SET as an array).
type Arr struct {
	Str           // all elements, one after another
	RowEnds []int // element count at the end of each row
	rows    [][]string
}

func (b *Arr) EndRow()     { b.RowEnds = append(b.RowEnds, len(b.Ends)) }
func (b *Arr) AppendNull() { b.EndRow() } // not reached: mapping refuses nullable arrays
func (b *Arr) Len() int    { return len(b.RowEnds) }
func (b *Arr) Truncate(n int) {
	b.RowEnds = b.RowEnds[:n]
	elems := 0
	if n > 0 {
		elems = b.RowEnds[n-1]
	}
	b.Str.Truncate(elems)
}
func (b *Arr) Reset() { b.Truncate(0) }

// Fill and Reserve count rows; the elements grow as they come.
func (b *Arr) Fill() (int, int)      { return len(b.RowEnds), 0 }
func (b *Arr) Reserve(values, _ int) { b.RowEnds = slices.Grow(b.RowEnds, values) }
func (b *Arr) Scatter(to []uint32, dst []Buf) {
	it := b.iter()
	start := 0
	for i, end := range b.RowEnds {
		d := dst[to[i]].(*Arr)
		for e := start; e < end; e++ {
			d.Arena = append(d.Arena, it.next()...)
			d.closeValue()
		}
		d.RowEnds = append(d.RowEnds, len(d.Ends))
		start = end
	}
}

func (b *Arr) AppendTo(c driver.BatchColumn) error {
	defer func() { b.strs, b.rows = nil, nil }() // see Str.AppendTo
	strs := b.Strings()
	b.rows = b.rows[:0]
	start := 0
	for _, end := range b.RowEnds {
		b.rows = append(b.rows, strs[start:end:end])
		start = end
	}
	return c.Append(b.rows)
}
