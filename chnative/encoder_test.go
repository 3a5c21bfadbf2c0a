package chnative

import (
	"bytes"
	"encoding/binary"
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
