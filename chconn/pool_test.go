package chconn

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

func TestCheckHeader(t *testing.T) {
	target := &schema.Target{Columns: []schema.TargetColumn{
		{Name: "id", Type: schema.CHType{Kind: schema.CHUInt64}},
		{Name: "at", Type: schema.CHType{Kind: schema.CHDateTime, Zone: "UTC"}},
	}}
	if err := CheckHeader(target, []chnative.Column{{Name: "id", Type: "UInt64"}, {Name: "at", Type: "DateTime('UTC')"}}); err != nil {
		t.Fatal(err)
	}
	var mismatch *HeaderMismatch
	for _, cols := range [][]chnative.Column{
		{{Name: "id", Type: "UInt64"}},
		{{Name: "id", Type: "UInt64"}, {Name: "at", Type: "DateTime"}},
		{{Name: "id", Type: "UInt64"}, {Name: "ts", Type: "DateTime('UTC')"}},
	} {
		err := CheckHeader(target, cols)
		if !errors.As(err, &mismatch) {
			t.Errorf("%v: want a header mismatch, got %v", cols, err)
		} else if !strings.Contains(err.Error(), "ClickHouse") {
			t.Errorf("%v: message %q does not say what differs", cols, err)
		}
	}
}

// TestCurrentServerHeader: the columns binlog2ch maps a table to on a
// current server, as a 26.x server spells them in an INSERT's header,
// pass the header check, and chnative writes them to a scripted 26.x
// server (ZSTD blocks); the header types binlog2ch has no encoder for,
// or does not map to, never do.
func TestCurrentServerHeader(t *testing.T) {
	tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{
		schematest.Col(t, "id", "bigint(20) unsigned", false),
		schematest.Col(t, "dt", "datetime(6)", true),
		schematest.Col(t, "ts", "timestamp(3)", false),
		schematest.Col(t, "d", "date", false),
		schematest.Col(t, "b", "tinyint(1)", false),
		schematest.Col(t, "dec", "decimal(65,10)", true),
		schematest.Col(t, "e", "enum('a','b')", false),
		schematest.Col(t, "s", "varchar(20)", true),
		schematest.Col(t, "bi", "binary(4)", false),
	}}
	opts := schema.DefaultOptions()
	opts.TinyInt1As = schema.TinyInt1AsBool
	target, err := schema.Map(tb, "d", schema.ClickHouseModern, opts, schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As ClickHouse's DataType getName() spells them.
	var header []chnativetest.Column
	for _, c := range [][2]string{{"id", "UInt64"}, {"dt", "Nullable(DateTime64(6, 'UTC'))"}, {"ts", "DateTime64(3, 'UTC')"},
		{"d", "Date32"}, {"b", "Bool"}, {"dec", "Nullable(Decimal(65, 10))"}, {"e", "Enum8('' = 0, 'a' = 1, 'b' = 2)"},
		{"s", "Nullable(String)"}, {"bi", "FixedString(4)"}, {"_version", "UInt64"}, {"_is_deleted", "UInt8"}} {
		header = append(header, chnativetest.Column{Name: c[0], Type: c[1]})
	}
	asNative := func(cols []chnativetest.Column) []chnative.Column {
		var out []chnative.Column
		for _, c := range cols {
			out = append(out, chnative.Column{Name: c.Name, Type: c.Type})
		}
		return out
	}
	if err := CheckHeader(target, asNative(header)); err != nil {
		t.Fatalf("a 26.x server's header refused: %v", err)
	}
	for _, other := range []string{"LowCardinality(Nullable(String))", "JSON", "Variant(String, UInt64)", "Dynamic", "Map(String, UInt64)",
		"IPv6", "Int128", "Int256", "UInt256", "Decimal(76, 10)", "String", "DateTime64(6)", "Nullable(DateTime64(6, 'UTC'))"} {
		h := asNative(header)
		h[5].Type = other // dec, Nullable(Decimal(65, 10)) in the mapping
		var mismatch *HeaderMismatch
		if err := CheckHeader(target, h); !errors.As(err, &mismatch) {
			t.Errorf("a header naming dec %s: got %v, want a mismatch", other, err)
		}
	}

	script := chnativetest.Script{Major: 26, Minor: 9, Revision: chnativetest.Revision26, Compression: chnativetest.MethodZSTD, ValidateClientInfo: true,
		Header: func(string) []chnativetest.Column { return header }}
	srv := chnativetest.Start(t, script)
	b := block.NewBlock(target)
	if !b.NativeOK() {
		t.Fatal("no native encoder for the current profile's columns")
	}
	if err := b.Append([]any{uint64(7), "2024-02-03 04:05:06.123456", "2024-02-03 04:05:06.789", "1900-01-01", int8(1), "1.5", int64(2), nil, "abcd"},
		source.RowVersion(1, 100, 0), schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	p := NewPool(chnative.Options{Addr: []string{srv.Addr()}, User: "default"})
	defer p.Close()
	if err := p.Insert(context.Background(), "", target.InsertSQL(), b, nil, ""); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	ins := srv.Inserts()
	if len(ins) != 1 || len(ins[0].Blocks) != 1 || ins[0].Blocks[0].Rows != 1 {
		t.Fatalf("the server got %+v", ins)
	}
	// Each column found by its name, of the header's type (the scripted
	// server also refuses a block whose names, types or order are not
	// the header's): a column sent under another's name, or in another
	// order, is not read as the right one by position.
	blk := ins[0].Blocks[0]
	if len(blk.Columns) != len(header) {
		t.Fatalf("the block has columns %v, the header %v", blk.Columns, header)
	}
	sent := map[string][]byte{}
	for i, c := range blk.Columns {
		sent[c.Name] = blk.Data[i]
	}
	for _, h := range header {
		i := slices.IndexFunc(blk.Columns, func(c chnativetest.Column) bool { return c.Name == h.Name })
		if i < 0 {
			t.Errorf("no column %s in the block", h.Name)
		} else if blk.Columns[i].Type != h.Type {
			t.Errorf("column %s sent as %s, the header's is %s", h.Name, blk.Columns[i].Type, h.Type)
		}
	}
	le := func(v int64, n int) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(v >> (8 * min(i, 7)))
		}
		return out
	}
	for name, want := range map[string][]byte{
		"id":  le(7, 8),
		"dt":  append([]byte{0}, le(1706933106123456, 8)...), // not NULL, Unix microseconds
		"ts":  le(1706933106789, 8),
		"d":   le(-25567, 4), // days before 1970
		"b":   {1},
		"dec": append([]byte{0}, le(15_000_000_000, 32)...), // 1.5 at scale 10
		"e":   {2},
		"s":   {1, 0}, // NULL: an empty string behind it
		"bi":  []byte("abcd"),
	} {
		if got, ok := sent[name]; !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: the server got %x, want %x", name, got, want)
		}
	}
}

// TestDriverCompression: clickhouse-go's connection takes auto as none
// only when every address names this host without a lookup.
func TestDriverCompression(t *testing.T) {
	for _, cc := range []struct {
		v     string
		addrs []string
		want  clickhouse.CompressionMethod
	}{
		{config.CompressionAuto, []string{"127.0.0.1:9000"}, clickhouse.CompressionNone},
		{config.CompressionAuto, []string{"localhost:9000", "[::1]:9000"}, clickhouse.CompressionNone},
		{config.CompressionAuto, []string{"127.0.0.1:9000", "ch2:9000"}, clickhouse.CompressionLZ4},
		{config.CompressionAuto, []string{"10.1.2.3:9000"}, clickhouse.CompressionLZ4},
		{config.CompressionAuto, nil, clickhouse.CompressionLZ4},
		{config.CompressionLZ4, []string{"127.0.0.1:9000"}, clickhouse.CompressionLZ4},
		{config.CompressionNone, []string{"ch:9000"}, clickhouse.CompressionNone},
		{config.CompressionZSTD, []string{"127.0.0.1:9000"}, clickhouse.CompressionZSTD},
	} {
		if got := driverCompression(cc.v, cc.addrs).Method; got != cc.want {
			t.Errorf("%s with %v: %v, want %v", cc.v, cc.addrs, got, cc.want)
		}
	}
}
