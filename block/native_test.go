package block

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

// driverColumn lets AppendTo fill a clickhouse-go column directly.
type driverColumn struct{ c column.Interface }

func (d driverColumn) Append(v any) error    { _, err := d.c.Append(v); return err }
func (d driverColumn) AppendRow(v any) error { return d.c.AppendRow(v) }

// driverEncoding is the Native encoding clickhouse-go produces for the
// block's values (what binlog2ch sent before it wrote blocks itself).
func driverEncoding(t *testing.T, b *Block) []byte {
	t.Helper()
	pb := proto.NewBlock()
	pb.ServerContext.Timezone = time.UTC
	for _, c := range b.target.Columns {
		if err := pb.AddColumn(c.Name, column.Type(c.Type.String())); err != nil {
			t.Fatalf("%s %s: %v", c.Name, c.Type, err)
		}
	}
	for i, c := range b.cols {
		if err := c.AppendTo(driverColumn{pb.Columns[i]}); err != nil {
			t.Fatalf("column %s: %v", b.target.Columns[i].Name, err)
		}
	}
	var buf chproto.Buffer
	if err := pb.Encode(&buf, chnative.Revision); err != nil {
		t.Fatal(err)
	}
	return buf.Buf
}

func nativeEncoding(t *testing.T, b *Block) []byte {
	t.Helper()
	if !b.NativeOK() {
		t.Fatalf("%s: NativeOK is false", b.target.FullName())
	}
	e := chnative.NewCapture()
	if err := b.EncodeNative(e); err != nil {
		t.Fatal(err)
	}
	return e.Captured()
}

// sameEncoding checks EncodeNative byte for byte against clickhouse-go.
func sameEncoding(t *testing.T, b *Block) {
	t.Helper()
	want := driverEncoding(t, b)
	got := nativeEncoding(t, b)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: native encoding differs from clickhouse-go's at byte %d of %d/%d:\n got %x\nwant %x",
			b.target.FullName(), i, len(got), len(want), got[max(0, i-16):min(len(got), i+32)], want[max(0, i-16):min(len(want), i+32)])
	}
}

// TestNativeMatchesDriverOnFieldTest encodes the benchmark table's captured
// binlog rows both ways.
func TestNativeMatchesDriverOnFieldTest(t *testing.T) {
	fx, b := fieldTestBinlog(t)
	if err := decodeFixture(fx, b); err != nil {
		t.Fatal(err)
	}
	if b.Rows() == 0 {
		t.Fatal("fixture decoded no rows")
	}
	sameEncoding(t, b)
}

// nativeTypes are MySQL column types with two values each, for tests
// that build blocks of every type.
var nativeTypes = []struct {
	mysql  string
	values []any
}{
	{"tinyint", []any{int8(-128), int8(127)}},
	{"tinyint unsigned", []any{uint8(255), uint8(0)}},
	{"tinyint(1)", []any{int8(1), int8(0)}},
	{"smallint", []any{int16(-32768), int16(5)}},
	{"mediumint unsigned", []any{uint32(16777215), uint32(1)}},
	{"int", []any{int32(-2147483648), int32(7)}},
	{"bigint unsigned", []any{uint64(18446744073709551615), uint64(0)}},
	{"bigint", []any{int64(-9223372036854775808), int64(1)}},
	{"float", []any{float32(-1.5), float32(3e38)}},
	{"double", []any{float64(-2.25e-300), float64(0)}},
	{"decimal(9,2)", []any{"-9999999.99", "0.5"}},
	{"decimal(18,4)", []any{"99999999999999.9999", "-1"}},
	{"decimal(38,10)", []any{"-9999999999999999999999999999.9999999999", "12345678901234567890.1"}},
	{"decimal(65,30)", []any{"-99999999999999999999999999999999999.999999999999999999999999999999", "0.000000000000000000000000000001"}},
	{"decimal(10,0)", []any{"-9999999999", "0"}},
	{"char(10)", []any{"abc", ""}},
	{"varchar(300)", []any{strings.Repeat("é", 300), "x"}},
	{"binary(4)", []any{"ab", []byte{0, 1, 2, 3}}},
	{"blob", []any{[]byte{0, 0xff}, []byte{}}},
	{"date", []any{"2024-02-29", "1970-01-01"}},
	{"datetime", []any{time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC), time.Unix(0, 0).UTC()}},
	{"datetime(6)", []any{time.Date(2024, 2, 29, 23, 59, 59, 123456000, time.UTC), time.Unix(1, 0).UTC()}},
	{"datetime(3)", []any{time.Date(1999, 12, 31, 1, 2, 3, 450000000, time.UTC), time.Unix(1, 0).UTC()}},
	{"timestamp", []any{time.Date(2038, 1, 19, 3, 14, 7, 0, time.UTC), time.Unix(86400, 0).UTC()}},
	{"time", []any{"-838:59:59", "12:00:00"}},
	{"year", []any{2155, 1901}},
	{"bit(64)", []any{int64(-1), int64(5)}},
	{"enum('a','b')", []any{int64(2), int64(0)}},
	{"enum('x''q','y')", []any{int64(1), int64(2)}},
	{"set('a','b','c')", []any{int64(5), int64(0)}},
	{"json", []any{[]byte(`{"a":1}`), []byte(`[]`)}},
}

// TestNativeMatchesDriver covers every column type and NULLs, on both
// server profiles.
func TestNativeMatchesDriver(t *testing.T) {
	for _, profile := range []struct {
		name string
		caps schema.Capabilities
	}{{"clickhouse18", schema.ClickHouse18}, {"modern", schema.ClickHouseModern}} {
		for _, nullable := range []bool{false, true} {
			tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false)}}
			types := nativeTypes
			if profile.caps.LowCardinality {
				// Labels that need escaping become LowCardinality(String)
				// there, which has no native encoder: see below.
				types = append(types[:len(types)-3:len(types)-3], types[len(types)-2:]...)
			}
			for i, ty := range types {
				tb.Columns = append(tb.Columns, schematest.Col(t, fmt.Sprintf("c%d", i), ty.mysql, nullable))
			}
			opts := schema.DefaultOptions()
			opts.InvalidDates = schema.InvalidClamp
			target, err := schema.Map(tb, "d", profile.caps, opts, schema.TableOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := NewBlock(target)
			for r := 0; r < 3; r++ {
				row := []any{int32(r)}
				for _, ty := range types {
					switch {
					case r == 2 && nullable:
						row = append(row, nil)
					case r == 2:
						row = append(row, ty.values[0])
					default:
						row = append(row, ty.values[r])
					}
				}
				if err := b.Append(row, uint64(r+1), schema.OpInsert+schema.Op(r%2)); err != nil {
					t.Fatalf("%s: %v", profile.name, err)
				}
			}
			t.Run(fmt.Sprintf("%s/nullable=%v", profile.name, nullable), func(t *testing.T) { sameEncoding(t, b) })
		}
	}
}

// TestNativeRefusesLowCardinality: such blocks go through clickhouse-go.
func TestNativeRefusesLowCardinality(t *testing.T) {
	b := oneColumn(t, "enum('x''q','y')", false, schema.ClickHouseModern, schema.DefaultOptions())
	if b.target.Columns[1].Type.Kind != schema.CHLowCardinalityString {
		t.Fatalf("mapped to %s", b.target.Columns[1].Type)
	}
	if b.NativeOK() {
		t.Fatal("NativeOK with a LowCardinality column")
	}
	if err := b.EncodeNative(chnative.NewCapture()); err == nil {
		t.Fatal("EncodeNative wrote a LowCardinality column")
	}
}
