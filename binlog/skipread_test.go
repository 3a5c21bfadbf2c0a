package binlog

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
)

// headerStatement is a format description, table maps of db.skipped (42)
// and db.kept (43), and one statement's rows events: of db.skipped a
// WRITE_ROWS v2, an UPDATE_ROWS v2 and a WRITE_ROWS v1, of db.kept a
// WRITE_ROWS v2, and db.skipped's DELETE_ROWS v2 ending the statement.
func headerStatement(crc bool) [][]byte {
	images := func(from int, update bool) [][]byte {
		var out [][]byte
		for i := from; i < from+4; i++ {
			v := "value"
			if i%3 == 0 {
				v = ""
			}
			out = append(out, binlogtest.Image(int64(i), v, int32(-i)))
			if update {
				out = append(out, binlogtest.Image(int64(i), "after", int32(i)))
			}
		}
		return out
	}
	v1 := binlogtest.Rows(42, 0, false, images(20, false)...)
	v1 = append(v1[:8:8], v1[10:]...) // no extra data in version 1
	evs := [][]byte{
		binlogtest.Event(replication.FORMAT_DESCRIPTION_EVENT, 0, binlogtest.FormatDescription()),
		binlogtest.Event(replication.TABLE_MAP_EVENT, 200, binlogtest.TableMap(42, "db", "skipped")),
		binlogtest.Event(replication.TABLE_MAP_EVENT, 300, binlogtest.TableMap(43, "db", "kept")),
		binlogtest.Event(replication.WRITE_ROWS_EVENTv2, 400, binlogtest.Rows(42, 0, false, images(0, false)...)),
		binlogtest.Event(replication.UPDATE_ROWS_EVENTv2, 500, binlogtest.Rows(42, 0, true, images(10, true)...)),
		binlogtest.Event(replication.WRITE_ROWS_EVENTv1, 600, v1),
		binlogtest.Event(replication.WRITE_ROWS_EVENTv2, 700, binlogtest.Rows(43, 0, false, images(30, false)...)),
		binlogtest.Event(replication.DELETE_ROWS_EVENTv2, 800, binlogtest.Rows(42, binlogtest.StmtEnd, false, images(40, false)...)),
	}
	if crc {
		checksummed(evs)
	}
	return evs
}

// skippingReader is a connection's reader, without a connection, and its
// parser, both skipping db.skipped; it has read evs.
func skippingReader(tb testing.TB, raw bool, evs [][]byte) (*Conn, *replication.BinlogParser) {
	tb.Helper()
	skips := NewSkips()
	skips.Set("db", "skipped", true)
	d := &Conn{pool: &bufferPool{}, skips: skips, flavor: mysql.MySQLFlavor}
	p := newParserWith(mysql.MySQLFlavor, NewRowsDecoder(raw, skips))
	for _, b := range evs {
		if _, err := d.parse(p, b, true); err != nil {
			tb.Fatal(err)
		}
	}
	return d, p
}

// The rows events of a skipped table are read at their header, but for
// the statement's last; each reads as the parser's would (header, table
// id, flags, version, bitmaps) and DecodeSkipped decodes it to the rows a
// decoder without skips gives, raw or not, with and without checksums.
func TestRowsReadAtHeader(t *testing.T) {
	for _, raw := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			evs := headerStatement(crc)
			ref := newParserWith(mysql.MySQLFlavor, NewRowsDecoder(raw, nil))
			d, p := skippingReader(t, raw, nil)
			for i, b := range evs {
				want, err := ref.Parse(b)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.parse(p, append([]byte(nil), b...), true)
				if err != nil {
					t.Fatalf("raw %v crc %v: event %d: %v", raw, crc, i, err)
				}
				if *got.Header != *want.Header {
					t.Fatalf("raw %v crc %v: event %d: header %+v, want %+v", raw, crc, i, got.Header, want.Header)
				}
				w, ok := want.Event.(*replication.RowsEvent)
				if !ok {
					continue
				}
				e := got.Event.(*replication.RowsEvent)
				atHeader := readAtHeader(e) != nil
				if wantAt := i >= 3 && i <= 5; atHeader != wantAt {
					t.Fatalf("raw %v crc %v: event %d (%s of %s) read at its header: %v, want %v", raw, crc, i, want.Header.EventType, w.Table.Table, atHeader, wantAt)
				}
				if e.TableID != w.TableID || e.Flags != w.Flags || e.Version != w.Version || e.ColumnCount != w.ColumnCount ||
					string(e.ColumnBitmap1) != string(w.ColumnBitmap1) || string(e.ColumnBitmap2) != string(w.ColumnBitmap2) || e.Table == nil || string(e.Table.Table) != string(w.Table.Table) {
					t.Fatalf("raw %v crc %v: event %d: %+v, want %+v", raw, crc, i, e, w)
				}
				if Skipped(e) != (string(w.Table.Table) == "skipped") {
					t.Fatalf("raw %v crc %v: event %d of %s skipped: %v", raw, crc, i, w.Table.Table, Skipped(e))
				}
				if err := DecodeSkipped(got, raw); err != nil {
					t.Fatalf("raw %v crc %v: event %d: %v", raw, crc, i, err)
				}
				if Skipped(e) || !reflect.DeepEqual(e.Rows, w.Rows) {
					t.Fatalf("raw %v crc %v: event %d decoded %#v, want %#v", raw, crc, i, e.Rows, w.Rows)
				}
			}
			// The statement ended: its table maps are gone, for the
			// parser as for the reader, which leaves the next rows event
			// without one to the parser.
			next := [][]byte{
				binlogtest.Event(replication.FORMAT_DESCRIPTION_EVENT, 0, binlogtest.FormatDescription()),
				binlogtest.Event(replication.WRITE_ROWS_EVENTv2, 900, binlogtest.Rows(42, 0, false, binlogtest.Image(1, "x", 1))),
			}
			if crc {
				checksummed(next)
			}
			if ev, err := d.parse(p, next[1], true); err == nil {
				t.Fatalf("raw %v crc %v: a rows event after the statement's end read without its table map: %+v", raw, crc, ev.Event)
			}
		}
	}
}

// Reading a skipped table's rows event at its header, and handing it
// back, allocates nothing.
func TestRowsReadAtHeaderAllocateNothing(t *testing.T) {
	evs := headerStatement(true)
	d, p := skippingReader(t, true, evs[:3])
	if allocs := testing.AllocsPerRun(1000, func() {
		ev, err := d.parse(p, evs[4], true)
		if err != nil {
			t.Fatal(err)
		}
		h := readAtHeader(ev.Event.(*replication.RowsEvent))
		if h == nil || ev.Header.LogPos != 500 {
			t.Fatalf("not read at its header: %+v", ev.Event)
		}
		d.pool.putSkipped(h)
	}); allocs != 0 {
		t.Errorf("%.1f allocations per event, want 0", allocs)
	}
}

// BenchmarkRowsReadAtHeader: a skipped table's rows event read at its
// header and handed back, against go-mysql's parser reading it (its
// header only: the decoder skips the rows).
func BenchmarkRowsReadAtHeader(b *testing.B) {
	evs := headerStatement(true)
	for _, atHeader := range []bool{true, false} {
		name := "header"
		if !atHeader {
			name = "parser"
		}
		b.Run(name, func(b *testing.B) {
			d, p := skippingReader(b, true, evs[:3])
			if !atHeader {
				d.skips = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				var ev *replication.BinlogEvent
				if atHeader {
					ev = d.skipAtHeader(evs[4])
				} else {
					ev, _ = p.Parse(evs[4])
				}
				e := ev.Event.(*replication.RowsEvent)
				if !Skipped(e) {
					b.Fatal("not skipped")
				}
				if h := readAtHeader(e); h != nil {
					d.pool.putSkipped(h)
				}
			}
		})
	}
}

// TestSkippedInReadBuffer: a skipped table's rows events, read at their
// header where they lie in the read buffer (not copied), with released
// buffers poisoned. The buffers go back to the pool once every event in
// them is handed back; the events held and decoded after all (as at a
// reload) still read what the server wrote after every later event was
// read and released.
func TestSkippedInReadBuffer(t *testing.T) {
	PoisonReleased(true)
	defer PoisonReleased(false)
	b := binlogtest.NewBinlog()
	const n = 300
	for i := range n {
		b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t"))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, 0, false, binlogtest.Image(int64(i), fmt.Sprintf("in buffer %03d", i), int32(i))))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(10000+int64(i), "last", 0)))
		b.Add(replication.XID_EVENT, binlogtest.XID(uint64(i)))
	}
	skips := NewSkips()
	skips.Set("other", "t", true)
	d := Read(b.Dial(t, binlogtest.File, 4), Config{Flavor: mysql.MySQLFlavor, RawRows: true, Skips: skips, EventCache: 16, Log: slog.New(slog.DiscardHandler)})
	defer d.Close()
	type held struct {
		ev *replication.BinlogEvent
		i  int
	}
	var hold []held
	inBuffer := 0
	for i := 0; i < n; {
		ev, err := d.GetEvent(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.Event.(type) {
		case *replication.XIDEvent:
			i++
		case *replication.RowsEvent:
			if e.Flags&binlogtest.StmtEnd != 0 {
				break
			}
			if readAtHeader(e) == nil {
				t.Fatalf("transaction %d: its first rows event not read at its header", i)
			}
			if d.lastSlab != nil {
				inBuffer++
			}
			if i%50 == 7 {
				hold = append(hold, held{ev, i}) // decoded after all, later
				continue
			}
		}
		d.Release(ev)
	}
	if inBuffer < n/2 {
		t.Fatalf("%d of %d events read at their header lay in the read buffer", inBuffer, n)
	}
	d.pool.mu.Lock()
	pooled := len(d.pool.slabs)
	d.pool.mu.Unlock()
	if pooled == 0 {
		t.Error("no read buffer went back to the pool")
	}
	for _, h := range hold {
		if err := DecodeSkipped(h.ev, true); err != nil {
			t.Fatal(err)
		}
		e := h.ev.Event.(*replication.RowsEvent)
		raw, ok := e.Rows[0][0].(RawRows)
		if !ok {
			t.Fatalf("transaction %d: rows %T", h.i, e.Rows[0][0])
		}
		if got, want := fmt.Sprint(binlogtest.SplitImages(raw)), fmt.Sprint([][]any{{int64(h.i), fmt.Sprintf("in buffer %03d", h.i), int32(h.i)}}); got != want {
			t.Errorf("transaction %d: rows %s, want %s", h.i, got, want)
		}
	}
}
