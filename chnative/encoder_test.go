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
