package block

import (
	"testing"

	"github.com/binlog2ch/binlog2ch/chnative"
)

// fillBlock decodes the fixture into b until it holds n rows.
func fillBlock(tb testing.TB, fx *binlogFixture, b *Block, n int) {
	for b.Rows() < n {
		if err := decodeFixture(fx, b); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkFillFreshBlock is the cost of a block's first fill of 100k
// binlog_field_test rows, buffers growing from nothing, against
// BenchmarkAppendImage's reused block.
func BenchmarkFillFreshBlock(b *testing.B) {
	fx, block := fieldTestBinlog(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fresh := NewBlock(block.Target())
		fillBlock(b, fx, fresh, 100_000)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100_000), "ns/row")
}

// BenchmarkEncodeNative is the cost of encoding 100k binlog_field_test rows
// into LZ4 frames of the Native format (the daemon's send path, without the
// socket).
func BenchmarkEncodeNative(b *testing.B) {
	fx, block := fieldTestBinlog(b)
	fillBlock(b, fx, block, 100_000)
	e := chnative.NewDiscard()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.Encode(block.EncodeNative); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*block.Rows()), "ns/row")
}

// BenchmarkShardSplit is the cost of routing 100k binlog_field_test rows
// to two shards: hashing the key, then encoding each shard's rows by
// selection, against BenchmarkEncodeNative's one encoding of them all.
func BenchmarkShardSplit(b *testing.B) {
	fx, block := fieldTestBinlog(b)
	fillBlock(b, fx, block, 100_000)
	k, err := NewKeyHasher(block.Target(), []KeyArg{{Column: "id"}})
	if err != nil {
		b.Fatal(err)
	}
	e := chnative.NewDiscard()
	var hashes []uint64
	sel := make([][]uint32, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if hashes, err = k.Hashes(block, hashes); err != nil {
			b.Fatal(err)
		}
		sel[0], sel[1] = sel[0][:0], sel[1][:0]
		for r, h := range hashes {
			sel[h%2] = append(sel[h%2], uint32(r))
		}
		for _, rows := range sel {
			if err := e.Encode(func(e *chnative.Encoder) error { return block.EncodeNativeRows(e, rows) }); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*block.Rows()), "ns/row")
}
