package block

import (
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

// fieldTestRow is a binlog_field_test row as go-mysql v1.16 decodes it with
// ParseTime and full row metadata (see ../shared/ENVIRONMENT.md).
func fieldTestRow() []any {
	ts := time.Date(2024, 2, 29, 12, 34, 56, 0, time.UTC)
	return []any{
		uint64(123456), int8(-1), int16(-2), int32(-3), int32(-4), int64(-5),
		"a varchar value of moderate length", "ab", int64(2), int64(5), "12:34:56", "2024-02-29",
		int(2024), ts, ts, float32(1234.5), float64(-98765.25), "1234567.89",
		[]byte("some text, a few dozen bytes long, like most rows"), []byte{1, 2, 3, 4, 5, 6, 7, 8},
		int64(-1), int8(1), []byte("medium blob"), []byte("long blob"), []byte("tiny"),
		uint8(200), uint16(60000), uint32(16000000), uint32(4000000000), uint64(18446744073709551615),
	}
}

// BenchmarkAppendFieldTestRow converts the 30-column benchmark row into
// ClickHouse columns: the per-row cost of the schema layer.
func BenchmarkAppendFieldTestRow(b *testing.B) {
	target, err := schema.Map(schematest.BinlogFieldTest(b), "bench", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		b.Fatal(err)
	}
	block := NewBlock(target)
	row := fieldTestRow()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%50000 == 0 {
			block.Reset()
		}
		if err := block.Append(row, uint64(i), schema.OpInsert); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFieldTestRowConverts keeps the benchmark's row honest: it must
// convert, and the schema layer must not allocate per row once its buffers
// have grown.
func TestFieldTestRowConverts(t *testing.T) {
	target, err := schema.Map(schematest.BinlogFieldTest(t), "bench", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block := NewBlock(target)
	row := fieldTestRow()
	for i := 0; i < 1000; i++ {
		if err := block.Append(row, uint64(i), schema.OpInsert); err != nil {
			t.Fatal(err)
		}
	}
	block.Reset()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := block.Append(row, 1, schema.OpInsert); err != nil {
			t.Fatal(err)
		}
		if block.Rows() >= 1000 {
			block.Reset()
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per row, want 0", allocs)
	}
}
