// Package column holds the values of ClickHouse columns in typed buffers
// (numbers, strings in an arena of 1 MiB chunks, dates, arrays), with all
// that reads them: the hand-off to clickhouse-go, Native encoding, the
// scatter of rows to shards and cityHash64 of them as ClickHouse computes
// it. Values arrive already converted (package block turns MySQL's values
// into them): it knows ClickHouse's types and storage, not MySQL's, and
// must not do I/O.
package column

import (
	"encoding/binary"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/chnative"
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
// Each value is held as Native's String has it on the wire, its length
// as a uvarint then its bytes (a record), so that a whole column is
// encoded as its chunks, not value by value (Chunks).
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
	spare  []fullChunk // emptied chunks, for reuse (their base unused)
	// framed is the allocation Arena was made at the end of, its first
	// chnative.FrameHead bytes free for a frame's header (nil: none, or
	// Arena grew out of it).
	framed []byte
	n      int // values held
	openAt int // where in Arena the value being appended starts
	// ends is each value's end, an offset among the buffer's bytes, for
	// reading values out of order (a shard's rows, a truncation); made
	// from the records when first needed, valid while endsOK, under endsMu
	// (the shards of a cluster read one block at once). Kept for every
	// value, it was the buffer's only per-value cost beyond its record: 8
	// bytes and an append.
	ends   []int
	endsOK bool
	endsMu sync.Mutex
	strs   []string  // scratch for the hand-off
	ptrs   []*string // scratch for Nullable hand-off
}

// fullChunk is a chunk values are no longer appended to.
type fullChunk struct {
	data   []byte
	base   int
	framed []byte // data with room for a frame header before it, or nil
}

// headroom is the bytes a chunk is allocated with before its data: a
// NONE frame of the chunk is then written from the chunk itself
// (chnative.Encoder.Direct), its header in front, instead of a copy.
const headroom = chnative.FrameHead

// newChunk allocates an empty chunk of capacity n, with headroom.
func newChunk(n int) (data, framed []byte) {
	framed = make([]byte, headroom, headroom+n)
	return framed[headroom:], framed
}

// withHead is data with the headroom before it, if it still lies at the
// end of framed's headroom (an append that outgrew it moved it), else
// nil.
func withHead(data, framed []byte) []byte {
	if len(data) == 0 || cap(framed) < headroom+len(data) || unsafe.SliceData(framed[headroom:]) != unsafe.SliceData(data) {
		return nil
	}
	return framed[:headroom+len(data)]
}

// chunkMax is the size of a chunk: large enough that a batch's column
// takes few, small enough to waste little. The first chunk grows by
// appending until it is that large.
const chunkMax = 1 << 20

// sealRoom is the room below which a chunk takes no more values: more
// than any value converters append without asking for room (dates,
// numbers as text), so those never outgrow a chunk.
const sealRoom = 256

// AddString and AddBytes append a value whose length they know: its
// record is written in one go.
func (b *Str) AddString(s string) {
	b.Room(len(s))
	b.Arena = binary.AppendUvarint(b.Arena, uint64(len(s)))
	b.Arena = append(b.Arena, s...)
	b.closeValue()
	b.mark(false)
}

func (b *Str) AddBytes(p []byte) {
	b.Room(len(p))
	if len(p) < 0x80 {
		b.Arena = append(b.Arena, byte(len(p)))
	} else {
		b.Arena = binary.AppendUvarint(b.Arena, uint64(len(p)))
	}
	b.Arena = append(b.Arena, p...)
	b.closeValue()
	b.mark(false)
}

// End ends a value its converter appended to Arena itself: its length
// goes in front of it (the value moved up by the uvarint's bytes, one
// below 128 bytes; such values are short, dates and numbers as text).
func (b *Str) End() {
	start := b.openAt
	n := len(b.Arena) - start
	if n < 0x80 {
		b.Arena = append(b.Arena, 0)
		copy(b.Arena[start+1:], b.Arena[start:start+n])
		b.Arena[start] = byte(n)
		b.closeValue()
		b.mark(false)
		return
	}
	k := uvarintLen(n)
	b.Arena = append(b.Arena, make([]byte, k)...)
	copy(b.Arena[start+k:], b.Arena[start:start+n])
	binary.PutUvarint(b.Arena[start:], uint64(n))
	b.closeValue()
	b.mark(false)
}

// AppendNull appends an empty value marked NULL (Native holds a NULL's
// place in the data as the type's default).
func (b *Str) AppendNull() {
	b.Room(1)
	b.Arena = append(b.Arena, 0)
	b.closeValue()
	b.mark(true)
}

func (b *Str) Len() int { return b.n }

// uvarintLen is the bytes of n as a uvarint.
func uvarintLen(n int) int {
	k := 1
	for x := uint64(n); x >= 0x80; x >>= 7 {
		k++
	}
	return k
}

// payload is a record's value: its bytes after the length.
func payload(rec []byte) []byte {
	if rec[0] < 0x80 {
		return rec[1:]
	}
	_, k := binary.Uvarint(rec)
	return rec[k:]
}

// Room makes room for a value of n bytes and its length: when the
// full-size chunk being filled lacks it, the value goes into the next
// chunk instead of the chunk being copied into a larger one. (A value
// larger than a chunk grows an empty one to its size.)
func (b *Str) Room(n int) {
	if cap(b.Arena)-len(b.Arena) < n+binary.MaxVarintLen64 && cap(b.Arena) >= chunkMax && len(b.Arena) > 0 {
		b.nextChunk()
	}
}

// closeValue ends the record appended to the arena, and the chunk when it
// is about full.
func (b *Str) closeValue() {
	b.n++
	b.endsOK = false
	b.openAt = len(b.Arena)
	if cap(b.Arena)-len(b.Arena) < sealRoom && cap(b.Arena) >= chunkMax {
		b.nextChunk()
	}
}

// nextChunk keeps the arena as a full chunk and continues in an empty one.
func (b *Str) nextChunk() {
	b.chunks = append(b.chunks, fullChunk{data: b.Arena, base: b.base, framed: withHead(b.Arena, b.framed)})
	b.base += len(b.Arena)
	if n := len(b.spare); n > 0 {
		sp := b.spare[n-1]
		b.Arena, b.framed, b.spare = sp.data, sp.framed, b.spare[:n-1]
	} else {
		b.Arena, b.framed = newChunk(chunkMax)
	}
	b.openAt = 0
}

// BytesHeld is the bytes of the records: the values and their lengths.
func (b *Str) BytesHeld() int { return b.base + len(b.Arena) }

func (b *Str) Truncate(n int) {
	end := 0
	if n > 0 {
		end = b.valueEnds()[n-1]
	}
	b.n = n
	b.ends = b.ends[:n] // still each value's end
	// Back to the chunk the n-th value ended in; the later ones are spare.
	for end < b.base && len(b.chunks) > 0 {
		b.keepSpare(b.Arena, b.framed)
		last := b.chunks[len(b.chunks)-1]
		b.chunks = b.chunks[:len(b.chunks)-1]
		b.Arena, b.base, b.framed = last.data, last.base, last.framed
	}
	b.Arena = b.Arena[:end-b.base]
	b.openAt = len(b.Arena)
	if b.Nullable {
		b.IsNull = b.IsNull[:n]
	}
}

// valueEnds is each value's end, made from the records if need be; any
// number of readers may call it at once.
func (b *Str) valueEnds() []int {
	b.endsMu.Lock()
	defer b.endsMu.Unlock()
	if b.endsOK && len(b.ends) == b.n {
		return b.ends
	}
	b.ends = slices.Grow(b.ends[:0], b.n)
	it := b.iter()
	for range b.n {
		it.nextRecord()
		b.ends = append(b.ends, it.off)
	}
	b.endsOK = true
	return b.ends
}

// keepSpare keeps an emptied chunk for reuse, unless a large value made
// it much larger than a chunk.
func (b *Str) keepSpare(c, framed []byte) {
	if cap(c) > 0 && cap(c) <= 2*chunkMax {
		if withHead(c[:1], framed) == nil {
			framed = nil
		}
		b.spare = append(b.spare, fullChunk{data: c[:0], framed: framed})
	}
}

func (b *Str) Reset()           { b.Truncate(0) }
func (b *Str) Fill() (int, int) { return b.n, b.BytesHeld() }
func (b *Str) Reserve(values, bytes int) {
	if n := min(bytes, chunkMax); len(b.chunks) == 0 && len(b.spare) == 0 && cap(b.Arena) < n {
		data, framed := newChunk(n)
		b.Arena, b.framed = append(data, b.Arena...), framed
	}
	b.Nulls.Reserve(values)
}
func (b *Str) Size() int { return b.BytesHeld() }

// value is value i's bytes, ends being valueEnds'.
func (b *Str) value(ends []int, i int) []byte { return payload(b.record(ends, i)) }

// record is value i's record.
func (b *Str) record(ends []int, i int) []byte {
	start := 0
	if i > 0 {
		start = ends[i-1]
	}
	// A value in a later chunk than the one before starts at that
	// chunk's base, which is where the chunk before ends.
	return b.span(start, ends[i])
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

// strIter walks a Str's values in order, record by record.
type strIter struct {
	b    *Str
	k    int    // the chunk being read: chunks[k], or the arena
	data []byte // chunk k
	base int    // its offset
	pos  int    // the next record's start in data
	off  int    // the end of the last record read, among the buffer's bytes
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
	it.pos = 0
}

// next returns the next value's bytes.
func (it *strIter) next() []byte { return payload(it.nextRecord()) }

// nextRecord returns the next value's record.
func (it *strIter) nextRecord() []byte {
	for it.pos >= len(it.data) { // the value is in a later chunk
		it.k++
		it.load()
	}
	p := it.data[it.pos:]
	n, k := int(p[0]), 1
	if n >= 0x80 {
		v, w := binary.Uvarint(p)
		n, k = int(v), w
	}
	rec := p[:k+n]
	it.pos += k + n
	it.off = it.base + it.pos
	return rec
}

// Chunks calls fn with the records of every value in order, as few
// slices as the chunks hold them in: a String column's Native data. Each
// is records[head:], head being 0 or chnative.FrameHead bytes free before
// the records (Encoder.Direct).
func (b *Str) Chunks(fn func(records []byte, head int)) {
	for _, c := range b.chunks {
		chunk(fn, c.data, c.framed)
	}
	chunk(fn, b.Arena, withHead(b.Arena, b.framed))
}

func chunk(fn func(records []byte, head int), data, framed []byte) {
	switch {
	case len(data) == 0:
	case framed != nil && len(framed) == headroom+len(data):
		fn(framed, headroom)
	default:
		fn(data, 0)
	}
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
	for i := range b.n {
		d := ds[to[i]]
		rec := it.nextRecord()
		d.Room(len(rec))
		d.Arena = append(d.Arena, rec...)
		d.closeValue()
	}
	scatterNulls(&b.Nulls, to, func(p int) *Nulls { return &ds[p].Nulls })
}

// Strings returns the values as strings pointing into the arena, valid
// until the next append or reset.
func (b *Str) Strings() []string {
	if cap(b.strs) < b.n {
		b.strs = make([]string, 0, b.n) // exact: no growth copies
	}
	b.strs = b.strs[:0]
	it := b.iter()
	for range b.n {
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

func (b *Arr) EndRow()     { b.RowEnds = append(b.RowEnds, b.n) }
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
			rec := it.nextRecord()
			d.Room(len(rec))
			d.Arena = append(d.Arena, rec...)
			d.closeValue()
		}
		d.RowEnds = append(d.RowEnds, d.n)
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
