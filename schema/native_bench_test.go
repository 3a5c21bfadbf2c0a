package schema

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
