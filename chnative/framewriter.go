package chnative

import (
	"encoding/binary"
	"fmt"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/go-faster/city"
	"github.com/pierrec/lz4/v4"
)

// frameWriter frames the client's blocks as ClickHouse's compressed
// blocks: the CityHash128 of the rest, the method byte, the frame's size
// from that byte on and the data's size (UInt32s), then the data.
//
// LZ4 frames are ch-go's, byte for byte (the same pierrec/lz4 call), but
// for two things: the output buffer is reused without being zeroed first
// (ch-go clears a bound's worth of bytes a frame), and a frame LZ4 did not
// shrink goes as a NONE frame (0x02) holding the bytes as they are. Such a
// frame is always smaller than its LZ4 frame (LZ4 adds a byte in 255 to
// incompressible bytes), keeps the checksum, and costs the server a copy
// instead of a decompression; ClickHouse's CompressedReadBufferBase has
// read NONE frames beside LZ4 and ZSTD since before 18.16 (which the tests
// insert into). So it trades nothing and is always on: blobs and text of
// high entropy (loadgen's varied rows) fill most frames with such bytes.
// CompressionLZ4Adaptive also spares compressing them (probeSize).
type frameWriter struct {
	lz4  lz4.Compressor
	zstd *compress.Writer
	data []byte
	// plain counts the LZ4 frames sent as NONE frames; probed, those of
	// them CompressionLZ4Adaptive did not compress past the probe.
	plain, probed uint64
}

// probeSize is how much of a frame CompressionLZ4Adaptive compresses to
// judge the rest: 1/16 of a full frame, many values of a string column.
const probeSize = 64 << 10

// frameHead is the bytes an LZ4 frame has before its data: an Encoder
// keeps them free at the start of its buffer, so that a NONE frame is
// that buffer with its header written in, not a copy of it.
const frameHead = frameChecksum + frameHeader

// FrameHead is the bytes free before data that Encoder.Direct writes a
// frame's header into.
const FrameHead = frameHead

// frame returns buf[head:] framed with method (LZ4, LZ4Adaptive or
// ZSTD), valid until the next call or until buf changes: an LZ4 frame is
// in the writer's buffer, and so is a NONE frame unless head is
// frameHead: then it is buf itself with its header in buf[:head]. With
// ZSTD, head is 0.
func (f *frameWriter) frame(method Compression, buf []byte, head int) ([]byte, error) {
	src := buf[head:]
	if method == CompressionZSTD {
		if f.zstd == nil {
			f.zstd = compress.NewWriter(compress.LevelZero, compress.ZSTD)
		}
		if err := f.zstd.Compress(src); err != nil {
			return nil, err
		}
		return f.zstd.Data, nil
	}
	need := frameHead + lz4.CompressBlockBound(len(src))
	if cap(f.data) < need {
		f.data = make([]byte, need)
	}
	// Not zeroed: CompressBlock writes every byte it reports, and only
	// those are sent.
	f.data = f.data[:need]
	if method == CompressionLZ4Adaptive && len(src) > 2*probeSize {
		n, err := f.lz4.CompressBlock(src[:probeSize], f.data[frameHead:])
		if err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if n == 0 || n >= probeSize {
			f.probed++
			return f.plainFrame(buf, head), nil
		}
	}
	n, err := f.lz4.CompressBlock(src, f.data[frameHead:])
	if err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	if n == 0 || n >= len(src) {
		return f.plainFrame(buf, head), nil
	}
	return putFrameHeader(f.data[:frameHead+n], methodLZ4, n, len(src)), nil
}

// plainFrame is buf[head:] as a NONE frame: buf itself when head is
// frameHead, else a copy in the writer's buffer, which must hold it.
func (f *frameWriter) plainFrame(buf []byte, head int) []byte {
	src := buf[head:]
	f.plain++
	if head == frameHead {
		return putFrameHeader(buf, methodNone, len(src), len(src))
	}
	n := copy(f.data[frameHead:], src) // no room for the header in buf
	return putFrameHeader(f.data[:frameHead+n], methodNone, n, len(src))
}

// putFrameHeader writes the header and checksum of the frame of n data
// bytes after frameHead, raw of them decompressed.
func putFrameHeader(frame []byte, method byte, n, raw int) []byte {
	frame[frameChecksum] = method
	binary.LittleEndian.PutUint32(frame[frameChecksum+1:], uint32(frameHeader+n))
	binary.LittleEndian.PutUint32(frame[frameChecksum+5:], uint32(raw))
	h := city.CH128(frame[frameChecksum:])
	binary.LittleEndian.PutUint64(frame[0:], h.Low)
	binary.LittleEndian.PutUint64(frame[8:], h.High)
	return frame
}
