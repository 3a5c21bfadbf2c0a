package source

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// rowSeen is one row image (an UPDATE's after image) handed on.
type rowSeen struct {
	id      int64
	op      Op
	version uint64
	at      Position
}

// rowsRecorder is a Handler that writes down each row with its version
// as the sink computes it, the commits and the reconnects; it stops Run
// at a commit at stop.
type rowsRecorder struct {
	rows    []rowSeen
	commits []Position
	downs   []string
	stop    Position
	cancel  context.CancelFunc
	// onRows, when set, replaces the writing down of rows.
	onRows func(r Rows) error
}

func (h *rowsRecorder) Event(Event) {}

func (h *rowsRecorder) Rows(_ context.Context, r Rows) error {
	if h.onRows != nil {
		return h.onRows(r)
	}
	images := r.Rows
	if r.Raw != nil {
		images = binlogtest.SplitImages(r.Raw)
	}
	step := 1
	if r.Op == OpUpdate {
		step = 2
	}
	for i := 0; i < len(images); i += step {
		v := r.Version + uint64(max(0, min(i/step, r.Versions-1)))
		h.rows = append(h.rows, rowSeen{id: images[i+step-1][0].(int64), op: r.Op, version: v, at: r.At})
	}
	return nil
}

func (h *rowsRecorder) Statement(context.Context, Statement) error { return nil }

func (h *rowsRecorder) Commit(c Commit) {
	h.commits = append(h.commits, c.Position)
	if c.Position == h.stop {
		h.cancel()
	}
}

func (h *rowsRecorder) Tick(bool) (time.Duration, error) { return 0, nil }

func (h *rowsRecorder) Down(err error, resume Position, _ time.Duration) {
	h.downs = append(h.downs, fmt.Sprintf("%s: %v", resume, err))
}

// runTo runs a MySQL-flavoured stream over the binlogs dial serves, from
// the file's start until a commit at stop.
func runTo(t *testing.T, raw bool, stop uint32, h *rowsRecorder, dial func(n int, pos Position) *client.Conn, setup ...func(*Stream)) *Stream {
	t.Helper()
	s := testStream(t)
	s.srv = Server{Flavor: mysql.MySQLFlavor, ID: "uuid:test", RawRows: raw}
	for _, f := range setup {
		f(s)
	}
	var mu sync.Mutex
	n := 0
	s.testDial = func(pos Position, _ *gtid.Set) (*client.Conn, error) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		return dial(k, pos), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h.stop, h.cancel = Position{File: binlogtest.File, Pos: stop}, cancel
	if err := s.Run(ctx, Start{Position: Position{File: binlogtest.File, Pos: 4}}, h); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("no commit at %d; commits %v, reconnects %q", stop, h.commits, h.downs)
	}
	return s
}

// testTransaction is a compressed transaction's events: inserts 1, 2, 3;
// updates 2 and 3 (the key kept); 5 rows of a table not replicated; a
// delete of 1; the XID. lastLength, when not 0, is written as the XID's
// length.
func testTransaction(lastLength uint32) [][]byte {
	xid := binlogtest.Inner(replication.XID_EVENT, binlogtest.XID(77))
	if lastLength != 0 {
		binary.LittleEndian.PutUint32(xid[9:], lastLength)
	}
	return [][]byte{
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN")),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
		binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(1, "a", 1), binlogtest.Image(2, "", 2), binlogtest.Image(3, "c", 3))),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
		binlogtest.Inner(replication.UPDATE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, true, binlogtest.Image(2, "", 2), binlogtest.Image(2, "b", 20), binlogtest.Image(3, "c", 3), binlogtest.Image(3, "", 30))),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(19, "other", "t")),
		binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(19, binlogtest.StmtEnd, false, binlogtest.Image(1, "", 1), binlogtest.Image(2, "", 2), binlogtest.Image(3, "", 3), binlogtest.Image(4, "", 4), binlogtest.Image(5, "", 5))),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
		binlogtest.Inner(replication.DELETE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(1, "a", 1))),
		xid,
	}
}

// addPlain appends an uncompressed transaction inserting id; it returns
// where its rows event starts and ends, and where it ends.
func addPlain(b *binlogtest.Binlog, gno uint64, id int64) (rowsStart, rowsEnd, end uint32) {
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(gno))
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
	b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
	rowsStart, rowsEnd = b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(id, "x", 0)))
	_, end = b.Add(replication.XID_EVENT, binlogtest.XID(uint64(gno)))
	return rowsStart, rowsEnd, end
}

// TestCompressedTransaction: a compressed transaction's rows are handed
// on in order with consecutive versions between the payload's start and
// end (the rows of a table not replicated take theirs too), at the
// payload's start; its only Commit is at its end; the uncompressed
// transaction after it has higher versions. The same with row images
// decoded by go-mysql and left raw, and with compression type NONE.
func TestCompressedTransaction(t *testing.T) {
	for _, c := range []struct {
		name        string
		compression uint64
	}{{"zstd", binlogtest.CompressZSTD}, {"none", binlogtest.CompressNone}} {
		b := binlogtest.NewBinlog()
		fdeEnd := b.End()
		b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
		start, end := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, c.compression, testTransaction(0)...))
		rowsStart, rowsEnd, last := addPlain(b, 2, 4)
		at := Position{File: binlogtest.File, Pos: start}
		lo := RowVersion(3, start, 0) + 1
		want := []rowSeen{
			{1, OpInsert, lo, at}, {2, OpInsert, lo + 1, at}, {3, OpInsert, lo + 2, at},
			{2, OpUpdate, lo + 3, at}, {3, OpUpdate, lo + 4, at},
			{1, OpDelete, lo + 10, at},
			{4, OpInsert, RowVersion(3, rowsEnd, 0), Position{File: binlogtest.File, Pos: rowsStart}},
		}
		var first []rowSeen
		for _, raw := range []bool{false, true} {
			h := &rowsRecorder{}
			runTo(t, raw, last, h, func(_ int, pos Position) *client.Conn { return b.Dial(t, pos.File, pos.Pos) })
			got := fmt.Sprint(h.rows)
			if got != fmt.Sprint(want) {
				t.Errorf("%s, raw %v: rows\n%v\nwant\n%v", c.name, raw, got, want)
			}
			if hi := RowVersion(3, end, MaxVersionRow); want[5].version > hi {
				t.Fatalf("test: version %d above the payload's range (%d)", want[5].version, hi)
			}
			if fmt.Sprint(h.commits) != fmt.Sprint([]Position{{binlogtest.File, 4}, {binlogtest.File, fdeEnd}, {binlogtest.File, end}, {binlogtest.File, last}}) {
				t.Errorf("%s, raw %v: commits at %v; want the file's start, after its format description, the payload's end %d, %d", c.name, raw, h.commits, end, last)
			}
			if first == nil {
				first = h.rows
			} else if fmt.Sprint(first) != fmt.Sprint(h.rows) {
				t.Errorf("%s: raw rows were given other versions than decoded ones", c.name)
			}
			if len(h.downs) > 0 {
				t.Errorf("%s: reconnected: %q", c.name, h.downs)
			}
		}
	}
}

// TestCompressedTransactionReadAgain: a payload that fails after some of
// its rows were handed on (the last event's length runs past its end) is
// read again, whole, from the boundary before it: its rows get the same
// versions, its Commit comes once, at its end.
func TestCompressedTransactionReadAgain(t *testing.T) {
	good, bad := binlogtest.NewBinlog(), binlogtest.NewBinlog()
	for _, b := range []*binlogtest.Binlog{good, bad} {
		b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
	}
	boundary := good.EventEnd(0)
	start, end := good.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(0)...))
	bad.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(100)...))
	_, _, last := addPlain(good, 2, 4)
	h := &rowsRecorder{}
	runTo(t, true, last, h, func(n int, pos Position) *client.Conn {
		if n == 1 {
			return bad.Dial(t, pos.File, pos.Pos)
		}
		// From the event that ended at the boundary, which the stream
		// reads again to check the binlog is the one it read (History).
		if pos != (Position{binlogtest.File, good.EventStart(0)}) {
			t.Errorf("reconnected at %s, want the event ending at the boundary before the payload, %d", pos, good.EventStart(0))
		}
		return good.Dial(t, pos.File, pos.Pos)
	})
	if len(h.downs) != 1 || !strings.Contains(h.downs[0], fmt.Sprintf("%s:%d: binlog %s:%d: compressed transaction", binlogtest.File, boundary, binlogtest.File, start)) ||
		!strings.Contains(h.downs[0], "has length 100, past the payload's end") {
		t.Fatalf("reconnects %q, want one at %d for the payload at %d", h.downs, boundary, start)
	}
	// The inserts and updates were handed on before the failure (the XID
	// fails; the DELETE before it waits for the next event to be read),
	// then all again with the DELETE, then the next transaction's row.
	if len(h.rows) != 12 || fmt.Sprint(h.rows[:5]) != fmt.Sprint(h.rows[5:10]) || h.rows[10].op != OpDelete {
		t.Errorf("rows %v; want the payload's first 5 rows, then its 6 with the same versions, then 1", h.rows)
	}
	for _, c := range h.commits {
		if c.Pos > boundary && c.Pos < end {
			t.Errorf("commit at %s, inside the payload (%d to %d)", c, start, end)
		}
	}
	n := 0
	for _, c := range h.commits {
		if c == (Position{binlogtest.File, end}) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("commits %v: %d at the payload's end, want 1", h.commits, n)
	}
}

// TestCompressedXA: MySQL compresses XA transactions too (XA START to the
// XA_PREPARE_LOG_EVENT in one payload; XA COMMIT in another). The rows
// wait for the XA COMMIT, are read again from the boundary before the
// prepared payload, and get the versions of its range; the stream then
// goes on after the XA COMMIT.
func TestCompressedXA(t *testing.T) {
	b := binlogtest.NewBinlog()
	boundary := b.End()
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
	xaStart, xaEnd := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD,
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "XA START X'7831',X'',1")),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
		binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(100, "p", 0), binlogtest.Image(101, "q", 0))),
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "XA END X'7831',X'',1")),
		binlogtest.Inner(replication.XA_PREPARE_LOG_EVENT, binlogtest.XAPrepare("x1")),
	))
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(2))
	between, betweenEnd := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD,
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN")),
		binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")),
		binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(7, "", 0))),
		binlogtest.Inner(replication.XID_EVENT, binlogtest.XID(9)),
	))
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(3))
	commitStart, commitEnd := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD,
		binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "XA COMMIT X'7831',X'',1")),
	))
	_, _, last := addPlain(b, 4, 8)
	var dialed []Position
	h := &rowsRecorder{}
	runTo(t, true, last, h, func(_ int, pos Position) *client.Conn {
		dialed = append(dialed, pos)
		return b.Dial(t, pos.File, pos.Pos)
	})
	// The XA transaction is read again from the boundary before it; the
	// stream goes on from the event that ended at its XA COMMIT's
	// boundary, which it reads again to check it (History).
	if fmt.Sprint(dialed) != fmt.Sprint([]Position{{binlogtest.File, 4}, {binlogtest.File, boundary}, {binlogtest.File, commitStart}}) {
		t.Errorf("connections from %v; want the start, the boundary before the XA transaction %d, after its XA COMMIT %d (from %d)", dialed, boundary, commitEnd, commitStart)
	}
	var ids []int64
	for _, r := range h.rows {
		ids = append(ids, r.id)
	}
	if fmt.Sprint(ids) != "[7 100 101 8]" {
		t.Fatalf("rows %v, want 7, then the XA transaction's 100 and 101 at its XA COMMIT, then 8", h.rows)
	}
	lo := RowVersion(3, xaStart, 0)
	if r := h.rows; r[1].version != lo+1 || r[2].version != lo+2 || r[0].version != RowVersion(3, between, 0)+1 || RowVersion(3, xaEnd, MaxVersionRow) >= r[0].version || r[0].version > RowVersion(3, betweenEnd, MaxVersionRow) {
		t.Errorf("versions %v: the XA rows want %d and %d (the prepared payload's range), row 7 %d (its own payload's)", h.rows, lo+1, lo+2, RowVersion(3, between, 0)+1)
	}
	for _, c := range h.commits {
		if c.Pos > xaStart && c.Pos < xaEnd {
			t.Errorf("commit at %s inside the XA payload", c)
		}
	}
}

// TestCompressedTransactionMemory: a 100,000-row compressed transaction
// streams through with memory far below its uncompressed size: the live
// heap, sampled after a collection every 100 rows events while the rows
// are handed on, stays within the compressed event (which is read whole)
// plus 6 MiB (the zstd window, 2 MiB, and the events read ahead, here at
// most 64), and under a quarter of the uncompressed payload (go-mysql's
// own decoding would hold all of it, decompressed and parsed). Its rows
// get consecutive versions and its one Commit is at its end.
func TestCompressedTransactionMemory(t *testing.T) {
	const rows = 100_000
	b := binlogtest.NewBinlog()
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
	var compressed bytes.Buffer
	zw := binlogtest.ZstdWriter(t, &compressed)
	uncompressed := 0
	write := func(ev []byte) {
		uncompressed += len(ev)
		if _, err := zw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	write(binlogtest.Inner(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN")))
	write(binlogtest.Inner(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")
	var images [][]byte
	events := 0
	flush := func(flags uint16) {
		write(binlogtest.Inner(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, flags, false, images...)))
		images, events = images[:0], events+1
	}
	size := 0
	for i := range rows {
		var v strings.Builder
		for j := 0; v.Len() < 500; j++ {
			v.WriteString(words[(i*7+j*j)%len(words)])
			fmt.Fprintf(&v, "-%d ", (i+j)%1000)
		}
		im := binlogtest.Image(int64(i+1), v.String(), int32(i))
		if size+len(im) > 8000 {
			flush(0)
			size = 0
		}
		images, size = append(images, im), size+len(im)
	}
	flush(binlogtest.StmtEnd)
	write(binlogtest.Inner(replication.XID_EVENT, binlogtest.XID(1)))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	start, end := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, append(binlogtest.PayloadFields(binlogtest.CompressZSTD, uint64(uncompressed), compressed.Len()), compressed.Bytes()...))
	compressed = bytes.Buffer{}
	_, rowsEnd, last := addPlain(b, 2, rows+1)

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	seen, calls := 0, 0
	next := RowVersion(3, start, 0) + 1
	h := &rowsRecorder{}
	h.onRows = func(r Rows) error {
		n := len(binlogtest.SplitImages(r.Raw))
		if r.At.Pos != start {
			if r.Version != RowVersion(3, rowsEnd, 0) || r.Version < next {
				return fmt.Errorf("rows after the payload: version %d, want %d, above %d", r.Version, RowVersion(3, rowsEnd, 0), next)
			}
		} else if r.Version != next || r.Versions != n {
			return fmt.Errorf("rows event %d: version %d slots %d for %d rows; want version %d", calls, r.Version, r.Versions, n, next)
		} else {
			next += uint64(n)
		}
		seen += n
		if calls++; calls%100 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		return nil
	}
	runTo(t, true, last, h, func(_ int, pos Position) *client.Conn { return b.Dial(t, pos.File, pos.Pos) }, func(s *Stream) { s.EventCache = 64 })
	used := peak - base
	t.Logf("%d rows in %d rows events, %d bytes uncompressed, %d compressed (%.3f rows per compressed byte): peak live heap %.1f MiB above the start",
		rows, events, uncompressed, end-start, float64(rows)/float64(end-start), float64(used)/(1<<20))
	if seen != rows+1 {
		t.Errorf("%d rows handed on, want %d", seen, rows+1)
	}
	if next-1 > RowVersion(3, end, MaxVersionRow) {
		t.Errorf("the payload's last row has version %d, above its range", next-1)
	}
	if fmt.Sprint(h.commits) != fmt.Sprint([]Position{{binlogtest.File, 4}, {binlogtest.File, b.EventEnd(0)}, {binlogtest.File, end}, {binlogtest.File, last}}) {
		t.Errorf("commits %v, want one at the payload's end %d", h.commits, end)
	}
	if uncompressed < 40<<20 {
		t.Fatalf("test: the payload is only %d bytes uncompressed", uncompressed)
	}
	if used > uint64(end-start)+6<<20 || used > uint64(uncompressed)/4 {
		t.Errorf("peak live heap %d bytes above the start while reading a payload of %d bytes uncompressed: not streamed", used, uncompressed)
	}
}

// TestCorruptPayload: a payload that cannot be read is an error naming
// its position, and nothing after the failure is handed on: no Commit at
// its end.
func TestCorruptPayload(t *testing.T) {
	good := binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(0)...)
	total := len(bytes.Join(testTransaction(0), nil))
	xidAt := total - replication.EventHeaderSize - 8
	fields := len(binlogtest.PayloadFields(binlogtest.CompressZSTD, uint64(total), len(good)))
	badZstd := bytes.Clone(good)
	for i := fields + 8; i < len(badZstd)-4; i++ {
		badZstd[i] ^= 0x5a
	}
	nested := binlogtest.Payload(t, binlogtest.CompressZSTD, binlogtest.Inner(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(0)...)))
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"bad zstd", badZstd, "decompressing"},
		{"length past the end", binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(200)...), fmt.Sprintf("the XIDEvent at byte %d of the payload has length 200, past the payload's end at %d", xidAt, total)},
		{"length too short", binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(5)...), "has length 5"},
		{"uncompressed size", append(binlogtest.PayloadFields(binlogtest.CompressZSTD, 9999, len(good)-fields), good[fields:]...), fmt.Sprintf("ends after %d uncompressed bytes; the event says 9999", total)},
		{"payload size", append(binlogtest.PayloadFields(binlogtest.CompressZSTD, uint64(total), 5), good[fields:]...), "says its payload has 5 bytes"},
		{"compression", binlogtest.Payload(t, 7, testTransaction(0)...), "unknown compression type 7"},
		{"nested", nested, "is a TRANSACTION_PAYLOAD_EVENT itself"},
		{"fields", []byte{2, 1}, "fields end inside a compression type"},
		{"field", []byte{2, 1, 0xfb, 0}, "or it is not a length-encoded integer, at byte 2"},
	} {
		b := binlogtest.NewBinlog()
		b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
		start, end := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, c.body)
		s := testStream(t)
		s.srv = Server{Flavor: mysql.MySQLFlavor, ID: "uuid:test", RawRows: true}
		s.tables, s.pos, s.fileIdx = map[uint64]*tableState{}, Position{File: binlogtest.File, Pos: 4}, 3
		d := binlog.Read(b.Dial(t, s.pos.File, s.pos.Pos), s.connConfig())
		h := &recorder{}
		var err error
		for err == nil {
			var ev *replication.BinlogEvent
			if ev, err = d.GetEvent(context.Background()); err == nil {
				err = s.handle(context.Background(), ev, h)
			}
		}
		d.Close()
		want := fmt.Sprintf("binlog %s:%d: compressed transaction (TRANSACTION_PAYLOAD_EVENT of %d bytes): ", binlogtest.File, start, end-start)
		if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q ... %q", c.name, err, want, c.want)
		}
		if got := strings.Join(h.got, "\n"); strings.Contains(got, fmt.Sprintf("commit %s:%d ", binlogtest.File, end)) {
			t.Errorf("%s: committed the payload:\n%s", c.name, got)
		}
	}
}

// TestPayloadVersionsRunOut: a payload's rows beyond the versions of its
// range, (end-start)*4096 + 4095 of them, share its last version; the
// ones before keep theirs.
func TestPayloadVersionsRunOut(t *testing.T) {
	s := testStream(t)
	s.payload = &payloadState{start: Position{File: binlogtest.File, Pos: 100}, end: 101}
	st := &tableState{name: schema.TableName{Database: "d", Table: "t"}, event: binlogtest.MariaDBTableMap()}
	hi := RowVersion(3, 101, MaxVersionRow)
	var got []uint64
	for _, n := range []int{5000, 5000, 7} {
		first, slots, ok, err := s.payloadRows(s.payload.start, st, &replication.EventHeader{EventType: replication.WRITE_ROWS_EVENTv2}, &replication.RowsEvent{Rows: make([][]any, n)})
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		v := s.payload.version(3, first)
		got = append(got, v, v+uint64(min(n-1, slots-1)))
	}
	want := []uint64{RowVersion(3, 100, 0) + 1, RowVersion(3, 100, 0) + 5000, RowVersion(3, 100, 0) + 5001, hi, hi, hi}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first and last versions of each event %v, want %v", got, want)
	}
	if _, _, ok, _ := s.payloadRows(Position{File: binlogtest.File, Pos: 101}, st, &replication.EventHeader{EventType: replication.WRITE_ROWS_EVENTv2}, &replication.RowsEvent{}); ok {
		t.Error("a rows event read after the payload took a version of its range")
	}
}
