package chnative

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/ClickHouse/ch-go/compress"
)

// Compression is how an insert's blocks travel, both ways: the query
// packet's compression flag (Protocol::Compression in ClickHouse's
// TCPHandler), and, with it on, the method of the client's frames.
type Compression uint8

const (
	// CompressionLZ4 (the zero value): LZ4 frames, ClickHouse's own
	// default and the cheapest method that still shrinks the bytes.
	CompressionLZ4 Compression = iota
	// CompressionZSTD: ZSTD frames, smaller than LZ4's for more CPU, for
	// a slow or metered network.
	CompressionZSTD
	// CompressionNone: the flag off. The blocks go as plain Native on the
	// wire both ways: no frames, no CityHash128 checksums, no copy into a
	// frame. Not NONE frames (0x02): they would keep the checksum on both
	// sides and the copy, the cost this exists to drop; TCP's checksum
	// (and TLS's MAC, with TLS) guards the bytes in transit instead.
	CompressionNone
	// CompressionLZ4Adaptive: LZ4 frames, but a frame whose first
	// probeSize bytes LZ4 cannot shrink goes as a NONE frame without the
	// rest being compressed (frameWriter). It saves the client's LZ4 time
	// on incompressible bytes (blobs, random text) and may send a frame
	// uncompressed that would have shrunk past its start: a trade of bytes
	// for CPU, so not the default.
	CompressionLZ4Adaptive
	// CompressionAuto: CompressionNone on a connection to this host (its
	// peer a loopback address or the connection's own local address: no
	// wire between the two, the bytes cost a copy, not a network's time),
	// CompressionLZ4 on any other; decided per connection once it is up
	// (Conn.Compression). ClickHouse's own client decides so by default
	// (the compression option of ConnectionParameters, on for remote
	// hosts, off for local ones).
	CompressionAuto
)

func (m Compression) String() string {
	switch m {
	case CompressionLZ4:
		return "lz4"
	case CompressionZSTD:
		return "zstd"
	case CompressionNone:
		return "none"
	case CompressionLZ4Adaptive:
		return "lz4-adaptive"
	case CompressionAuto:
		return "auto"
	}
	return fmt.Sprintf("Compression(%d)", uint8(m))
}

// With compression on, the server's blocks come in compressed frames: a 16-byte CityHash128 of
// the rest, then a method byte, the frame's size from that byte on (so 9
// more than the compressed data) and the decompressed size, both UInt32,
// then the data. The server picks the method from its setting
// network_compression_method, whatever the client compresses with: LZ4 by
// default until ClickHouse switched it to ZSTD (ClickHouse PR #108786), and
// NONE when a user sets it so.
const (
	methodNone = 0x02
	methodLZ4  = 0x82
	methodZSTD = 0x90

	frameChecksum = 16
	frameHeader   = 9
	// maxFrameData bounds a frame's data, as ch-go's reader does, against
	// a corrupt size allocating without limit.
	maxFrameData = 128 << 20
)

// frameReader reads the decompressed bytes of the server's frames. It
// checks each frame's method before ch-go's reader decodes it, so that a
// method this client does not know is a *ProtocolError (the table falls
// back to clickhouse-go) rather than an error indistinguishable from a
// broken connection (retried natively forever). One ch-go reader serves
// the connection's frames, keeping its ZSTD decoder between them.
type frameReader struct {
	r    *bufio.Reader // the connection
	src  bytes.Reader  // the current frame, whole, for dec
	dec  *compress.Reader
	buf  []byte
	left int // decompressed bytes of the current frame not read yet
}

func (f *frameReader) Read(p []byte) (int, error) {
	for f.left == 0 {
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	if len(p) > f.left {
		p = p[:f.left]
	}
	n, err := f.dec.Read(p)
	f.left -= n
	if err != nil {
		return n, &ProtocolError{Reason: ReasonCompression, Err: fmt.Errorf("decoding a frame: %w", err)}
	}
	return n, nil
}

// next reads the next frame off the connection and hands it to the
// decoder.
func (f *frameReader) next() error {
	hdr, err := f.r.Peek(frameChecksum + frameHeader)
	if err == io.EOF {
		// Whoever reads wants a frame's bytes: the stream ended early.
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return err // the connection's error, not the server's format
	}
	method := hdr[frameChecksum]
	size := int64(binary.LittleEndian.Uint32(hdr[frameChecksum+1:]))
	data := int64(binary.LittleEndian.Uint32(hdr[frameChecksum+5:]))
	switch method {
	case methodNone, methodLZ4, methodZSTD:
	default:
		return &ProtocolError{Reason: ReasonCompression, Err: fmt.Errorf("a frame compressed with method 0x%02x, which this client cannot decode (it reads LZ4 0x82, ZSTD 0x90 and NONE 0x02)", method)}
	}
	if size < frameHeader || size-frameHeader > maxFrameData || data > maxFrameData ||
		method == methodNone && size-frameHeader != data {
		return &ProtocolError{Reason: ReasonCompression, Err: fmt.Errorf("a frame of %d bytes holding %d (method 0x%02x): not a frame this client can read", size-frameHeader, data, method)}
	}
	n := frameChecksum + int(size)
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		return err
	}
	f.src.Reset(f.buf)
	if f.dec == nil {
		f.dec = compress.NewReader(&f.src)
	}
	f.left = int(data)
	if data == 0 {
		// The server never sends an empty frame, but one must not stop the
		// stream: the decoder takes it (a read of nothing makes it load
		// the frame) and the loop in Read goes on to the next.
		if _, err := f.dec.Read(nil); err != nil {
			return &ProtocolError{Reason: ReasonCompression, Err: fmt.Errorf("decoding a frame: %w", err)}
		}
	}
	return nil
}
