package column

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/binlog2ch/binlog2ch/chnative"
)

// TestStrBufChunks fills a string buffer over many chunks with values of
// every size (empty, NULL, larger than a chunk, ending exactly at a
// chunk's end), and checks every way of reading it against the values
// themselves, after truncating back across chunks, and after a reset that
// must reuse the chunks.
func TestStrBufChunks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	b := &Str{Nulls: Nulls{Nullable: true}}
	var want [][]byte
	var null []bool
	add := func(n int) {
		v := make([]byte, n)
		seed := byte(rnd.IntN(256))
		for i := range v {
			v[i] = seed + byte(i)
		}
		if n == 0 && rnd.IntN(2) == 0 {
			b.AppendNull()
			null = append(null, true)
		} else {
			if rnd.IntN(2) == 0 {
				b.AddBytes(v)
			} else { // a converter's own append, its length put in front
				b.Room(n)
				b.Arena = append(b.Arena, v...)
				b.End()
			}
			null = append(null, false)
		}
		want = append(want, v)
	}
	fill := func(values int) {
		for range values {
			switch r := rnd.IntN(1000); {
			case r < 100:
				add(0)
			case r < 102:
				add(chunkMax + rnd.IntN(chunkMax)) // larger than a chunk
			case r < 106:
				add(max(0, chunkMax-(b.BytesHeld()-b.base)%chunkMax-3)) // fills the chunk exactly, with its 3-byte length
			default:
				add(rnd.IntN(3000))
			}
		}
	}
	check := func(what string) {
		t.Helper()
		if b.Len() != len(want) {
			t.Fatalf("%s: %d values, want %d", what, b.Len(), len(want))
		}
		total := 0 // the records: each value after its length
		for _, v := range want {
			total += uvarintLen(len(v)) + len(v)
		}
		if b.BytesHeld() != total {
			t.Fatalf("%s: %d bytes held, want %d", what, b.BytesHeld(), total)
		}
		it := b.iter()
		strs := b.Strings()
		e := chnative.NewCapture()
		ref := chnative.NewCapture()
		for i, w := range want {
			if got := it.next(); !bytes.Equal(got, w) {
				t.Fatalf("%s: iter value %d: %d bytes, want %d", what, i, len(got), len(w))
			}
			if got := b.value(b.valueEnds(), i); !bytes.Equal(got, w) {
				t.Fatalf("%s: value %d: %d bytes, want %d", what, i, len(got), len(w))
			}
			if strs[i] != string(w) {
				t.Fatalf("%s: string %d differs", what, i)
			}
			if b.IsNull[i] != null[i] {
				t.Fatalf("%s: NULL flag %d", what, i)
			}
			ref.StringBytes(w)
		}
		if err := writeStrings(e, b, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Captured(), ref.Captured()) {
			t.Fatalf("%s: the Native encoding differs", what)
		}
	}
	fill(4000)
	if len(b.chunks) < 10 {
		t.Fatalf("only %d full chunks: the test does not cross chunks", len(b.chunks))
	}
	check("filled")
	// The chunks it allocated keep head bytes before their records for a
	// frame's header; only the first (grown by appending) and those a
	// value larger than a chunk grew lack them.
	headed, all, grown := 0, 0, 1
	b.Chunks(func(records []byte, head int) {
		all++
		if head == chnative.FrameHead {
			headed++
		} else if len(records) > chunkMax {
			grown++
		}
	})
	if headed < all-grown {
		t.Errorf("%d of %d chunks have head bytes (%d grown past a chunk)", headed, all, grown-1)
	}
	for _, n := range []int{len(want) - 1, len(want) / 2, len(want) / 3, 1} {
		b.Truncate(n)
		want, null = want[:n], null[:n]
		check("truncated")
		fill(700)
		check("filled again")
	}

	// Scattered into two buffers, each holds its values.
	to := make([]uint32, len(want))
	var parts [2][][]byte
	for i := range to {
		to[i] = uint32(rnd.IntN(2))
		parts[to[i]] = append(parts[to[i]], want[i])
	}
	ds := []Buf{&Str{Nulls: Nulls{Nullable: true}}, &Str{Nulls: Nulls{Nullable: true}}}
	b.Scatter(to, ds)
	for p, d := range ds {
		it := d.(*Str).iter()
		for i, w := range parts[p] {
			if got := it.next(); !bytes.Equal(got, w) {
				t.Fatalf("part %d value %d differs", p, i)
			}
		}
	}

	// A reset block refills into the chunks it has: only values larger
	// than a chunk (or chunks too few for them) allocate.
	chunks := len(b.chunks) + 1
	b.Reset()
	want, null = want[:0], null[:0]
	if len(b.spare)+1 < chunks-2 {
		t.Fatalf("reset kept %d of %d chunks", len(b.spare)+1, chunks)
	}
	small := make([]byte, 1000)
	allocs := testing.AllocsPerRun(1, func() {
		for b.BytesHeld() < (chunks-3)*chunkMax {
			b.AddBytes(small)
		}
	})
	if allocs > 2 { // the ends and NULL flags may grow
		t.Errorf("refilling a reset buffer allocated %v times", allocs)
	}
}

// BenchmarkStrBufFill appends 64 MiB of 600-byte values to an emptied
// buffer, as a writer does to a reused block.
func BenchmarkStrBufFill(b *testing.B) {
	v := make([]byte, 600)
	buf := &Str{}
	b.SetBytes(64 << 20)
	for i := 0; i < b.N; i++ {
		buf.Reset()
		for buf.BytesHeld() < 64<<20 {
			buf.AddBytes(v)
		}
	}
}

// TestStrConcurrentSelections: the shards of a cluster encode their rows
// of one block at once (sink's sendShards), each reading values out of
// order; the ends those reads need are made once, not raced for.
func TestStrConcurrentSelections(t *testing.T) {
	for round := range 20 {
		b := &Str{}
		var want [][]byte
		for i := range 5000 {
			v := bytes.Repeat([]byte{byte(i)}, i%300)
			b.AddBytes(v)
			want = append(want, v)
		}
		const shards = 4
		var wg sync.WaitGroup
		errs := make([]string, shards)
		for s := range shards {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var sel []uint32
				ref := chnative.NewCapture()
				for i := range want {
					if i%shards == s {
						sel = append(sel, uint32(i))
						ref.StringBytes(want[i])
					}
				}
				e := chnative.NewCapture()
				if err := writeStrings(e, b, sel); err != nil {
					errs[s] = err.Error()
					return
				}
				if !bytes.Equal(e.Captured(), ref.Captured()) {
					errs[s] = "the shard's strings differ"
				}
			}()
		}
		wg.Wait()
		for s, err := range errs {
			if err != "" {
				t.Fatalf("round %d, shard %d: %s", round, s, err)
			}
		}
	}
}
