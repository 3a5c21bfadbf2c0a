package chnative

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
)

// compressible is Native-like data LZ4 shrinks: small integers and short
// repeated text.
func compressible(n int) []byte {
	b := make([]byte, 0, n)
	for i := 0; len(b) < n; i++ {
		b = append(b, byte(i%7), 0, 0, 0, 'a'+byte(i%3), 'x', 'y')
	}
	return b[:n]
}

// incompressible is what loadgen's varied rows fill frames with: random
// bytes, as its blobs are.
func incompressible(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// text is loadgen's varied text: characters drawn at random from its
// alphabet of ASCII and multi-byte UTF-8.
func text(n int, seed uint64) []byte {
	alphabet := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,;'\"\\\t\néßж中文🙂")
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, 0, n+4)
	for len(b) < n {
		b = append(b, string(alphabet[r.IntN(len(alphabet))])...)
	}
	return b[:n]
}

func chgoFrame(t testing.TB, m compress.Method, src []byte) []byte {
	w := compress.NewWriter(compress.LevelZero, m)
	if err := w.Compress(src); err != nil {
		t.Fatal(err)
	}
	return w.Data
}

// decodeFrame reads a frame back with ch-go's reader, which checks the
// checksum as ClickHouse does.
func decodeFrame(t testing.TB, frame []byte, size int) []byte {
	t.Helper()
	out := make([]byte, size)
	if _, err := io.ReadFull(compress.NewReader(bytes.NewReader(frame)), out); err != nil {
		t.Fatalf("decoding the frame: %v", err)
	}
	return out
}

// TestFrameWriter: compressible bytes make ch-go's LZ4 frame byte for
// byte; bytes LZ4 cannot shrink make a NONE frame of the bytes as they
// are, smaller than the LZ4 one, its checksum right. The writer's buffer
// is poisoned before each frame: what it held before must not show.
func TestFrameWriter(t *testing.T) {
	var f frameWriter
	poison := func(b []byte) {
		for i := range b {
			b[i] = 0xA5
		}
	}
	cases := []struct {
		name  string
		src   []byte
		plain bool
	}{
		{"compressible 1 MiB", compressible(frameSize), false},
		{"incompressible 1 MiB", incompressible(frameSize, 1), true},
		{"compressible after a larger frame", compressible(1000), false},
		{"incompressible small", incompressible(100, 2), true},
		{"a few bytes", []byte{1, 2, 3}, true},
		{"incompressible 3 MiB", incompressible(3<<20, 3), true},
		{"varied text", text(frameSize, 7), true},
	}
	for _, tc := range cases {
		poison(f.data[:cap(f.data)])
		buf := append(make([]byte, frameHead), tc.src...)
		poison(buf[:frameHead])
		plain := f.plain
		frame, err := f.frame(CompressionLZ4, buf, frameHead)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.plain - plain; got != map[bool]uint64{false: 0, true: 1}[tc.plain] {
			t.Errorf("%s: %d frames counted plain", tc.name, got)
		}
		lz4 := chgoFrame(t, compress.LZ4, tc.src)
		if tc.plain {
			if frame[frameChecksum] != methodNone || len(frame) != frameChecksum+frameHeader+len(tc.src) || len(frame) >= len(lz4) {
				t.Errorf("%s: method 0x%02x, %d bytes (LZ4's frame: %d)", tc.name, frame[frameChecksum], len(frame), len(lz4))
			}
			if !bytes.Equal(frame, chgoFrame(t, compress.None, tc.src)) {
				t.Errorf("%s: not ch-go's NONE frame of the bytes", tc.name)
			}
		} else if !bytes.Equal(frame, lz4) {
			t.Errorf("%s: not ch-go's LZ4 frame", tc.name)
		}
		if !bytes.Equal(decodeFrame(t, frame, len(tc.src)), tc.src) {
			t.Errorf("%s: decodes to other bytes", tc.name)
		}
	}
	// A buffer without room for the header still makes a NONE frame.
	src := incompressible(500, 8)
	frame, err := f.frame(CompressionLZ4, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, chgoFrame(t, compress.None, src)) {
		t.Error("a NONE frame without room in the buffer: not ch-go's")
	}
	// LZ4Adaptive: LZ4's frames where the start shrinks, NONE frames
	// without compressing the rest where it does not, even when the rest
	// would have shrunk (the trade that keeps it off by default); frames
	// too small to probe as LZ4's.
	mixed := append(incompressible(probeSize, 9), compressible(frameSize-probeSize)...)
	for _, tc := range []struct {
		name          string
		src           []byte
		plain, probed bool
	}{
		{"compressible", compressible(frameSize), false, false},
		{"incompressible", incompressible(frameSize, 10), true, true},
		{"varied text", text(frameSize, 11), true, true},
		{"incompressible start, compressible rest", mixed, true, true},
		{"compressible start, incompressible rest", append(compressible(probeSize), incompressible(frameSize-probeSize, 12)...), false, false},
		{"small incompressible", incompressible(2*probeSize, 13), true, false},
		{"small compressible", compressible(2 * probeSize), false, false},
	} {
		poison(f.data[:cap(f.data)])
		buf := append(make([]byte, frameHead), tc.src...)
		plain, probed := f.plain, f.probed
		frame, err := f.frame(CompressionLZ4Adaptive, buf, frameHead)
		if err != nil {
			t.Fatal(err)
		}
		if (f.plain-plain == 1) != tc.plain || (f.probed-probed == 1) != tc.probed {
			t.Errorf("adaptive, %s: %d plain, %d probed", tc.name, f.plain-plain, f.probed-probed)
		}
		want := chgoFrame(t, compress.LZ4, tc.src)
		if tc.plain {
			want = chgoFrame(t, compress.None, tc.src)
		}
		if !bytes.Equal(frame, want) {
			t.Errorf("adaptive, %s: not ch-go's frame", tc.name)
		}
	}
	// ZSTD frames are ch-go's.
	src = compressible(5000)
	frame, err = f.frame(CompressionZSTD, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(decodeFrame(t, frame, len(src)), src) || frame[frameChecksum] != methodZSTD {
		t.Error("the ZSTD frame does not decode")
	}
}

func TestFrameWriterAllocs(t *testing.T) {
	var f frameWriter
	src := append(make([]byte, frameHead), incompressible(frameSize, 4)...)
	mixed := append(make([]byte, frameHead), compressible(frameSize)...)
	if _, err := f.frame(CompressionLZ4, mixed, frameHead); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		_, _ = f.frame(CompressionLZ4, src, frameHead)
		_, _ = f.frame(CompressionLZ4, mixed, frameHead)
	}); n != 0 {
		t.Fatalf("%v allocations a frame", n)
	}
}

// BenchmarkFrame frames 1 MiB (frameSize) of bytes LZ4 cannot shrink
// (loadgen's varied rows' blobs) and of bytes it can, against ch-go's
// writer, which the encoder used before.
func BenchmarkFrame(b *testing.B) {
	for _, in := range []struct {
		name string
		src  []byte
	}{{"incompressible", incompressible(frameSize, 5)}, {"text", text(frameSize, 6)}, {"compressible", compressible(frameSize)}} {
		b.Run(in.name+"/frameWriter", func(b *testing.B) {
			var f frameWriter
			buf := append(make([]byte, frameHead), in.src...)
			b.ReportAllocs()
			b.SetBytes(int64(len(in.src)))
			for i := 0; i < b.N; i++ {
				if _, err := f.frame(CompressionLZ4, buf, frameHead); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/ch-go", func(b *testing.B) {
			w := compress.NewWriter(compress.LevelZero, compress.LZ4)
			b.ReportAllocs()
			b.SetBytes(int64(len(in.src)))
			for i := 0; i < b.N; i++ {
				if err := w.Compress(in.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPlainFramesInserted inserts into the real ClickHouse (18.16 here)
// with LZ4 a block whose frames are NONE frames (random strings, 6 MiB)
// and LZ4 frames (a column of one repeated value), then reads back a hash
// of every value: the server must take both kinds in one insert, their
// checksums included.
func TestPlainFramesInserted(t *testing.T) {
	for _, m := range []Compression{CompressionLZ4, CompressionLZ4Adaptive} {
		t.Run(m.String(), func(t *testing.T) { testPlainFramesInserted(t, m) })
	}
}

func testPlainFramesInserted(t *testing.T, m Compression) {
	c, ch, db := setup(t)
	c.opts.Compression, c.enc.method = m, m
	ctx := context.Background()
	if err := ch.Exec(ctx, "CREATE TABLE "+db+".f (id UInt32, s String, k UInt64) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	const rows = 6000
	values := make([][]byte, rows)
	want := sha256.New()
	for i := range values {
		values[i] = incompressible(1024+i%64, uint64(i))
		want.Write(values[i])
	}
	err := c.Insert(ctx, "INSERT INTO "+db+".f (id, s, k)", func([]Column) error { return nil }, func(e *Encoder) error {
		e.StartBlock(3, rows)
		e.Column("id", "UInt32")
		for i := range values {
			e.Uint32(uint32(i))
		}
		e.Column("s", "String")
		for _, v := range values {
			e.StringBytes(v)
		}
		e.Column("k", "UInt64")
		for range values {
			e.Uint64(42)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.enc.PlainFrames() < 5 || (m == CompressionLZ4Adaptive) != (c.enc.ProbedFrames() >= 4) {
		t.Fatalf("%d NONE frames, %d of them probed, want the string column's", c.enc.PlainFrames(), c.enc.ProbedFrames())
	}
	var got string
	var sum uint64
	if err := ch.QueryRow(ctx, "SELECT hex(SHA256(arrayStringConcat(groupArray(s)))), sum(k) FROM (SELECT s, k FROM "+db+".f ORDER BY id)").Scan(&got, &sum); err != nil {
		t.Fatal(err)
	}
	if got != hex.EncodeToString(want.Sum(nil)) && got != strings.ToUpper(hex.EncodeToString(want.Sum(nil))) || sum != 42*rows {
		t.Fatalf("ClickHouse holds other strings (SHA256 %s) or sum(k) %d", got, sum)
	}
}
