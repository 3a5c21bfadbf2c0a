package chnative

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"testing"
)

// TestEncoderFrameBoundaries writes values of many sizes starting at every
// offset around a frame's end: the stream must come out whole (a length
// prefix that fills a frame once made the next copy panic).
func TestEncoderFrameBoundaries(t *testing.T) {
	for _, size := range []int{0, 1, 127, 128, 16384, frameSize - 1, frameSize, frameSize + 5, 3 * frameSize} {
		for offset := frameSize - 4; offset <= frameSize; offset++ {
			e := NewCapture()
			pad := make([]byte, offset)
			e.Bytes(pad)
			val := bytes.Repeat([]byte{'v'}, size)
			e.String(string(val))
			e.StringBytes(val)
			e.Zeros(size)
			e.Bytes(val)
			got := e.Captured()
			want := append([]byte(nil), pad...)
			for i := 0; i < 2; i++ {
				want = binary.AppendUvarint(want, uint64(size))
				want = append(want, val...)
			}
			want = append(want, make([]byte, size)...)
			want = append(want, val...)
			if !bytes.Equal(got, want) {
				t.Fatalf("size %d at offset %d: %d bytes out, want %d", size, offset, len(got), len(want))
			}
		}
	}
}

// TestGatherFrameBoundaries gathers selected fixed-width values starting at
// every offset around a frame's end, values straddling it included.
func TestGatherFrameBoundaries(t *testing.T) {
	for _, size := range []int{1, 2, 8, 16, 32} {
		data := make([]byte, 1000*size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		var sel []uint32
		for r := 999; r >= 0; r -= 3 { // out of order, with gaps
			sel = append(sel, uint32(r))
		}
		for offset := frameSize - 2*size; offset <= frameSize; offset++ {
			e := NewCapture()
			pad := make([]byte, offset)
			e.Bytes(pad)
			e.Gather(data, size, sel)
			want := append([]byte(nil), pad...)
			for _, r := range sel {
				want = append(want, data[int(r)*size:(int(r)+1)*size]...)
			}
			if got := e.Captured(); !bytes.Equal(got, want) {
				t.Fatalf("size %d at offset %d: the gathered values differ", size, offset)
			}
		}
	}
}

// TestDirect: data framed where it lies (Direct) reads back as the same
// bytes as copied data would, in every method, whether or not it has
// head bytes for a NONE frame's header, across frame sizes; the data is
// left as it was (a retried insert encodes the block again), and a second
// encoding of it is the same stream.
func TestDirect(t *testing.T) {
	kinds := map[string]func(n int) []byte{
		"compressible":   compressible,
		"incompressible": func(n int) []byte { return incompressible(n, uint64(n)) },
	}
	for _, m := range []Compression{CompressionLZ4, CompressionLZ4Adaptive, CompressionZSTD, CompressionNone} {
		for kind, gen := range kinds {
			for _, size := range []int{directMin - 1, directMin, frameSize, frameSize + 100, 2*frameSize + 7} {
				for _, head := range []int{0, FrameHead} {
					data := gen(size)
					p := append(make([]byte, head), data...)
					encode := func() []byte {
						var out bytes.Buffer
						w := bufio.NewWriter(&out)
						e := &Encoder{w: w, method: m}
						e.begin(clientData)
						e.Bytes([]byte("before"))
						e.Direct(p, head)
						e.Bytes([]byte("after"))
						if err := e.end(); err != nil {
							t.Fatal(err)
						}
						if err := w.Flush(); err != nil {
							t.Fatal(err)
						}
						return out.Bytes()
					}
					stream := encode()
					if !bytes.Equal(p[head:], data) {
						t.Fatalf("%v %s %d head %d: Direct changed the data", m, kind, size, head)
					}
					// A NONE frame of the whole data went out from p,
					// its header in the head bytes, not from a copy.
					inPlace := head == FrameHead && kind == "incompressible" && size >= directMin && size <= frameSize &&
						(m == CompressionLZ4 || m == CompressionLZ4Adaptive)
					if inPlace != (p[frameChecksum] == methodNone) {
						t.Fatalf("%v %s %d head %d: a NONE frame's header in the head bytes: %v, want %v", m, kind, size, head, !inPlace, inPlace)
					}
					if again := encode(); !bytes.Equal(again, stream) {
						t.Fatalf("%v %s %d head %d: a second encoding differs", m, kind, size, head)
					}
					body := stream[2:] // the packet kind and the empty table name
					want := slices.Concat([]byte("before"), data, []byte("after"))
					got := body
					if m != CompressionNone {
						// The frames hold want and nothing more (the
						// reader reports the end as a frame cut short).
						got = make([]byte, len(want))
						r := &frameReader{r: bufio.NewReader(bytes.NewReader(body))}
						if _, err := io.ReadFull(r, got); err != nil {
							t.Fatalf("%v %s %d head %d: reading the frames: %v", m, kind, size, head, err)
						}
						if n, _ := r.Read(make([]byte, 1)); n != 0 {
							t.Fatalf("%v %s %d head %d: bytes after the data", m, kind, size, head)
						}
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%v %s %d head %d: %d bytes read back, want %d", m, kind, size, head, len(got), len(want))
					}
				}
			}
		}
	}
}
