package chnative

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
)

// fakeServer plays a current ClickHouse server (revision 54477) on the
// other end of a pipe: the protocol paths that ClickHouse 18.16, the only
// server here, cannot exercise. It checks what the client sends field by
// field and answers as a newer server does.
type fakeServer struct {
	t *testing.T
	r *bufio.Reader
	w *bufio.Writer
}

func (s *fakeServer) uvarint() uint64 {
	v, err := binary.ReadUvarint(s.r)
	if err != nil {
		s.t.Errorf("server: %v", err)
	}
	return v
}

func (s *fakeServer) str() string {
	n := s.uvarint()
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		s.t.Errorf("server: %v", err)
	}
	return string(b)
}

func (s *fakeServer) putUvarint(v uint64) { putUvarint(s.w, v) }
func (s *fakeServer) putStr(v string)     { putString(s.w, v) }

// block reads a compressed block and returns its columns and the raw
// column data.
func (s *fakeServer) block() ([]Column, uint64, []byte) {
	zr := bufio.NewReader(compress.NewReader(s.r))
	rd := &reader{r: zr}
	if err := rd.blockInfo(); err != nil {
		s.t.Fatalf("server: block info: %v", err)
	}
	ncols, _ := binary.ReadUvarint(zr)
	rows, _ := binary.ReadUvarint(zr)
	var cols []Column
	var data bytes.Buffer
	for i := uint64(0); i < ncols; i++ {
		name, _ := rd.string()
		typ, _ := rd.string()
		cols = append(cols, Column{name, typ})
		// The test's columns are UInt32: rows * 4 bytes.
		b := make([]byte, rows*4)
		if _, err := io.ReadFull(zr, b); err != nil {
			s.t.Fatalf("server: column %s: %v", name, err)
		}
		data.Write(b)
	}
	return cols, rows, data.Bytes()
}

func (s *fakeServer) sendBlock(kind uint64, cols []Column) {
	s.putUvarint(kind)
	s.putStr("")
	var raw bytes.Buffer
	bw := bufio.NewWriter(&raw)
	e := Encoder{w: bw}
	e.blockHeader(len(cols), 0)
	for _, c := range cols {
		e.Column(c.Name, c.Type)
	}
	if err := e.end(); err != nil {
		s.t.Fatal(err)
	}
	bw.Flush()
	s.w.Write(raw.Bytes())
}

func TestProtocolWithNewerServer(t *testing.T) {
	cc, sc := net.Pipe()
	defer cc.Close()
	srv := &fakeServer{t: t, r: bufio.NewReader(sc), w: bufio.NewWriter(sc)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sc.Close()
		// Hello.
		if srv.uvarint() != clientHello || srv.str() != "binlog2ch" {
			t.Error("server: not a client hello")
			return
		}
		srv.uvarint()
		srv.uvarint()
		if rev := srv.uvarint(); rev != Revision {
			t.Errorf("server: client revision %d", rev)
		}
		if db, user, pass := srv.str(), srv.str(), srv.str(); db != "default" || user != "u" || pass != "p" {
			t.Errorf("server: hello database/user/password %q %q %q", db, user, pass)
		}
		srv.putUvarint(serverHello)
		srv.putStr("ClickHouse")
		srv.putUvarint(25)
		srv.putUvarint(8)
		srv.putUvarint(54477)
		srv.putStr("UTC")
		srv.putStr("modern")
		srv.putUvarint(3)
		srv.w.Flush()
		// Query, as a server at revision 54420 reads it.
		if srv.uvarint() != clientQuery {
			t.Error("server: not a query")
			return
		}
		srv.str() // query id
		if kind, _ := srv.r.ReadByte(); kind != 1 {
			t.Errorf("server: query kind %d", kind)
		}
		srv.str()
		srv.str()
		srv.str()
		if iface, _ := srv.r.ReadByte(); iface != 1 {
			t.Errorf("server: interface %d", iface)
		}
		srv.str()
		srv.str()
		if name := srv.str(); name != "binlog2ch" {
			t.Errorf("server: client name %q", name)
		}
		srv.uvarint()
		srv.uvarint()
		srv.uvarint()
		srv.str()     // quota key
		srv.uvarint() // version patch
		if setting := srv.str(); setting != "" {
			t.Errorf("server: setting %q, want none", setting)
		}
		if stage, compressed := srv.uvarint(), srv.uvarint(); stage != stageComplete || compressed != 1 {
			t.Errorf("server: stage %d compression %d", stage, compressed)
		}
		if q := srv.str(); q != "INSERT INTO d.t (a, b) VALUES" {
			t.Errorf("server: query %q", q)
		}
		// The empty block that ends external tables.
		if srv.uvarint() != clientData || srv.str() != "" {
			t.Error("server: no data packet after the query")
		}
		if cols, rows, _ := srv.block(); len(cols) != 0 || rows != 0 {
			t.Errorf("server: external tables block has %d columns, %d rows", len(cols), rows)
		}
		// What a newer server sends before the header: column defaults.
		srv.putUvarint(serverTableColumns)
		srv.putStr("")
		srv.putStr("columns format version: 1\n2 columns:\n`a` UInt32\n`b` UInt32\n")
		srv.sendBlock(serverData, []Column{{"a", "UInt32"}, {"b", "UInt32"}})
		srv.w.Flush()
		// The data, then the empty block that ends it.
		if srv.uvarint() != clientData || srv.str() != "" {
			t.Error("server: no data packet")
		}
		cols, rows, data := srv.block()
		if len(cols) != 2 || rows != 2 || !bytes.Equal(data, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}) {
			t.Errorf("server: got %v, %d rows, %x", cols, rows, data)
		}
		if srv.uvarint() != clientData || srv.str() != "" {
			t.Error("server: no final data packet")
		}
		if _, rows, _ := srv.block(); rows != 0 {
			t.Errorf("server: final block has %d rows", rows)
		}
		// Progress with written rows (revision 54420), profile info, end.
		srv.putUvarint(serverProgress)
		for _, v := range []uint64{0, 0, 0, 2, 16} {
			srv.putUvarint(v)
		}
		srv.putUvarint(serverProfileInfo)
		for _, v := range []byte{0, 0, 0, 0, 0, 0} {
			srv.w.WriteByte(v)
		}
		srv.putUvarint(serverEndOfStream)
		srv.w.Flush()
	}()
	c := newConn(cc, cc, Options{User: "u", Password: "p", Database: "default", ReadTimeout: 10e9})
	if err := c.handshake(); err != nil {
		t.Fatal(err)
	}
	if c.revision != Revision || c.server.DisplayName != "modern" || c.server.Patch != 3 {
		t.Fatalf("negotiated %d with %+v", c.revision, c.server)
	}
	var header []Column
	err := c.Insert(context.Background(), "INSERT INTO d.t (a, b)", func(cols []Column) error {
		header = cols
		return nil
	}, func(e *Encoder) error {
		e.StartBlock(2, 2)
		e.Column("a", "UInt32")
		e.Uint32(1)
		e.Uint32(2)
		e.Column("b", "UInt32")
		e.Uint32(3)
		e.Uint32(4)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(header) != 2 || header[1] != (Column{"b", "UInt32"}) {
		t.Fatalf("header %v", header)
	}
	<-done
}
