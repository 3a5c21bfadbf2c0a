package source

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The rows of a table the decoder skipped (its table map read while the
// stream did not select it, as a reload's reader reads ahead) are handed
// on exactly when the stream selects the table; those of a table it does
// not select are not, raw or decoded.
func TestSkippedRowsHandedOnWhenSelected(t *testing.T) {
	for _, raw := range []bool{false, true} {
		s := testStream(t)
		s.srv = Server{Flavor: mysql.MySQLFlavor, ID: "uuid:test", RawRows: raw}
		s.tables = map[uint64]*tableState{}
		s.pos = Position{File: binlogtest.File, Pos: 4}
		s.boundary, s.resume = s.pos, s.pos
		skips := binlog.NewSkips()
		skips.Set("d", "t", true) // stale: the stream selects d.*
		skips.Set("other", "t", true)
		s.skips = skips
		p := binlog.NewParserSkipping(mysql.MySQLFlavor, raw, skips)
		pos := uint32(4)
		ev := func(typ replication.EventType, body []byte) []byte {
			pos += uint32(replication.EventHeaderSize + len(body))
			return binlogtest.Event(typ, pos, body)
		}
		events := [][]byte{
			ev(replication.FORMAT_DESCRIPTION_EVENT, binlogtest.FormatDescription()),
			ev(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN")),
			ev(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
			ev(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(1, "a", 1), binlogtest.Image(2, "", 2))),
			ev(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t")),
			ev(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(7, "x", 7))),
			ev(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
			ev(replication.UPDATE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, true, binlogtest.Image(2, "", 2), binlogtest.Image(2, "b", 20))),
			ev(replication.XID_EVENT, binlogtest.XID(5)),
		}
		// Parsed ahead of the stream, as the reader does.
		var parsed []*replication.BinlogEvent
		for _, b := range events {
			e, err := p.Parse(b)
			if err != nil {
				t.Fatalf("parse %s: %v", replication.EventType(b[4]), err)
			}
			if r, ok := e.Event.(*replication.RowsEvent); ok && !binlog.Skipped(r) {
				t.Fatalf("raw %v: rows of %s decoded", raw, r.Table.Table)
			}
			parsed = append(parsed, e)
		}
		h := &rowsRecorder{}
		for _, e := range parsed {
			if err := s.handle(context.Background(), e, h); err != nil {
				t.Fatalf("raw %v: %s: %v", raw, e.Header.EventType, err)
			}
		}
		var got []string
		for _, r := range h.rows {
			got = append(got, fmt.Sprintf("%d/%d", r.id, r.op))
		}
		if want := fmt.Sprint([]string{fmt.Sprintf("1/%d", OpInsert), fmt.Sprintf("2/%d", OpInsert), fmt.Sprintf("2/%d", OpUpdate)}); fmt.Sprint(got) != want {
			t.Errorf("raw %v: rows %v, want %v", raw, got, want)
		}
		if skips.Has("d", "t") || !skips.Has("other", "t") {
			t.Errorf("the stream's table maps left the skips at d.t %v, other.t %v", skips.Has("d", "t"), skips.Has("other", "t"))
		}
	}
}

// runSkipping runs the stream over b to a commit at last, with the
// decoder skipping the tables the stream does not select (skip) or
// decoding every table's rows, and returns the rows handed on.
func runSkipping(t *testing.T, b *binlogtest.Binlog, last uint32, skip bool) []rowSeen {
	t.Helper()
	h := &rowsRecorder{}
	runTo(t, true, last, h, func(_ int, pos Position) *client.Conn { return b.Dial(t, pos.File, pos.Pos) }, func(s *Stream) {
		if skip {
			s.skips.Set("other", "t", true) // from the first event on
		} else {
			s.skips = nil
		}
	})
	return h.rows
}

// XA and compressed transactions that touch a table not replicated and a
// replicated one: the replicated one's rows are handed on with the same
// versions whether the decoder skips the other's rows or not (a
// compressed transaction's versions count every table's rows; a prepared
// XA transaction's rows are read again at its XA COMMIT).
func TestSkippedTableInXAAndCompressedTransactions(t *testing.T) {
	b := binlogtest.NewBinlog()
	// A compressed transaction: d.t, other.t, d.t.
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
	b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(0)...))
	// A plain XA transaction: d.t, other.t, d.t.
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(2))
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "XA START X'7831',X'',1"))
	b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
	b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(100, "p", 0)))
	b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t"))
	b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, 0, false, binlogtest.Image(8, "o", 0))) // read at its header
	b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(9, "o", 0), binlogtest.Image(10, "o", 0)))
	b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
	b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(101, "q", 0)))
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "XA END X'7831',X'',1"))
	b.Add(replication.XA_PREPARE_LOG_EVENT, binlogtest.XAPrepare("x1"))
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(3))
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "XA COMMIT X'7831',X'',1"))
	// A compressed XA transaction: other.t, d.t.
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(4))
	b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD,
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "XA START X'7832',X'',1")),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t")),
		binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(11, "", 0), binlogtest.Image(12, "", 0), binlogtest.Image(13, "", 0))),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
		binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(200, "r", 0))),
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "XA END X'7832',X'',1")),
		binlogtest.Inner(replication.XA_PREPARE_LOG_EVENT, binlogtest.XAPrepare("x2")),
	))
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(5))
	b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD,
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "XA COMMIT X'7832',X'',1")),
	))
	_, _, last := addPlain(b, 6, 8)

	want := runSkipping(t, b, last, false)
	var ids []int64
	for _, r := range want {
		ids = append(ids, r.id)
	}
	if fmt.Sprint(ids) != "[1 2 3 2 3 1 100 101 200 8]" {
		t.Fatalf("decoding every table: rows %v, want d.t's 1 2 3 2 3 1, 100 101, 200, 8", want)
	}
	if got := runSkipping(t, b, last, true); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("skipping other.t: rows\n%v\nwant\n%v", got, want)
	}
}

// selectingRecorder records rows, keeping them as handed on (raw rows
// still in the event's buffer), and selects other.t at the commit of
// GTID 2, once the reader has read every event ahead of the stream.
type selectingRecorder struct {
	*rowsRecorder
	t       *testing.T
	s       *Stream
	b       *binlogtest.Binlog
	ctx     context.Context
	at      Position // the commit to select other.t at
	kept    []Rows
	selects bool
}

func (h *selectingRecorder) Commit(c Commit) {
	h.rowsRecorder.Commit(c)
	if c.Position != h.at {
		return
	}
	// The reader has read (and parsed, the decoder skipping other.t)
	// every event once the server has written the last: its writes on
	// the in-memory connection return when the reader has read them.
	for h.b.Sent() < h.b.Events()+1 { // and the rotate before them
		if h.ctx.Err() != nil {
			h.t.Errorf("the server sent %d events of %d", h.b.Sent(), h.b.Events()+1)
			return
		}
		time.Sleep(time.Millisecond)
	}
	h.selects = true
	if err := h.s.ApplySelection(); err != nil {
		h.t.Error(err)
	}
}

// TestReleasedBuffersAtASelectionChange: the stream reads a binlog over
// a real connection with released buffers poisoned, and selects a table
// whose rows events the reader had read ahead and left undecoded: those
// are decoded by the stream and handed on, never released; their rows,
// still in the events' buffers, are read after every later event was
// read and released, and hold what the server wrote.
func TestReleasedBuffersAtASelectionChange(t *testing.T) {
	binlog.PoisonReleased(true)
	defer binlog.PoisonReleased(false)
	b := binlogtest.NewBinlog()
	var at uint32
	for gno := uint64(1); gno <= 60; gno++ {
		b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(gno))
		b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t"))
		// A statement of two rows events: the reader reads the first at
		// its header, the last with the parser.
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, 0, false,
			binlogtest.Image(int64(gno), fmt.Sprintf("other%03d", gno), int32(gno))))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false,
			binlogtest.Image(10000+int64(gno), fmt.Sprintf("last%03d", gno), int32(gno))))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
		b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(1000+int64(gno), "d", 0)))
		_, end := b.Add(replication.XID_EVENT, binlogtest.XID(gno))
		if gno == 2 {
			at = end
		}
	}
	last := b.End()
	s := testStream(t)
	s.EventCache = 1024 // room to read every event ahead of the stream
	s.srv = Server{Flavor: mysql.MySQLFlavor, ID: "uuid:test", RawRows: true}
	h := &selectingRecorder{rowsRecorder: &rowsRecorder{}, t: t, s: s, b: b, at: Position{File: binlogtest.File, Pos: at}}
	h.onRows = func(r Rows) error {
		h.kept = append(h.kept, r)
		return nil
	}
	s.Selected = func(n schema.TableName) bool { return n.Database == "d" || h.selects }
	s.testDial = func(pos Position, _ *gtid.Set) (*client.Conn, error) { return b.Dial(t, pos.File, pos.Pos), nil }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h.stop, h.cancel, h.ctx = Position{File: binlogtest.File, Pos: last}, cancel, ctx
	if err := s.Run(ctx, Start{Position: Position{File: binlogtest.File, Pos: 4}}, h); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range h.kept {
		if r.Table.Database != "other" {
			continue
		}
		if r.Raw == nil {
			t.Fatalf("other.t's rows at %s not raw", r.At)
		}
		for _, img := range binlogtest.SplitImages(r.Raw) {
			got = append(got, fmt.Sprintf("%d:%s", img[0], img[1]))
		}
	}
	var want []string
	for gno := 3; gno <= 60; gno++ {
		want = append(want, fmt.Sprintf("%d:other%03d", gno, gno), fmt.Sprintf("%d:last%03d", 10000+gno, gno))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("other.t's rows handed on after it was selected:\n%v\nwant\n%v", got, want)
	}
}
