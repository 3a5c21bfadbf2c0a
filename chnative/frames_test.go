package chnative

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
)

// TestFrameReader decodes frames of each method a server may use, as
// ch-go's writer (the reference here) makes them, several in a row as a
// long block comes, and refuses what it cannot read as a compression
// surprise while a cut connection stays the connection's error.
func TestFrameReader(t *testing.T) {
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte(i), 'x', byte(i * 7)}, 1000+i*500) }
	frame := func(m compress.Method, data []byte) []byte {
		w := compress.NewWriter(compress.LevelZero, m)
		if err := w.Compress(data); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), w.Data...)
	}
	var stream, want []byte
	for i, m := range []compress.Method{compress.ZSTD, compress.LZ4, compress.None, compress.ZSTD, compress.None, compress.LZ4} {
		stream = append(stream, frame(m, payload(i))...)
		want = append(want, payload(i)...)
	}
	// The connection goes on after the last frame: the reader must not
	// take those bytes.
	stream = append(stream, "next packet"...)
	conn := bufio.NewReader(bytes.NewReader(stream))
	f := &frameReader{r: conn}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(f, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decoded %d bytes, equal %v, %v", len(got), bytes.Equal(got, want), err)
	}
	if rest, _ := io.ReadAll(conn); string(rest) != "next packet" {
		t.Fatalf("the reader took the next packet's bytes: %q left", rest)
	}

	bad := func(edit func([]byte)) []byte {
		b := frame(compress.LZ4, payload(1))
		edit(b)
		return b
	}
	for _, tc := range []struct {
		name     string
		stream   []byte
		surprise bool
	}{
		{"unknown method", bad(func(b []byte) { b[16] = 0x42 }), true},
		{"checksum", bad(func(b []byte) { b[0] ^= 1 }), true},
		{"size beyond any frame", bad(func(b []byte) { b[20] = 0xff }), true},
		{"NONE with sizes that differ", func() []byte {
			b := frame(compress.None, payload(1))
			b[21]++ // decompressed size one more than the data
			return b
		}(), true},
		{"cut in the header", frame(compress.LZ4, payload(1))[:20], false},
		{"cut in the data", frame(compress.ZSTD, payload(1))[:40], false},
	} {
		f := &frameReader{r: bufio.NewReader(bytes.NewReader(tc.stream))}
		_, err := io.ReadAll(f)
		var pe *ProtocolError
		switch {
		case tc.surprise && (!errors.As(err, &pe) || pe.Reason != ReasonCompression):
			t.Errorf("%s: got %v, want a compression surprise", tc.name, err)
		case !tc.surprise && (err == nil || errors.As(err, &pe)):
			t.Errorf("%s: got %v, want the connection's error", tc.name, err)
		}
	}
}

// TestValidTypeName accepts the type names of current servers and refuses
// bytes that are none.
func TestValidTypeName(t *testing.T) {
	for _, s := range []string{"UInt8", "LowCardinality(Nullable(String))", "DateTime64(6, 'UTC')", "Map(String, UInt64)",
		"Decimal(76, 10)", "JSON(max_dynamic_paths=16, a.b UInt32, SKIP REGEXP '^x\\\\(')", "Variant(String, UInt64)",
		"Enum8('a)' = 1, 'b\\'' = -2)", "Tuple(`a b` Int8)", "Object('json')"} {
		if !validTypeName(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", "\x01UInt8", "UInt8\x00", "Array(UInt8", "Array(UInt8))", "Enum8('a = 1)", "8Int", "(UInt8)", "UInt8;"} {
		if validTypeName(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestSplitTypeArgs splits at the commas outside nested parentheses and
// quotes, up to the closing ')'.
func TestSplitTypeArgs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		args []string
		end  int
	}{
		{"a, b)", []string{"a", " b"}, 4},
		{"'c,)', cityHash64(x, `y,)`), 3) tail", []string{"'c,)'", " cityHash64(x, `y,)`)", " 3"}, 30},
		{")", []string{""}, 0},
		{"a, b", nil, -1},
		{"'a)", nil, -1},
	} {
		args, end := SplitTypeArgs(tc.in)
		if end != tc.end || !slices.Equal(args, tc.args) {
			t.Errorf("SplitTypeArgs(%q) = %q, %d; want %q, %d", tc.in, args, end, tc.args, tc.end)
		}
	}
}
