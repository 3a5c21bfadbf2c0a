package source

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/go-mysql-org/go-mysql/replication"
)

// The XA_PREPARE_LOG_EVENT bodies and XA statements as MariaDB 10.11
// wrote them (XA START 'x1' ... XA PREPARE 'x1'; XA START 'x2','br',7
// ...), and the same id read from both.
func TestXAIDs(t *testing.T) {
	for _, c := range []struct {
		body, stmt string
		onePhase   bool
		want       XAID
		readable   string
	}{
		{"000100000002000000000000007831", "XA ROLLBACK X'7831',X'',1", false, "X'7831',X'',1", "'x1','',1"},
		{"0007000000020000000200000078326272", "XA COMMIT X'7832',X'6272',7", false, "X'7832',X'6272',7", "'x2','br',7"},
		{"01010000000300000000000000787a7a", "XA COMMIT x'787a7a',X'',1 ONE PHASE", true, "X'787A7A',X'',1", "'xzz','',1"},
		{"0101000000010000000000000000", "XA COMMIT X'00',X'',1", true, "X'00',X'',1", "X'00',X'',1"},
	} {
		body, _ := hex.DecodeString(c.body)
		onePhase, id, err := parseXAPrepare(body)
		if err != nil || onePhase != c.onePhase || id != c.want {
			t.Errorf("parseXAPrepare(%s) = %v, %q, %v; want %v, %q", c.body, onePhase, id, err, c.onePhase, c.want)
		}
		if id.Readable() != c.readable {
			t.Errorf("%q reads %q, want %q", id, id.Readable(), c.readable)
		}
		verb, sid, ok := xaStatement(c.stmt)
		if !ok || sid != c.want || (verb != "COMMIT" && verb != "ROLLBACK") {
			t.Errorf("xaStatement(%q) = %q, %q, %v; want the id %q", c.stmt, verb, sid, ok, c.want)
		}
	}
	for _, bad := range []string{"", "00010000000200000000", "0001000000ff00000000000000"} {
		body, _ := hex.DecodeString(bad)
		if _, _, err := parseXAPrepare(body); err == nil {
			t.Errorf("parseXAPrepare(%s) took a malformed body", bad)
		}
	}
	for _, q := range []string{"BEGIN", "COMMIT", "XACT", "ALTER TABLE xa ADD c INT"} {
		if _, _, ok := xaStatement(q); ok {
			t.Errorf("%q taken for an XA statement", q)
		}
	}
}

// TestStreamHoldsPreparedXA feeds a stream XA transactions as MySQL
// writes them (XA START query events) and as MariaDB does (FL_PREPARED_XA
// in the GTID event): their rows are not handed on at XA PREPARE, the
// resume position stays before the oldest prepared one while other
// transactions commit, XA COMMIT and a one-phase prepare ask for the rows
// to be read again over exactly the transaction's range, XA ROLLBACK lets
// the resume position go on, and an XA COMMIT whose PREPARE was not read
// stops the stream.
func TestStreamHoldsPreparedXA(t *testing.T) {
	s := testStream(t)
	s.tables = map[uint64]*tableState{}
	s.pos = Position{File: "binlog.000002", Pos: 100}
	s.boundary, s.resume = s.pos, s.pos
	h := &recorder{}
	full := []byte{0x7f}
	feed := func(e *replication.BinlogEvent) error {
		t.Helper()
		return s.handle(context.Background(), e, h)
	}
	must := func(es ...*replication.BinlogEvent) {
		t.Helper()
		for _, e := range es {
			if err := feed(e); err != nil {
				t.Fatalf("%s at %d: %v", e.Header.EventType, e.Header.LogPos, err)
			}
		}
	}
	prepare := func(pos uint32, body string) *replication.BinlogEvent {
		b, _ := hex.DecodeString(body)
		return ev(replication.XA_PREPARE_LOG_EVENT, pos, 1, &replication.GenericEvent{Data: b})
	}
	rows := func(pos uint32) *replication.BinlogEvent {
		return ev(replication.WRITE_ROWS_EVENTv1, pos, 1, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}}})
	}
	// MySQL: 'x1' prepared.
	must(ev(replication.GTID_EVENT, 150, 1, &replication.GTIDEvent{}),
		ev(replication.QUERY_EVENT, 200, 1, &replication.QueryEvent{Query: []byte("XA START X'7831',X'',1")}),
		ev(replication.TABLE_MAP_EVENT, 250, 1, binlogtest.MariaDBTableMap()), rows(300),
		ev(replication.QUERY_EVENT, 350, 1, &replication.QueryEvent{Query: []byte("XA END X'7831',X'',1")}),
		prepare(400, "000100000002000000000000007831"))
	// MariaDB: 'x2' prepared, then an ordinary transaction commits.
	must(ev(replication.MARIADB_GTID_EVENT, 450, 1, &replication.MariadbGTIDEvent{Flags: 0x4c}),
		ev(replication.TABLE_MAP_EVENT, 500, 1, binlogtest.MariaDBTableMap()), rows(550),
		ev(replication.QUERY_EVENT, 600, 1, &replication.QueryEvent{Query: []byte("XA END X'7832',X'',1")}),
		prepare(650, "000100000002000000000000007832"),
		ev(replication.MARIADB_GTID_EVENT, 700, 1, &replication.MariadbGTIDEvent{Flags: 0x0c}),
		ev(replication.TABLE_MAP_EVENT, 750, 1, binlogtest.MariaDBTableMap()), rows(800), ev(replication.XID_EVENT, 850, 1, &replication.XIDEvent{}))
	handed := 0
	for _, g := range h.got {
		if strings.HasPrefix(g, "rows ") {
			handed++
			if !strings.Contains(g, "pos=800 ") {
				t.Errorf("handed on before its XA COMMIT: %s", g)
			}
		}
	}
	if handed != 1 || s.resume != (Position{File: "binlog.000002", Pos: 100}) || len(s.prepared) != 2 {
		t.Fatalf("handed %d rows events, resume %s, %d prepared; want 1, binlog.000002:100 (before 'x1'), 2", handed, s.resume, len(s.prepared))
	}
	// 'x2' committed: its range is asked for; 'x1' rolled back.
	err := feed(ev(replication.QUERY_EVENT, 900, 1, &replication.QueryEvent{Query: []byte("XA COMMIT X'7832',X'',1")}))
	c, ok := errIsXACommitted(err)
	x := c.x
	if !ok || c.old || x.id != "X'7832',X'',1" || x.start != (Position{File: "binlog.000002", Pos: 400}) || x.end != (Position{File: "binlog.000002", Pos: 650}) {
		t.Fatalf("XA COMMIT gave %v (%+v); want the rows of 'x2' from binlog.000002:400 to :650", err, x)
	}
	s.forget(x.id)
	s.commit(h)
	if s.resume.Pos != 100 {
		t.Errorf("resume moved to %s while 'x1' is still prepared", s.resume)
	}
	must(ev(replication.QUERY_EVENT, 950, 1, &replication.QueryEvent{Query: []byte("XA ROLLBACK X'7831',X'',1")}))
	if s.resume.Pos != 950 || len(s.prepared) != 0 {
		t.Errorf("after the last outcome: resume %s, %d prepared; want :950, 0", s.resume, len(s.prepared))
	}
	// MySQL's XA COMMIT ... ONE PHASE.
	must(ev(replication.QUERY_EVENT, 1000, 1, &replication.QueryEvent{Query: []byte("XA START X'7833',X'',1")}),
		ev(replication.TABLE_MAP_EVENT, 1050, 1, binlogtest.MariaDBTableMap()), rows(1100),
		ev(replication.QUERY_EVENT, 1150, 1, &replication.QueryEvent{Query: []byte("XA END X'7833',X'',1")}))
	if c, ok := errIsXACommitted(feed(prepare(1200, "010100000002000000000000007833"))); !ok || c.x.start.Pos != 950 || c.x.end.Pos != 1200 {
		t.Errorf("one-phase prepare gave %+v, %v; want its rows from :950 to :1200", x, ok)
	}
	// Prepared before the stream started: Run looks it up in the binlog
	// before the start, its rows to get the versions of the COMMIT's
	// event, from the boundary before it.
	s.boundary = Position{File: "binlog.000002", Pos: 1250}
	c, ok = errIsXACommitted(feed(ev(replication.QUERY_EVENT, 1300, 1, &replication.QueryEvent{Query: []byte("XA COMMIT X'7834',X'',1")})))
	if !ok || !c.old || c.found || c.x.id != "X'7834',X'',1" || c.from.Pos != 1250 || c.at.Pos != 1300 {
		t.Errorf("unknown XA COMMIT gave %+v, %v; want a look-up of 'x4' with the versions of :1250-:1300", c, ok)
	}
	var fatal fatalError
	// A prepare whose start was not marked.
	s.xa = nil
	if err := feed(prepare(1400, "000100000002000000000000007835")); !asFatal(err, &fatal) {
		t.Errorf("an unmarked XA PREPARE gave %v, want a stop", err)
	}
}
