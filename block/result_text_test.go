package block

import (
	"math"
	"strconv"
	"testing"

	"github.com/binlog2ch/binlog2ch/column"
	"github.com/binlog2ch/binlog2ch/mysqldecimal"

	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The text protocol, measured against the binary one (docs/benchmarks.md,
// issue 21): a decoder of text rows into the same columns, for the types
// of binlog_field_test only, so that BenchmarkAppendTextRows decodes the
// same rows as BenchmarkAppendResultRows did in the binary protocol.
// Table copies use the binary protocol, the cheaper for both sides; this
// decoder exists for the comparison (it also takes FLOAT from text, which
// MySQL rounds to six digits: not exact).

type textRowConverter func(v []byte) error

func (b *Block) textConverters(tb testing.TB) []textRowConverter {
	src := b.target.Source
	conv := make([]textRowConverter, len(src.Columns))
	for i := range src.Columns {
		c := &src.Columns[i]
		tc := b.target.SourceToTarget[i]
		t, buf, put := b.target.Columns[tc].Type, b.cols[tc], b.puts[i]
		switch c.Kind {
		case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt,
			schema.KindYear, schema.KindBit, schema.KindEnum, schema.KindSet:
			conv[i] = func(v []byte) error {
				if len(v) > 0 && v[0] == '-' {
					s, err := strconv.ParseInt(bytesString(v), 10, 64)
					if err != nil {
						return err
					}
					return put(uint64(s), s)
				}
				u, err := strconv.ParseUint(bytesString(v), 10, 64)
				if err != nil {
					return err
				}
				return put(u, int64(u))
			}
		case schema.KindFloat:
			fb := buf.(*column.Num[float32])
			conv[i] = func(v []byte) error {
				f, err := strconv.ParseFloat(bytesString(v), 32)
				fb.Add(float32(f))
				return err
			}
		case schema.KindDouble:
			fb := buf.(*column.Num[float64])
			conv[i] = func(v []byte) error {
				f, err := strconv.ParseFloat(bytesString(v), 64)
				fb.Add(f)
				return err
			}
		case schema.KindDecimal:
			add := decimalAdd(buf)
			conv[i] = func(v []byte) error {
				if !mysqldecimal.Valid(bytesString(v), c.Precision-c.Scale, c.Scale) {
					return errMsg("not a decimal")
				}
				return add(v)
			}
		case schema.KindDate:
			tb := buf.(*column.Time)
			lo, hi := b.dateBounds(t)
			conv[i] = func(v []byte) error {
				y, m, d, ok := mysqltime.ParseDate(bytesString(v))
				if !ok {
					return errMsg("not a date")
				}
				return b.putDate(tb, lo, hi, y, m, d)
			}
		case schema.KindDateTime, schema.KindTimestamp:
			dt := b.dateTimeBufs[c]
			conv[i] = func(v []byte) error {
				p, ok := mysqltime.ParseDateTime(bytesString(v))
				if !ok {
					return errMsg("not a datetime")
				}
				return dt.putParts(p)
			}
		case schema.KindTime:
			sb := buf.(*column.Str)
			conv[i] = func(v []byte) error {
				us, ok := mysqltime.ParseTimeMicros(bytesString(v))
				if !ok {
					return errMsg("not a time")
				}
				sb.Arena = mysqltime.AppendTime(sb.Arena, us, c.Fsp)
				sb.End()
				return nil
			}
		case schema.KindChar, schema.KindBlob, schema.KindBinary:
			sb := buf.(*column.Str)
			conv[i] = func(v []byte) error { sb.AddBytes(v); return nil }
		default:
			tb.Fatalf("no text decoder for %s", c.Type)
		}
	}
	return conv
}

// appendTextRows decodes text-protocol rows (each value a length-encoded
// string, 0xfb for NULL).
func (b *Block) appendTextRows(conv []textRowConverter, rows []byte) error {
	for len(rows) > 0 {
		row, rest, ok := mysqlproto.NextRow(rows)
		if !ok {
			return errShort
		}
		rows = rest
		for i := range conv {
			if len(row) > 0 && row[0] == 0xfb {
				b.cols[b.target.SourceToTarget[i]].AppendNull()
				row = row[1:]
				continue
			}
			start, end, err := lenenc(row)
			if err != nil {
				return err
			}
			if err := conv[i](row[start:end]); err != nil {
				return err
			}
			row = row[end:]
		}
		for _, m := range b.meta {
			m(1, schema.OpInsert)
		}
	}
	return nil
}

// BenchmarkAppendTextRows decodes the rows of BenchmarkAppendResultRows as
// the text protocol sends them.
func BenchmarkAppendTextRows(b *testing.B) {
	fx := loadFixture(b, "binlog_field_test_text.json")
	_, block := fieldTestResult(b, schema.ClickHouse18)
	conv := block.textConverters(b)
	b.SetBytes(int64(len(fx.Rows)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		block.Reset()
		if err := block.appendTextRows(conv, fx.Rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fx.Count), "ns/row")
}

// TestTextRowsDecode: the comparison decoder takes every text row, and the
// values it can take exactly equal the binary protocol's.
func TestTextRowsDecode(t *testing.T) {
	fx := loadFixture(t, "binlog_field_test_text.json")
	bin, fromBinary := fieldTestResult(t, schema.ClickHouse18)
	_, fromText := fieldTestResult(t, schema.ClickHouse18)
	if err := fromText.appendTextRows(fromText.textConverters(t), fx.Rows); err != nil {
		t.Fatal(err)
	}
	if _, err := fromBinary.AppendResultRows(bin.Columns, bin.Rows, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	if fromText.Rows() != fx.Count || fx.Count != bin.Count {
		t.Fatalf("%d text rows, %d binary", fromText.Rows(), bin.Count)
	}
	for i, c := range fromText.target.Columns {
		if c.Meta != schema.MetaNone {
			continue
		}
		got, want := nativeColumnBytes(t, fromText, i), nativeColumnBytes(t, fromBinary, i)
		if c.Type.Kind == schema.CHFloat32 {
			// MySQL prints FLOAT with six significant digits.
			ft, fb := fromText.cols[i].(*column.Num[float32]).Vals, fromBinary.cols[i].(*column.Num[float32]).Vals
			for r := range ft {
				if math.Abs(float64(ft[r]-fb[r])) > 1e-5*math.Abs(float64(fb[r]))+1e-6 {
					t.Fatalf("%s row %d: text %v, binary %v", c.Name, r, ft[r], fb[r])
				}
			}
			continue
		}
		if got != want {
			t.Errorf("column %s: the text rows decode otherwise", c.Name)
		}
	}
}
