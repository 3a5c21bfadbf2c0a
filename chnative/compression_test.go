package chnative

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
)

// TestCompressionMethods inserts into a scripted 26.x server with each of
// the client's compressions against each method the server may frame its
// own blocks with: the query's flag, the method of the client's frames
// and the server's header (framed or, with the flag off, plain, as
// TCPHandler sends it) must agree, or the server misreads the block or
// the client the header. A block of 3 MiB spans several frames.
func TestCompressionMethods(t *testing.T) {
	const big = 3 << 20 / 4 // UInt32 values in the large block
	for _, cc := range []struct {
		c      Compression
		method byte // the client's frames; 0: none, the flag off
	}{{CompressionLZ4, chnativetest.MethodLZ4}, {CompressionZSTD, chnativetest.MethodZSTD}, {CompressionNone, 0}, {CompressionLZ4Adaptive, chnativetest.MethodLZ4}} {
		for _, server := range []byte{chnativetest.MethodLZ4, chnativetest.MethodZSTD, chnativetest.MethodNone} {
			t.Run(cc.c.String()+"/server "+methodNames[server], func(t *testing.T) {
				script := server26(server)
				script.AfterData = []chnativetest.Packet{chnativetest.Progress(0, 0, 0, 2, 16), chnativetest.Log("inserted")}
				srv := chnativetest.Start(t, script)
				c, err := Dial(context.Background(), Options{Addr: []string{srv.Addr()}, User: "u", Password: "p",
					ReadTimeout: time.Minute, Compression: cc.c})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for i := 0; i < 2; i++ {
					if err := twoRows(c, nil); err != nil {
						t.Fatalf("insert %d: %v", i, err)
					}
				}
				err = c.Insert(context.Background(), "INSERT INTO d.t (a)", func([]Column) error { return nil }, func(e *Encoder) error {
					e.StartBlock(1, big)
					e.Column("a", "UInt32")
					for i := uint32(0); i < big; i++ {
						e.Uint32(i)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("the large block: %v", err)
				}
				inserts := srv.Inserts()
				if len(inserts) != 3 {
					t.Fatalf("%d inserts", len(inserts))
				}
				for i, ins := range inserts {
					if ins.Compressed != (cc.c != CompressionNone) {
						t.Errorf("insert %d: the query's compression flag %v with %s", i, ins.Compressed, cc.c)
					}
					for _, b := range ins.Blocks {
						// LZ4 frames that LZ4 did not shrink go as NONE
						// frames (frameWriter): these blocks' bytes do not.
						if b.Method != cc.method && !(cc.method == chnativetest.MethodLZ4 && b.Method == chnativetest.MethodNone) {
							t.Errorf("insert %d: a block framed with method 0x%02x, want 0x%02x", i, b.Method, cc.method)
						}
					}
				}
				wantTwoRows(t, inserts[0])
				wantTwoRows(t, inserts[1])
				b := inserts[2].Blocks
				if len(b) != 1 || b[0].Rows != big || len(b[0].Data[0]) != 4*big {
					t.Fatalf("the large block arrived as %d blocks", len(b))
				}
				for i := uint32(0); i < big; i += 4099 {
					if got := binary.LittleEndian.Uint32(b[0].Data[0][4*i:]); got != i {
						t.Fatalf("row %d holds %d", i, got)
					}
				}
			})
		}
	}
}

// TestCompressionAuto: auto sends plain Native (the query's flag off) to
// a server on this host, here the scripted one on 127.0.0.1 and on this
// host's own non-loopback address when it has one, and decides LZ4 for
// a peer elsewhere (onThisHost, fed addresses: no remote host here).
func TestCompressionAuto(t *testing.T) {
	addrs := []string{"127.0.0.1"}
	if ip := ownAddress(); ip != "" {
		addrs = append(addrs, ip)
	}
	for _, host := range addrs {
		t.Run(host, func(t *testing.T) {
			srv := chnativetest.StartOn(t, host, server26(chnativetest.MethodLZ4))
			c, err := Dial(context.Background(), Options{Addr: []string{srv.Addr()}, User: "u", Password: "p",
				ReadTimeout: time.Minute, Compression: CompressionAuto})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Compression() != CompressionNone {
				t.Fatalf("auto to %s decided %s, want none", srv.Addr(), c.Compression())
			}
			if err := twoRows(c, nil); err != nil {
				t.Fatal(err)
			}
			ins := srv.Inserts()
			if len(ins) != 1 || ins[0].Compressed {
				t.Fatalf("%d inserts, the first's compression flag on: %v", len(ins), len(ins) == 1 && ins[0].Compressed)
			}
			wantTwoRows(t, ins[0])
		})
	}
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 9000} }
	for _, cc := range []struct {
		peer, local string
		here        bool
	}{{"127.0.0.1", "127.0.0.1", true}, {"::1", "::1", true}, {"127.0.0.2", "127.0.0.1", true},
		{"10.0.0.5", "10.0.0.5", true}, {"10.0.0.6", "10.0.0.5", false}, {"2001:db8::1", "2001:db8::2", false}} {
		if got := onThisHost(tcp(cc.peer), tcp(cc.local)); got != cc.here {
			t.Errorf("a peer %s from %s: on this host %v, want %v", cc.peer, cc.local, got, cc.here)
		}
	}
}

// ownAddress is one of this host's non-loopback IPv4 addresses, or "".
func ownAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

var methodNames = map[byte]string{chnativetest.MethodLZ4: "LZ4", chnativetest.MethodZSTD: "ZSTD", chnativetest.MethodNone: "NONE"}

// TestEncoderPlain: with compression off the encoder writes the block as
// it is, every byte the capture holds, and nothing else.
func TestEncoderPlain(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	e := &Encoder{w: w, method: CompressionNone}
	want := NewCapture()
	for _, enc := range []*Encoder{e, want} {
		enc.buf = enc.buf[:0]
		enc.StartBlock(1, 3)
		enc.Column("s", "String")
		enc.String("a")
		enc.String(string(make([]byte, frameSize+10)))
		enc.String("c")
		if err := enc.end(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Captured()) {
		t.Fatalf("%d bytes written plain, want the %d of the block", out.Len(), len(want.Captured()))
	}
}
