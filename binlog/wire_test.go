package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
)

// TestReadAcrossPackets: events read off the socket as the server frames
// them, a query of 17 MiB continued over two packets (0xffffff bytes,
// then the rest) among small ones, each event's bytes as the server wrote
// them.
func TestReadAcrossPackets(t *testing.T) {
	b := binlogtest.NewBinlog()
	big := strings.Repeat("x", 17<<20)
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "/*"+big+"*/ CREATE TABLE t (a int)"))
	b.Add(replication.XID_EVENT, binlogtest.XID(7))
	d := Read(b.Dial(t, binlogtest.File, 4), Config{Flavor: mysql.MySQLFlavor, Log: slog.New(slog.DiscardHandler)})
	defer d.Close()
	var queries []string
	for len(queries) < 2 {
		ev, err := d.GetEvent(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if q, ok := ev.Event.(*replication.QueryEvent); ok {
			queries = append(queries, string(q.Query))
		}
	}
	if queries[0] != "BEGIN" || len(queries[1]) != len(big)+len("/**/ CREATE TABLE t (a int)") || !strings.HasPrefix(queries[1], "/*xxx") || !strings.HasSuffix(queries[1], "*/ CREATE TABLE t (a int)") {
		t.Fatalf("queries read: %q, %d bytes", queries[0], len(queries[1]))
	}
	ev, err := d.GetEvent(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if x, ok := ev.Event.(*replication.XIDEvent); !ok || x.XID != 7 {
		t.Fatalf("after the large event: %+v", ev.Event)
	}
}

// TestReleasedBuffers: the buffers of rows events the decoder skipped come
// back once released and serve later events; released ones are poisoned,
// and the events that were not released (a selected table's rows, raw,
// table maps) keep their bytes.
func TestReleasedBuffers(t *testing.T) {
	PoisonReleased(true)
	defer PoisonReleased(false)
	b := binlogtest.NewBinlog()
	for i := range 50 {
		b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(int64(i), "kept", 1)))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t"))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(int64(i), fmt.Sprintf("skipped%03d", i), 2)))
		b.Add(replication.XID_EVENT, binlogtest.XID(uint64(i)))
	}
	skips := NewSkips()
	skips.Set("other", "t", true)
	d := Read(b.Dial(t, binlogtest.File, 4), Config{Flavor: mysql.MySQLFlavor, RawRows: true, Skips: skips, Log: slog.New(slog.DiscardHandler)})
	defer d.Close()
	type kept struct {
		ev   *replication.BinlogEvent
		data []byte
	}
	var keep []kept
	var released []*replication.BinlogEvent
	for xids := 0; xids < 50; {
		ev, err := d.GetEvent(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.Event.(type) {
		case *replication.XIDEvent:
			xids++
		case *replication.RowsEvent:
			if Skipped(e) {
				released = append(released, ev)
			} else {
				keep = append(keep, kept{ev, bytes.Clone(ev.RawData)})
			}
		}
		d.Release(ev)
	}
	if len(released) != 50 || len(keep) != 50 {
		t.Fatalf("%d rows events skipped, %d decoded; want 50 each", len(released), len(keep))
	}
	// Each released buffer was poisoned or serves a later event: none
	// holds its event's bytes any more.
	for i, ev := range released {
		if bytes.Contains(ev.RawData, fmt.Appendf(nil, "skipped%03d", i)) {
			t.Fatalf("released event %d still holds its rows: its buffer was not handed back", i)
		}
	}
	for i, k := range keep {
		if !bytes.Equal(k.ev.RawData, k.data) {
			t.Fatalf("rows event %d of the selected table changed after later events were read", i)
		}
		raw, ok := k.ev.Event.(*replication.RowsEvent).Rows[0][0].(RawRows)
		if !ok || !bytes.Contains(raw, []byte("kept")) {
			t.Fatalf("rows event %d of the selected table: rows %v", i, k.ev.Event.(*replication.RowsEvent).Rows)
		}
	}
	if d.pool.bytes == 0 {
		t.Errorf("no buffer pooled after 50 released")
	}
}

// TestOwnedBuffers: a raw rows event's buffer handed on (Own) stays the
// holder's until it frees it, whatever is read meanwhile (Release leaves
// it alone), then is poisoned (put back in the pool); only the last
// event's, only once, and only a raw rows event's is handed on.
func TestOwnedBuffers(t *testing.T) {
	PoisonReleased(true)
	defer PoisonReleased(false)
	b := binlogtest.NewBinlog()
	for i := range 40 {
		b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(int64(i), fmt.Sprintf("owned%03d", i), 1)))
		b.Add(replication.XID_EVENT, binlogtest.XID(uint64(i)))
	}
	d := Read(b.Dial(t, binlogtest.File, 4), Config{Flavor: mysql.MySQLFlavor, RawRows: true, Log: slog.New(slog.DiscardHandler)})
	defer d.Close()
	type owned struct {
		raw   RawRows
		lease Lease
	}
	var held []owned
	var prev *replication.BinlogEvent
	for xids := 0; xids < 40; {
		ev, err := d.GetEvent(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if l := d.Own(prev); l.pool != nil {
			t.Fatalf("the event before the last one was handed on")
		}
		switch e := ev.Event.(type) {
		case *replication.XIDEvent:
			xids++
			// The first half is freed as it goes: the second half's
			// events then read into those buffers, which must not touch
			// the half still held.
			if xids <= 20 {
				held[xids-1].lease.Free()
			}
		case *replication.RowsEvent:
			l := d.Own(ev)
			if l.pool == nil {
				t.Fatalf("rows event %d: no buffer handed on", len(held))
			}
			if again := d.Own(ev); again.pool != nil {
				t.Fatalf("rows event %d handed on twice", len(held))
			}
			held = append(held, owned{e.Rows[0][0].(RawRows), l})
		default:
			if l := d.Own(ev); l.pool != nil {
				t.Fatalf("%T handed on", ev.Event)
			}
		}
		d.Release(ev)
		prev = ev
	}
	for i, h := range held {
		has := bytes.Contains(h.raw, fmt.Appendf(nil, "owned%03d", i))
		if i < 20 && has {
			t.Errorf("rows event %d still holds its rows after its buffer was freed", i)
		}
		if i >= 20 && !has {
			t.Errorf("rows event %d, its buffer held, lost its rows: %q", i, h.raw)
		}
	}
	Lease{}.Free() // the zero Lease frees nothing
}

// loopConn is a net.Conn that reads the same bytes over and over.
type loopConn struct {
	net.Conn
	data []byte
	off  int
}

func (c *loopConn) Read(p []byte) (int, error) {
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}

func (c *loopConn) SetReadDeadline(time.Time) error { return nil }

// skippedWire is a wire over a loop of 64 rows-event packets of 8 KiB
// each, their sequence ids 0-255 over and over.
func skippedWire() (*wire, int) {
	var stream []byte
	const n = 256
	for i := range n {
		payload := make([]byte, 1+8000)
		payload[0] = mysql.OK_HEADER
		binary.LittleEndian.PutUint32(payload[1+9:], 8000)
		stream = append(stream, 0x41, 0x1f, 0, byte(i))
		stream = append(stream, payload...)
	}
	return newWire(&loopConn{data: stream}, 0, time.Minute, &bufferPool{}), len(stream) / n
}

// BenchmarkWireSkipped: a packet read and its buffer handed back, as the
// reader and the stream do for a skipped rows event.
func BenchmarkWireSkipped(b *testing.B) {
	w, size := skippedWire()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		p, err := w.next()
		if err != nil {
			b.Fatal(err)
		}
		w.pool.put(p)
	}
}

// TestWireSkippedAllocatesNothing: reading packets whose buffers come
// back allocates nothing once the pool holds one.
func TestWireSkippedAllocatesNothing(t *testing.T) {
	w, _ := skippedWire()
	if allocs := testing.AllocsPerRun(1000, func() {
		p, err := w.next()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != 8001 || p[0] != mysql.OK_HEADER {
			t.Fatalf("packet of %d bytes", len(p))
		}
		w.pool.put(p)
	}); allocs != 0 {
		t.Errorf("%.1f allocations per packet, want 0", allocs)
	}
}

// TestCompressedTransactionLastHandedOn: a compressed transaction that
// ends what the server has is handed on whole at once, not held until
// another packet comes.
func TestCompressedTransactionLastHandedOn(t *testing.T) {
	b := binlogtest.NewBinlog()
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
	b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD,
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN")),
		binlogtest.Inner(replication.XID_EVENT, binlogtest.XID(9))))
	d := Read(b.Dial(t, binlogtest.File, 4), Config{Flavor: mysql.MySQLFlavor, Log: slog.New(slog.DiscardHandler)})
	defer d.Close()
	// The server then waits for events that never come: a held event
	// would wait for ever; the test's limit only ends that wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ev, err := d.GetEvent(ctx)
		if err != nil {
			t.Fatalf("before the compressed transaction's XID: %v", err)
		}
		if x, ok := ev.Event.(*replication.XIDEvent); ok && x.XID == 9 {
			return
		}
	}
}

// TestLastEventHandedOnOverTCP: over a real socket, where one read brings
// many events, most of them read where they lie in the read buffer (a
// skipped table's), the last events the server has are handed on, not
// held until more come (the server then waits for events that never
// come: the test's limit only ends a wait that would be for ever).
func TestLastEventHandedOnOverTCP(t *testing.T) {
	b := binlogtest.NewBinlog()
	const n = 2000
	for i := range n {
		b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t"))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, 0, false, binlogtest.Image(int64(i), "skipped", 0)))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(int64(i), "last", 0)))
		b.Add(replication.XID_EVENT, binlogtest.XID(uint64(i)))
	}
	skips := NewSkips()
	skips.Set("other", "t", true)
	d := Read(b.DialTCP(t, binlogtest.File, 4), Config{Flavor: mysql.MySQLFlavor, RawRows: true, Skips: skips, EventCache: 256, Log: slog.New(slog.DiscardHandler)})
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		ev, err := d.GetEvent(ctx)
		if err != nil {
			t.Fatalf("before the last transaction's XID: %v", err)
		}
		x, ok := ev.Event.(*replication.XIDEvent)
		d.Release(ev) // nothing of ev is read after: it may serve another event
		if ok && x.XID == n-1 {
			return
		}
	}
}
