package block

import (
	"slices"
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
	// fill is the values and the bytes of variable-length data held;
	// reserve makes room for as many beyond those held.
	fill() (values, bytes int)
	reserve(values, bytes int)
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
func (b *numBuf[T]) reset()           { b.truncate(0) }
func (b *numBuf[T]) fill() (int, int) { return len(b.vals), 0 }
func (b *numBuf[T]) reserve(values, _ int) {
	b.vals = slices.Grow(b.vals, values)
	b.nulls.reserve(values)
}

func (n *nulls) reserve(values int) {
	if n.nullable {
		n.isNull = slices.Grow(n.isNull, values)
	}
}
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

// strBuf holds byte strings in an arena of chunks: appending copies the
// bytes (the binlog event or result buffer they come from is reused), and
// the hand-off points strings into the arena instead of allocating each.
// A chunk that reached chunkMax bytes is kept as it is and values go on in
// another, so the arena never grows by copying what it holds (a batch's
// string columns are tens of MiB: growth by reallocation copied each
// several times over and left the old copies as garbage), and an emptied
// block keeps its chunks for the next batch. A value never spans chunks.
type strBuf struct {
	nulls
	arena  []byte      // the chunk values are appended to, the last
	base   int         // the offset of arena[0] among the buffer's bytes
	chunks []fullChunk // the chunks before arena, in order
	spare  [][]byte    // emptied chunks, for reuse
	ends   []int       // each value's end, an offset among the buffer's bytes
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

func (b *strBuf) addString(s string) { b.room(len(s)); b.arena = append(b.arena, s...); b.end() }
func (b *strBuf) addBytes(p []byte)  { b.room(len(p)); b.arena = append(b.arena, p...); b.end() }
func (b *strBuf) end()               { b.closeValue(); b.mark(false) }
func (b *strBuf) appendNull()        { b.ends = append(b.ends, b.base+len(b.arena)); b.mark(true) }
func (b *strBuf) len() int           { return len(b.ends) }

// room makes room for a value of n bytes: when the full-size chunk being
// filled lacks it, the value goes into the next chunk instead of the chunk
// being copied into a larger one. (A value larger than a chunk grows an
// empty one to its size.)
func (b *strBuf) room(n int) {
	if cap(b.arena)-len(b.arena) < n && cap(b.arena) >= chunkMax && len(b.arena) > 0 {
		b.nextChunk()
	}
}

// closeValue ends the value appended to the arena, and the chunk when it
// is about full.
func (b *strBuf) closeValue() {
	b.ends = append(b.ends, b.base+len(b.arena))
	if cap(b.arena)-len(b.arena) < sealRoom && cap(b.arena) >= chunkMax {
		b.nextChunk()
	}
}

// nextChunk keeps the arena as a full chunk and continues in an empty one.
func (b *strBuf) nextChunk() {
	b.chunks = append(b.chunks, fullChunk{data: b.arena, base: b.base})
	b.base += len(b.arena)
	if n := len(b.spare); n > 0 {
		b.arena, b.spare = b.spare[n-1], b.spare[:n-1]
	} else {
		b.arena = make([]byte, 0, chunkMax)
	}
}

// bytesHeld is the bytes of the values.
func (b *strBuf) bytesHeld() int { return b.base + len(b.arena) }

func (b *strBuf) truncate(n int) {
	b.ends = b.ends[:n]
	end := 0
	if n > 0 {
		end = b.ends[n-1]
	}
	// Back to the chunk the n-th value ended in; the later ones are spare.
	for end < b.base && len(b.chunks) > 0 {
		b.keepSpare(b.arena)
		last := b.chunks[len(b.chunks)-1]
		b.chunks = b.chunks[:len(b.chunks)-1]
		b.arena, b.base = last.data, last.base
	}
	b.arena = b.arena[:end-b.base]
	if b.nullable {
		b.isNull = b.isNull[:n]
	}
}

// keepSpare keeps an emptied chunk for reuse, unless a large value made
// it much larger than a chunk.
func (b *strBuf) keepSpare(c []byte) {
	if cap(c) <= 2*chunkMax {
		b.spare = append(b.spare, c[:0])
	}
}

func (b *strBuf) reset()           { b.truncate(0) }
func (b *strBuf) fill() (int, int) { return len(b.ends), b.bytesHeld() }
func (b *strBuf) reserve(values, bytes int) {
	if len(b.chunks) == 0 && len(b.spare) == 0 {
		b.arena = slices.Grow(b.arena, min(bytes, chunkMax))
	}
	b.ends = slices.Grow(b.ends, values)
	b.nulls.reserve(values)
}
func (b *strBuf) size() int { return b.bytesHeld() + 8*len(b.ends) }

// value is value i's bytes.
func (b *strBuf) value(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.span(start, b.ends[i])
}

// span is the bytes from offset start to end, which lie in one chunk.
func (b *strBuf) span(start, end int) []byte {
	if start >= b.base {
		return b.arena[start-b.base : end-b.base]
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

// strIter walks a strBuf's values in order.
type strIter struct {
	b     *strBuf
	k     int    // the chunk of the next value: chunks[k], or the arena
	i     int    // the next value
	start int    // its start
	data  []byte // chunk k
	base  int    // its offset
	limit int    // the offset of its end
}

func (b *strBuf) iter() strIter {
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
		it.data, it.base = it.b.arena, it.b.base
	}
	it.limit = it.base + len(it.data)
}

// next returns the next value's bytes.
func (it *strIter) next() []byte {
	end := it.b.ends[it.i]
	it.i++
	for end > it.limit { // the value is in a later chunk
		it.k++
		it.load()
	}
	v := it.data[it.start-it.base : end-it.base]
	it.start = end
	return v
}

func (b *strBuf) scatter(to []uint32, dst []colBuf) {
	ds := make([]*strBuf, len(dst))
	for i, d := range dst {
		ds[i] = d.(*strBuf)
	}
	scatterStrings(b, to, ds)
}

func scatterStrings(b *strBuf, to []uint32, ds []*strBuf) {
	it := b.iter()
	for i := range b.ends {
		d := ds[to[i]]
		d.arena = append(d.arena, it.next()...)
		d.closeValue()
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
	it := b.iter()
	for range b.ends {
		v := it.next()
		if len(v) == 0 {
			b.strs = append(b.strs, "")
		} else {
			b.strs = append(b.strs, unsafe.String(&v[0], len(v)))
		}
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

// fill and reserve count rows; the elements grow as they come.
func (b *arrBuf) fill() (int, int)      { return len(b.rowEnds), 0 }
func (b *arrBuf) reserve(values, _ int) { b.rowEnds = slices.Grow(b.rowEnds, values) }
func (b *arrBuf) scatter(to []uint32, dst []colBuf) {
	it := b.iter()
	start := 0
	for i, end := range b.rowEnds {
		d := dst[to[i]].(*arrBuf)
		for e := start; e < end; e++ {
			d.arena = append(d.arena, it.next()...)
			d.closeValue()
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
