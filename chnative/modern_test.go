package chnative

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
)

// The scripted servers of these tests answer as ClickHouse's TCPHandler
// does at the client's revision (chnativetest). What they cover that the
// real 18.16 cannot: a 26.x hello, ZSTD and NONE frames, five-field
// Progress, packets a server withholds below their revision, the header
// types of current servers, and the protocol surprises that send a table
// to clickhouse-go.

// server26 is a ClickHouse 26.9 with the defaults that matter here:
// async_insert known (on by default since 26.3), client info checked
// against the hello, blocks in ZSTD.
func server26(compression byte) chnativetest.Script {
	return chnativetest.Script{Major: 26, Minor: 9, Patch: 2, Revision: chnativetest.Revision26,
		Timezone: "Europe/Berlin", DisplayName: "ch26", User: "u", Password: "p",
		Compression: compression, ValidateClientInfo: true,
		Settings: map[string]string{"async_insert": "Bool", "insert_distributed_sync": "Bool", "distributed_foreground_insert": "Bool",
			"max_threads": "MaxThreads", "network_compression_method": "String"}}
}

func dialScripted(t *testing.T, srv *chnativetest.Server, settings func(Server) []Setting) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), Options{Addr: []string{srv.Addr()}, User: "u", Password: "p",
		ReadTimeout: time.Minute, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// twoRows inserts rows (1, 3), (2, 4) into d.t (a UInt32, b UInt32).
func twoRows(c *Conn, header func([]Column) error) error {
	if header == nil {
		header = func([]Column) error { return nil }
	}
	return c.Insert(context.Background(), "INSERT INTO d.t (a, b)", header, func(e *Encoder) error {
		e.StartBlock(2, 2)
		e.Column("a", "UInt32")
		e.Uint32(1)
		e.Uint32(2)
		e.Column("b", "UInt32")
		e.Uint32(3)
		e.Uint32(4)
		return nil
	})
}

func wantTwoRows(t *testing.T, ins chnativetest.Insert) {
	t.Helper()
	if !ins.Completed || len(ins.Blocks) != 1 {
		t.Fatalf("insert completed %v with %d blocks", ins.Completed, len(ins.Blocks))
	}
	b := ins.Blocks[0]
	if b.Rows != 2 || len(b.Columns) != 2 || b.Columns[1] != (chnativetest.Column{Name: "b", Type: "UInt32"}) ||
		!bytes.Equal(b.Data[0], []byte{1, 0, 0, 0, 2, 0, 0, 0}) || !bytes.Equal(b.Data[1], []byte{3, 0, 0, 0, 4, 0, 0, 0}) {
		t.Fatalf("the server got %+v", b)
	}
}

// TestCurrentServers inserts into scripted current servers, each way a
// current server may answer an INSERT at revision 54420.
func TestCurrentServers(t *testing.T) {
	after := []chnativetest.Packet{
		// What 26.x sends after an insert's data, or would at a higher
		// revision: Progress with written rows and bytes (five fields at
		// 54420), a log line (the user's send_logs_level), and
		// ProfileEvents and TimezoneUpdate, which it withholds below
		// 54456 and 54464.
		chnativetest.Progress(0, 0, 0, 2, 16),
		chnativetest.Log("2 rows inserted"),
		chnativetest.ProfileEvents(),
		chnativetest.TimezoneUpdate("UTC"),
		chnativetest.Progress(0, 0, 0, 0, 0),
	}
	for _, tc := range []struct {
		name   string
		script chnativetest.Script
	}{
		{"26.x LZ4", server26(chnativetest.MethodLZ4)},
		{"26.x ZSTD", server26(chnativetest.MethodZSTD)}, // the default from ClickHouse PR #108786
		{"26.x NONE", server26(chnativetest.MethodNone)},
		{"18.16", chnativetest.Script{Major: 18, Minor: 16, Patch: 1, Revision: 54412, User: "u", Password: "p",
			Settings: map[string]string{"insert_distributed_sync": ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.script.AfterData = after
			srv := chnativetest.Start(t, tc.script)
			var fromHello Server
			c := dialScripted(t, srv, func(s Server) []Setting {
				fromHello = s
				if s.Major >= 21 {
					return []Setting{{Name: "async_insert", Value: 0}}
				}
				return nil
			})
			want := Server{Name: "ClickHouse", Major: tc.script.Major, Minor: tc.script.Minor, Patch: tc.script.Patch,
				Revision: tc.script.Revision, Timezone: tc.script.Timezone, DisplayName: tc.script.DisplayName}
			if c.Server() != want || fromHello != want || c.revision != min(Revision, tc.script.Revision) {
				t.Fatalf("hello read as %+v (settings chosen from %+v), revision %d", c.Server(), fromHello, c.revision)
			}
			// Two inserts on one connection: the first left it clean.
			for i := 0; i < 2; i++ {
				var header []Column
				if err := twoRows(c, func(cols []Column) error { header = cols; return nil }); err != nil {
					t.Fatalf("insert %d: %v", i, err)
				}
				if len(header) != 2 || header[0] != (Column{"a", "UInt32"}) {
					t.Fatalf("header %v", header)
				}
			}
			inserts := srv.Inserts()
			if len(inserts) != 2 {
				t.Fatalf("%d inserts", len(inserts))
			}
			for _, ins := range inserts {
				wantTwoRows(t, ins)
				if ins.Hello != ins.ClientInfo || ins.Hello != fmt.Sprintf("binlog2ch 1.0 revision %d", Revision) {
					t.Errorf("hello %q, client info %q", ins.Hello, ins.ClientInfo)
				}
				if len(ins.Unknown) > 0 {
					t.Errorf("settings the server does not know: %v", ins.Unknown)
				}
				if tc.script.Major >= 21 && ins.Settings["async_insert"] != "0" {
					t.Errorf("settings %v, want async_insert=0", ins.Settings)
				}
				// At 54420 the server withholds what later revisions get.
				if slices.Contains(ins.Sent, "ProfileEvents") || slices.Contains(ins.Sent, "TimezoneUpdate") {
					t.Errorf("the script sent %v at revision %d", ins.Sent, c.revision)
				}
			}
		})
	}
}

// TestCurrentHeaderTypes reads the header of an INSERT into a table of
// every type a current server may name: a header block has no rows, so
// the names are all there is to read, and they come through as the
// server spells them for the caller (sink's checkHeader) to judge.
func TestCurrentHeaderTypes(t *testing.T) {
	types := []string{
		"LowCardinality(String)", "LowCardinality(Nullable(String))", "Nullable(Int32)", "Bool", "Date32",
		"DateTime64(3)", "DateTime64(6, 'UTC')", "Map(String, UInt64)", "IPv4", "IPv6", "Int128", "Int256", "UInt256",
		"Decimal(76, 10)", "JSON", "JSON(max_dynamic_paths=16, a.b UInt32, SKIP c.d, SKIP REGEXP '^x')",
		"Variant(String, UInt64, Array(UInt8))", "Dynamic", "Dynamic(max_types=8)", "Array(Nullable(String))",
		"Enum8('a\\'b' = 1, '(' = 2)", "Tuple(a Int8, `b c` String)", "Nested(x UInt8)", "Nullable(Decimal(9, 2))",
		"AggregateFunction(uniq, UInt64)", "FixedString(16)", "UUID", "Time64(3)",
	}
	var want []chnativetest.Column
	for i, typ := range types {
		want = append(want, chnativetest.Column{Name: fmt.Sprintf("c%d", i), Type: typ})
	}
	for _, method := range []byte{chnativetest.MethodLZ4, chnativetest.MethodZSTD, chnativetest.MethodNone} {
		script := server26(method)
		script.Header = func(string) []chnativetest.Column { return want }
		srv := chnativetest.Start(t, script)
		c := dialScripted(t, srv, nil)
		refused := errors.New("no encoder for these types")
		var got []Column
		err := twoRows(c, func(cols []Column) error { got = cols; return refused })
		if !errors.Is(err, refused) {
			t.Fatalf("method 0x%02x: %v", method, err)
		}
		if len(got) != len(want) {
			t.Fatalf("method 0x%02x: header %v", method, got)
		}
		for i := range got {
			if got[i].Name != want[i].Name || got[i].Type != want[i].Type {
				t.Errorf("method 0x%02x: column %d read as %q %q, sent as %q %q", method, i, got[i].Name, got[i].Type, want[i].Name, want[i].Type)
			}
		}
		// The caller refused the header: no data went out.
		c.Close()
		srv.Close()
		if ins := srv.Inserts(); len(ins) != 1 || len(ins[0].Blocks) != 0 {
			t.Errorf("method 0x%02x: the server got %+v", method, ins)
		}
	}
}

// TestProtocolSurprises: every answer chnative cannot follow is a
// *ProtocolError naming its reason, and says whether the block had gone
// out (the insert's outcome then unknown), so that the caller can close
// the connection and send the block through clickhouse-go.
func TestProtocolSurprises(t *testing.T) {
	garbageHeader := func(string) []chnativetest.Column {
		// What a misread block looks like: bytes where a type name goes.
		return []chnativetest.Column{{Name: "a", Type: "\x01\x00\xffUInt32"}, {Name: "b", Type: "UInt32"}}
	}
	for _, tc := range []struct {
		name     string
		edit     func(*chnativetest.Script)
		reason   string
		dataSent bool
	}{
		{"compression method unknown", func(s *chnativetest.Script) { s.Compression = 0x42 }, ReasonCompression, false},
		{"TimezoneUpdate before the header, below its revision", func(s *chnativetest.Script) {
			s.BeforeHeader = []chnativetest.Packet{chnativetest.Raw(17, []byte{3, 'U', 'T', 'C'})}
		}, ReasonUnknownPacket, false},
		{"a packet type no server has", func(s *chnativetest.Script) {
			s.BeforeHeader = []chnativetest.Packet{chnativetest.Raw(99, nil)}
		}, ReasonUnknownPacket, false},
		{"a header that is not type names", func(s *chnativetest.Script) { s.Header = garbageHeader }, ReasonHeaderType, false},
		{"ProfileEvents after the data, below its revision", func(s *chnativetest.Script) {
			s.AfterData = []chnativetest.Packet{chnativetest.Progress(0, 0, 0, 2, 16), chnativetest.Raw(14, []byte{0})}
		}, ReasonUnknownPacket, true},
		{"data after the insert", func(s *chnativetest.Script) {
			s.AfterData = []chnativetest.Packet{chnativetest.Raw(1, []byte{0})}
		}, ReasonUnknownPacket, true},
		{"a Log block this client cannot skip", func(s *chnativetest.Script) {
			// A log block with a column type it has no width for.
			s.AfterData = []chnativetest.Packet{chnativetest.Raw(10, []byte{0, 1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 1, 1, 1, 'x', 4, 'U', 'U', 'I', 'D'})}
		}, ReasonUnknownPacket, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := server26(chnativetest.MethodZSTD)
			tc.edit(&script)
			srv := chnativetest.Start(t, script)
			c := dialScripted(t, srv, nil)
			err := twoRows(c, nil)
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Reason != tc.reason || pe.DataSent != tc.dataSent {
				t.Fatalf("got %v (%#v), want a protocol surprise %s with data sent %v", err, pe, tc.reason, tc.dataSent)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("the error does not name its reason: %v", err)
			}
			c.Close()
		})
	}
}

// TestHelloSurprise: a packet chnative does not know in place of the
// server's hello is a protocol surprise too; Dial does not try the other
// addresses, which would answer alike.
func TestHelloSurprise(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256)
		_, _ = c.Read(buf) // the hello, in one write
		_, _ = c.Write([]byte{99})
		_, _ = c.Read(buf) // until the client hangs up
	}()
	_, err = Dial(context.Background(), Options{Addr: []string{ln.Addr().String()}})
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Reason != ReasonUnknownPacket {
		t.Fatalf("got %v, want an unknown_packet surprise", err)
	}
}

// TestExceptionMidInsert: an exception after the data went out (the
// server refused the rows: too many parts, a value it cannot store) is the
// server's *Exception with its code and message, whether it came once the
// data was in or while it came in.
func TestExceptionMidInsert(t *testing.T) {
	for _, after := range []int{0, 1} {
		script := server26(chnativetest.MethodZSTD)
		script.Fail = &chnativetest.Exception{Code: 252, Name: "TOO_MANY_PARTS", Message: "Too many parts (300) in table d.t"}
		script.FailAfterBlocks = after
		script.AfterData = []chnativetest.Packet{chnativetest.Progress(0, 0, 0, 2, 16)}
		srv := chnativetest.Start(t, script)
		c := dialScripted(t, srv, nil)
		err := twoRows(c, nil)
		var ex *Exception
		if !errors.As(err, &ex) || ex.Code != 252 || !strings.Contains(ex.Message, "Too many parts (300)") {
			t.Fatalf("after %d blocks: got %v, want the server's exception 252", after, err)
		}
		// The caller closes the connection after an insert's error.
		c.Close()
		srv.Close()
		if ins := srv.Inserts(); len(ins) != 1 || len(ins[0].Blocks) != 1 {
			t.Errorf("after %d blocks: the server got %+v", after, ins)
		}
	}
}

// TestOnlyKnownSettings: settings go in the old binary format, typed by
// the server; the scripted server reads them that way, so one it does not
// know shows (and, were its value not 0, would desynchronise the query).
func TestOnlyKnownSettings(t *testing.T) {
	srv := chnativetest.Start(t, server26(chnativetest.MethodLZ4))
	c := dialScripted(t, srv, func(Server) []Setting {
		return []Setting{{Name: "async_insert", Value: 0}, {Name: "insert_distributed_sync", Value: 1}, {Name: "no_such_setting", Value: 0}}
	})
	if err := twoRows(c, nil); err != nil {
		t.Fatal(err)
	}
	ins := srv.Inserts()[0]
	wantTwoRows(t, ins)
	if ins.Settings["async_insert"] != "0" || ins.Settings["insert_distributed_sync"] != "1" || !slices.Equal(ins.Unknown, []string{"no_such_setting"}) {
		t.Errorf("settings %v, unknown %v", ins.Settings, ins.Unknown)
	}
	if errs := srv.TakeErrors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "no_such_setting") {
		t.Errorf("the scripted server saw %v", errs)
	}
}
