package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// mysqlStream is a stream of a MySQL server, as testStream is of MariaDB.
func mysqlStream(t *testing.T) *Stream {
	s := testStream(t)
	s.srv.Flavor = mysql.MySQLFlavor
	s.tables = map[uint64]*tableState{}
	s.gtids, s.gtidsKnown = gtid.NewSet(mysql.MySQLFlavor), true
	s.pos = Position{File: "binlog.000001", Pos: 4}
	return s
}

// hdr is an event header with a size, as servers send them.
func hdr(typ replication.EventType, logPos, size, ts uint32, e replication.Event) *replication.BinlogEvent {
	return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: typ, LogPos: logPos, EventSize: size, Timestamp: ts}, Event: e}
}

// TestStreamTracksMySQLGTIDs: GTID events (go-mysql's byte fixtures: a
// MySQL 8.0 GTID event and an 8.4 tagged one) make the executed set each
// commit carries, and the per-table record; anonymous ones (gtid_mode
// OFF) add nothing.
func TestStreamTracksMySQLGTIDs(t *testing.T) {
	plain := new(replication.GTIDEvent)
	if err := plain.Decode([]byte("\x00\\\xcc\x103D\xa8\x11\xea\xbdY\x02B\xac\x19\x00\x03w\x00\x00\x00\x00\x00\x00\x00\x02x\x00\x00\x00\x00\x00\x00\x00y\x00\x00\x00\x00\x00\x00\x00j0\xb1>x\xa0\x05\xfc\xc3\x03\x938\x01\x00")); err != nil {
		t.Fatal(err)
	}
	tagged := new(replication.GtidTaggedLogEvent)
	if err := tagged.Decode([]byte{
		0x2, 0x76, 0x0, 0x0, 0x2, 0x2, 0x25, 0x2, 0xdc, 0xf0, 0x9, 0x2, 0x30, 0xf9, 0x3, 0x22, 0xbd, 0x3,
		0xad, 0x2, 0x21, 0x2, 0x44, 0x44, 0x5a, 0x68, 0x51, 0x3, 0x22, 0x4, 0x4, 0x6, 0xc, 0x66, 0x6f, 0x6f, 0x62,
		0x61, 0x7a, 0x8, 0x0, 0xa, 0x4, 0xc, 0x7f, 0x15, 0x83, 0x22, 0x2d, 0x5c, 0x2e, 0x6, 0x10, 0x49, 0x3, 0x12,
		0xc3, 0x2, 0xb,
	}); err != nil {
		t.Fatal(err)
	}
	tg, ok := gtid.FromMySQL(tagged.SID, tagged.Tag, tagged.GNO)
	if !ok || tagged.Tag.String() != "foobaz" {
		t.Fatalf("tagged fixture: %+v %v", tagged.GTIDEvent, ok)
	}
	anonymous := &replication.GTIDEvent{SID: make([]byte, 16)}
	s := mysqlStream(t)
	h := &gtidRecorder{}
	full := []byte{0x7f}
	txn := func(gtid *replication.BinlogEvent, at uint32) []*replication.BinlogEvent {
		return []*replication.BinlogEvent{
			gtid,
			hdr(replication.QUERY_EVENT, at+10, 10, 1, &replication.QueryEvent{Query: []byte("BEGIN")}),
			hdr(replication.TABLE_MAP_EVENT, at+20, 10, 1, binlogtest.MariaDBTableMap()),
			hdr(replication.WRITE_ROWS_EVENTv2, at+30, 10, 1, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}}}),
			hdr(replication.XID_EVENT, at+40, 10, 1, &replication.XIDEvent{}),
		}
	}
	var events []*replication.BinlogEvent
	events = append(events, txn(hdr(replication.GTID_EVENT, 110, 10, 1, plain), 110)...)
	events = append(events, txn(hdr(replication.GTID_TAGGED_LOG_EVENT, 160, 10, 1, tagged), 160)...)
	events = append(events, txn(hdr(replication.ANONYMOUS_GTID_EVENT, 210, 10, 1, anonymous), 210)...)
	for _, e := range events {
		if err := s.handle(context.Background(), e, h); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"binlog.000001:150 5ccc1033-44a8-11ea-bd59-0242ac190003:119",
		"binlog.000001:200 5ccc1033-44a8-11ea-bd59-0242ac190003:119," + tg.Origin + ":" + fmt.Sprint(tg.N),
		"binlog.000001:250 5ccc1033-44a8-11ea-bd59-0242ac190003:119," + tg.Origin + ":" + fmt.Sprint(tg.N),
	}
	if !slices.Equal(h.commits, want) {
		t.Errorf("commits:\n%s\nwant:\n%s", strings.Join(h.commits, "\n"), strings.Join(want, "\n"))
	}
	if got := s.touched["d.t"]; got["5ccc1033-44a8-11ea-bd59-0242ac190003"] != 119 || got[tg.Origin] != tg.N || len(got) != 2 {
		t.Errorf("touched %v", s.touched)
	}
	// The set reads back as the server prints it, tag and all.
	back, err := gtid.Parse(mysql.MySQLFlavor, s.gtids.String())
	if err != nil || back.String() != s.gtids.String() || !strings.Contains(s.gtids.String(), ":foobaz:") {
		t.Errorf("%q reads back as %q, %v", s.gtids.String(), back.String(), err)
	}
}

// gtidRecorder writes down each commit's position and GTID set.
type gtidRecorder struct {
	recorder
	commits []string
	last    Commit
}

func (h *gtidRecorder) Commit(c Commit) {
	h.commits = append(h.commits, c.Position.String()+" "+c.GTID)
	h.last = c
}

// TestStreamTracksMariaDBGTIDs: MariaDB's GTID events make the position;
// a prepared XA transaction's commits carry the set before it, where a
// restart resumes.
func TestStreamTracksMariaDBGTIDs(t *testing.T) {
	s := testStream(t)
	s.tables = map[uint64]*tableState{}
	s.gtids, s.gtidsKnown = gtid.NewSet(mysql.MariaDBFlavor), true
	s.pos = Position{File: "binlog.000001", Pos: 4}
	h := &gtidRecorder{}
	gtid := func(seq uint64, flags byte, at uint32) *replication.BinlogEvent {
		return hdr(replication.MARIADB_GTID_EVENT, at, 10, 1, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 7, SequenceNumber: seq}, Flags: flags})
	}
	full := []byte{0x7f}
	for _, e := range []*replication.BinlogEvent{
		gtid(5, 0, 100),
		hdr(replication.TABLE_MAP_EVENT, 110, 10, 1, binlogtest.MariaDBTableMap()),
		hdr(replication.WRITE_ROWS_EVENTv1, 120, 10, 1, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}}}),
		hdr(replication.XID_EVENT, 130, 10, 1, &replication.XIDEvent{}),
		gtid(6, mariadbPreparedXA, 140),
		hdr(replication.TABLE_MAP_EVENT, 150, 10, 1, binlogtest.MariaDBTableMap()),
		hdr(replication.WRITE_ROWS_EVENTv1, 160, 10, 1, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{2}}}),
		hdr(replication.XA_PREPARE_LOG_EVENT, 170, 10, 1, &replication.GenericEvent{Data: binlogtest.XAPrepare("g")}),
		gtid(7, 0, 180),
		hdr(replication.QUERY_EVENT, 190, 10, 1, &replication.QueryEvent{Schema: []byte("d"), Query: []byte("CREATE TABLE d.n (a INT)")}),
	} {
		if err := s.handle(context.Background(), e, h); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"binlog.000001:130 0-7-5", "binlog.000001:170 0-7-5", "binlog.000001:190 0-7-5"}
	if !slices.Equal(h.commits, want) {
		t.Errorf("commits %q, want %q (the set at the prepared XA's start)", h.commits, want)
	}
	if h.last.Resume != (Position{File: "binlog.000001", Pos: 130}) || h.last.History.LastSize != 10 || h.last.History.LastTime != 1 {
		t.Errorf("last commit resumes at %s with history %+v", h.last.Resume, h.last.History)
	}
	if s.gtids.String() != "0-7-7" {
		t.Errorf("executed %s, want 0-7-7", s.gtids.String())
	}
}

// TestHistoryCheck: a stream resuming at a boundary reads the event that
// ended there and the file's format description, and stops when either
// is not the checkpoint's (a binlog that restarted).
func TestHistoryCheck(t *testing.T) {
	const created, at = 1700000000, 3891
	start := Position{File: "binlog.000001", Pos: at}
	want := History{FileCreated: created, LastType: byte(replication.XID_EVENT), LastTime: created + 5, LastSize: 31}
	connect := func(fde, last *replication.BinlogEvent) (*Stream, *gtidRecorder, error) {
		s := testStream(t)
		s.tables = map[uint64]*tableState{}
		s.pos, s.boundary, s.resume = start, start, start
		hist := want
		s.expect = &hist
		h := &gtidRecorder{}
		for _, e := range []*replication.BinlogEvent{
			hdr(replication.ROTATE_EVENT, 0, 40, 0, &replication.RotateEvent{NextLogName: []byte(start.File), Position: uint64(at - 31)}),
			fde,
			hdr(replication.MARIADB_GTID_LIST_EVENT, 0, 30, created, &replication.MariadbGTIDListEvent{}),
			last,
			hdr(replication.QUERY_EVENT, at+40, 40, created+6, &replication.QueryEvent{Query: []byte("BEGIN")}),
		} {
			if err := s.handle(context.Background(), e, h); err != nil {
				return s, h, err
			}
		}
		return s, h, nil
	}
	fde := func(ts uint32) *replication.BinlogEvent {
		return hdr(replication.FORMAT_DESCRIPTION_EVENT, 0, 120, ts, &replication.FormatDescriptionEvent{})
	}
	xid := hdr(replication.XID_EVENT, at, 31, created+5, &replication.XIDEvent{})
	s, h, err := connect(fde(created), xid)
	if err != nil {
		t.Fatalf("the same binlog: %v", err)
	}
	if len(h.commits) != 0 || s.pos != (Position{File: start.File, Pos: at + 40}) || s.expect != nil {
		t.Errorf("the checked event was handed on (commits %q) or the position is %s", h.commits, s.pos)
	}
	for name, c := range map[string]struct {
		fde, last *replication.BinlogEvent
		reason    string
	}{
		"RESET MASTER": {fde(created + 100), xid, "the server's binlog.000001 was begun at 2023-11-14T22:15:00Z, the checkpoint's at 2023-11-14T22:13:20Z"},
		"other event":  {fde(created), hdr(replication.QUERY_EVENT, at, 31, created+5, &replication.QueryEvent{}), "the event before it is a QueryEvent of 31 bytes"},
		"other end":    {fde(created), hdr(replication.XID_EVENT, at+8, 31, created+5, &replication.XIDEvent{}), "ending at 3899"},
	} {
		_, _, err := connect(c.fde, c.last)
		var he *HistoryError
		if !errors.As(err, &he) || !strings.Contains(err.Error(), c.reason) || !strings.Contains(err.Error(), "RESET MASTER") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNewHistoryVersions: a stream begun by GTID on a new history gives
// its first file F = the old ceiling, so its rows outrank every version
// written before, and keeps the offset for the files after.
func TestNewHistoryVersions(t *testing.T) {
	s := testStream(t)
	s.tables = map[uint64]*tableState{}
	s.gtids, _ = gtid.Parse(mysql.MariaDBFlavor, "0-7-9")
	s.byGTID, s.ceiling, s.gtidsKnown = true, 40, true
	h := &versionRecorder{}
	full := []byte{0x7f}
	for _, e := range []*replication.BinlogEvent{
		hdr(replication.ROTATE_EVENT, 0, 40, 0, &replication.RotateEvent{NextLogName: []byte("binlog.000003"), Position: 4}),
		hdr(replication.FORMAT_DESCRIPTION_EVENT, 256, 252, 9, &replication.FormatDescriptionEvent{}),
		hdr(replication.MARIADB_GTID_EVENT, 300, 40, 9, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 8, SequenceNumber: 10}}),
		hdr(replication.TABLE_MAP_EVENT, 350, 50, 9, binlogtest.MariaDBTableMap()),
		hdr(replication.WRITE_ROWS_EVENTv1, 400, 50, 9, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}}}),
		hdr(replication.XID_EVENT, 431, 31, 9, &replication.XIDEvent{}),
		hdr(replication.ROTATE_EVENT, 0, 40, 0, &replication.RotateEvent{NextLogName: []byte("binlog.000004"), Position: 4}),
		hdr(replication.MARIADB_GTID_EVENT, 300, 40, 9, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 8, SequenceNumber: 11}}),
		hdr(replication.TABLE_MAP_EVENT, 350, 50, 9, binlogtest.MariaDBTableMap()),
		hdr(replication.WRITE_ROWS_EVENTv1, 400, 50, 9, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}}}),
	} {
		if err := s.handle(context.Background(), e, h); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.versions) != 2 || h.versions[0] != RowVersion(40, 400, 0) || h.versions[1] != RowVersion(41, 400, 0) {
		t.Errorf("versions %x, want F 40 then 41", h.versions)
	}
	// Before its first transaction the stream offered no boundary to
	// resume at by position (the header of a file it entered by GTID).
	if len(h.commits) == 0 || h.commits[0].Position.Pos != 431 || h.commits[0].Offset != 37 || h.commits[0].GTID != "0-8-10" {
		t.Errorf("commits %+v", h.commits)
	}
}

type versionRecorder struct {
	recorder
	versions []uint64
	commits  []Commit
}

func (h *versionRecorder) Rows(_ context.Context, r Rows) error {
	h.versions = append(h.versions, r.Version)
	return nil
}

func (h *versionRecorder) Commit(c Commit) { h.commits = append(h.commits, c) }

// TestStreamLearnsGTIDsFromFileHeader: a stream started without the
// executed set (a checkpoint saved before binlog2ch kept GTIDs, on MySQL)
// offers none until a file's previous-GTIDs event (go-mysql's fixture)
// gives the whole set, then goes on from it.
func TestStreamLearnsGTIDsFromFileHeader(t *testing.T) {
	s := mysqlStream(t)
	s.gtidsKnown = false
	h := &gtidRecorder{}
	prev := &replication.PreviousGTIDsEvent{}
	if err := prev.Decode([]byte{0x1, 0x1, 0x0, 0x0, 0x0, 0x0, 0x0, 0x1, 0x89, 0x6e, 0x78, 0x82, 0x18, 0xfe, 0x11, 0xef, 0xab, 0x88, 0x22, 0x22, 0x2d, 0x34, 0xd4, 0x11, 0x0, 0x1, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x1, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x4, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0}); err != nil {
		t.Fatal(err)
	}
	u := uuid.MustParse("896e7882-18fe-11ef-ab88-22222d34d411")
	gtid := func(gno int64, at uint32) *replication.BinlogEvent {
		return hdr(replication.GTID_EVENT, at, 10, 1, &replication.GTIDEvent{SID: u[:], GNO: gno})
	}
	for _, e := range []*replication.BinlogEvent{
		gtid(1, 110), // read mid-file: only this one would be known
		hdr(replication.XID_EVENT, 120, 10, 1, &replication.XIDEvent{}),
		hdr(replication.ROTATE_EVENT, 0, 40, 0, &replication.RotateEvent{NextLogName: []byte("binlog.000002"), Position: 4}),
		hdr(replication.FORMAT_DESCRIPTION_EVENT, 126, 122, 1, &replication.FormatDescriptionEvent{}),
		hdr(replication.PREVIOUS_GTIDS_EVENT, 200, 74, 1, prev),
		gtid(4, 260),
		hdr(replication.XID_EVENT, 300, 10, 1, &replication.XIDEvent{}),
	} {
		if err := s.handle(context.Background(), e, h); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"binlog.000001:120 ", "binlog.000002:4 ", "binlog.000002:126 ", "binlog.000002:200 896e7882-18fe-11ef-ab88-22222d34d411:1-3", "binlog.000002:300 896e7882-18fe-11ef-ab88-22222d34d411:1-4"}
	if !slices.Equal(h.commits, want) {
		t.Errorf("commits %q, want %q", h.commits, want)
	}
}

// nopHandler takes events and does nothing.
type nopHandler struct{ recorder }

func (nopHandler) Event(Event)                                {}
func (nopHandler) Rows(context.Context, Rows) error           { return nil }
func (nopHandler) Commit(Commit)                              {}
func (nopHandler) Statement(context.Context, Statement) error { return nil }

// BenchmarkTransactionGTID is what tracking GTIDs costs per transaction:
// a GTID event and its commit, each commit rendering the executed set.
func BenchmarkTransactionGTID(b *testing.B) {
	for _, flavor := range []string{mysql.MariaDBFlavor, mysql.MySQLFlavor} {
		b.Run(flavor, func(b *testing.B) {
			s := testStream(b)
			s.srv.Flavor = flavor
			s.tables = map[uint64]*tableState{}
			s.gtids, s.gtidsKnown = gtid.NewSet(flavor), true
			s.pos = Position{File: "binlog.000001", Pos: 4}
			u := uuid.MustParse("5ccc1033-44a8-11ea-bd59-0242ac190003")
			h := &nopHandler{}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				at := uint32(100 + 20*i)
				var g *replication.BinlogEvent
				if flavor == mysql.MariaDBFlavor {
					g = hdr(replication.MARIADB_GTID_EVENT, at, 10, 1, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 7, SequenceNumber: uint64(i + 1)}})
				} else {
					g = hdr(replication.GTID_EVENT, at, 10, 1, &replication.GTIDEvent{SID: u[:], GNO: int64(i + 1)})
				}
				if err := s.handle(context.Background(), g, h); err != nil {
					b.Fatal(err)
				}
				if err := s.handle(context.Background(), hdr(replication.XID_EVENT, at+10, 10, 1, &replication.XIDEvent{}), h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSavepointInsideTransaction: SAVEPOINT and ROLLBACK TO, which the
// server writes inside a transaction, are not boundaries (a restart there
// would begin mid-transaction, without its table maps) and do not take
// its GTID.
func TestSavepointInsideTransaction(t *testing.T) {
	s := testStream(t)
	s.tables = map[uint64]*tableState{}
	s.gtids, s.gtidsKnown = gtid.NewSet(mysql.MariaDBFlavor), true
	s.pos = Position{File: "binlog.000001", Pos: 4}
	h := &gtidRecorder{}
	full := []byte{0x7f}
	for _, e := range []*replication.BinlogEvent{
		hdr(replication.MARIADB_GTID_EVENT, 100, 10, 1, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 7, SequenceNumber: 3}}),
		hdr(replication.TABLE_MAP_EVENT, 110, 10, 1, binlogtest.MariaDBTableMap()),
		hdr(replication.WRITE_ROWS_EVENTv1, 120, 10, 1, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}}}),
		hdr(replication.QUERY_EVENT, 130, 10, 1, &replication.QueryEvent{Query: []byte("SAVEPOINT `a`")}),
		hdr(replication.TABLE_MAP_EVENT, 140, 10, 1, binlogtest.MariaDBTableMap()),
		hdr(replication.WRITE_ROWS_EVENTv1, 150, 10, 1, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{2}}}),
		hdr(replication.QUERY_EVENT, 160, 10, 1, &replication.QueryEvent{Query: []byte("ROLLBACK TO `a`")}),
		hdr(replication.QUERY_EVENT, 170, 10, 1, &replication.QueryEvent{Query: []byte("ROLLBACK WORK TO SAVEPOINT b")}),
		hdr(replication.QUERY_EVENT, 180, 10, 1, &replication.QueryEvent{Query: []byte("RELEASE SAVEPOINT b")}),
		hdr(replication.XID_EVENT, 190, 10, 1, &replication.XIDEvent{}),
	} {
		if err := s.handle(context.Background(), e, h); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"binlog.000001:190 0-7-3"}; !slices.Equal(h.commits, want) {
		t.Errorf("commits %q, want %q", h.commits, want)
	}
}
