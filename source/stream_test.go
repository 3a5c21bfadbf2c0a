package source

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/config"
)

// recorder is a Handler that writes down what it is handed.
type recorder struct {
	got []string
}

func (h *recorder) Event(e Event) {
	h.got = append(h.got, fmt.Sprintf("event heartbeat=%v ts=%d", e.Heartbeat, e.Timestamp))
}

func (h *recorder) Rows(_ context.Context, r Rows) error {
	h.got = append(h.got, fmt.Sprintf("rows %s op=%d file=%d pos=%d at=%s cols=%d n=%d", r.Table, r.Op, r.Version>>44, r.Version>>12&(1<<32-1), r.At, len(r.Schema.Columns), len(r.Rows)))
	return nil
}

func (h *recorder) Statement(_ context.Context, st Statement) error {
	h.got = append(h.got, fmt.Sprintf("statement at=%s notable=%q parsed=%v effects=%d", st.At, st.NonTableKind, st.Parsed, len(st.Effects)))
	return nil
}

func (h *recorder) Commit(c Commit) {
	h.got = append(h.got, fmt.Sprintf("commit %s file=%d at=%d", c.Position, c.File, c.Timestamp))
}

func (h *recorder) Tick(bool) (time.Duration, error)    { return 0, nil }
func (h *recorder) Down(error, Position, time.Duration) {}

func testStream(t testing.TB) *Stream {
	t.Helper()
	cfg, err := config.Parse([]byte(`mysql: {addr: "127.0.0.1:3306", user: u, server_id: 7}
clickhouse: {addr: ["127.0.0.1:9000"]}
tables: {include: ["d.*"]}
state_dir: state
`), "t.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), Server{Flavor: "mariadb", ID: "server_id:1"})
	if err != nil {
		t.Fatal(err)
	}
	s.parser = parser.New()
	return s
}

func ev(typ replication.EventType, logPos, ts uint32, e replication.Event) *replication.BinlogEvent {
	return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: typ, LogPos: logPos, Timestamp: ts}, Event: e}
}

// TestStreamHandsOnEvents feeds a stream the events of a session (a
// rotate, a transaction on a selected table and one on another, DDL, a
// routine, a heartbeat) and checks what its handler is told, in order.
func TestStreamHandsOnEvents(t *testing.T) {
	s := testStream(t)
	if err := s.Run(context.Background(), Start{Position: Position{File: "nonsense", Pos: 4}}, &recorder{}); err == nil {
		t.Fatal("Run accepted a binlog file name without an index")
	}
	s.tables = map[uint64]*tableState{}
	s.pos = Position{File: "binlog.000001", Pos: 4}
	other := binlogtest.MariaDBTableMap()
	other.TableID, other.Schema = 19, []byte("skipped")
	h := &recorder{}
	full := []byte{0x7f} // all 7 columns of mapEvent
	for _, e := range []*replication.BinlogEvent{
		ev(replication.ROTATE_EVENT, 0, 0, &replication.RotateEvent{NextLogName: []byte("binlog.000002"), Position: 4}),
		ev(replication.QUERY_EVENT, 100, 1000, &replication.QueryEvent{Query: []byte("BEGIN")}),
		ev(replication.TABLE_MAP_EVENT, 150, 1000, binlogtest.MariaDBTableMap()),
		ev(replication.WRITE_ROWS_EVENTv1, 200, 1000, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, Rows: [][]any{{1}, {2}}}),
		ev(replication.UPDATE_ROWS_EVENTv1, 250, 1000, &replication.RowsEvent{TableID: 18, ColumnBitmap1: full, ColumnBitmap2: full, Rows: [][]any{{1}, {3}}}),
		ev(replication.XID_EVENT, 280, 1001, &replication.XIDEvent{}),
		ev(replication.TABLE_MAP_EVENT, 320, 1002, other),
		ev(replication.DELETE_ROWS_EVENTv1, 360, 1002, &replication.RowsEvent{TableID: 19, Rows: [][]any{{1}}}),
		ev(replication.XID_EVENT, 400, 1002, &replication.XIDEvent{}),
		ev(replication.QUERY_EVENT, 500, 1003, &replication.QueryEvent{Schema: []byte("d"), Query: []byte("TRUNCATE TABLE t")}),
		ev(replication.QUERY_EVENT, 600, 1004, &replication.QueryEvent{Schema: []byte("d"), Query: []byte("CREATE PROCEDURE p() SELECT 1")}),
		ev(replication.HEARTBEAT_EVENT, 0, 0, &replication.GenericEvent{}),
	} {
		if err := s.handle(context.Background(), e, h); err != nil {
			t.Fatalf("%s: %v", e.Header.EventType, err)
		}
	}
	want := []string{
		"event heartbeat=false ts=0",
		"commit binlog.000002:4 file=2 at=0",
		"event heartbeat=false ts=1000000000000",
		"event heartbeat=false ts=1000000000000",
		"event heartbeat=false ts=1000000000000",
		"rows d.t op=1 file=2 pos=200 at=binlog.000002:150 cols=7 n=2",
		"event heartbeat=false ts=1000000000000",
		"rows d.t op=2 file=2 pos=250 at=binlog.000002:200 cols=7 n=2",
		"event heartbeat=false ts=1001000000000",
		"commit binlog.000002:280 file=2 at=1001000000000",
		"event heartbeat=false ts=1002000000000",
		"event heartbeat=false ts=1002000000000",
		"event heartbeat=false ts=1002000000000",
		"commit binlog.000002:400 file=2 at=1002000000000",
		"event heartbeat=false ts=1003000000000",
		"statement at=binlog.000002:500 notable=\"\" parsed=true effects=1",
		"commit binlog.000002:500 file=2 at=1003000000000",
		"event heartbeat=false ts=1004000000000",
		"statement at=binlog.000002:600 notable=\"CREATE PROCEDURE\" parsed=false effects=0",
		"commit binlog.000002:600 file=2 at=1004000000000",
		"event heartbeat=true ts=0",
	}
	if got := strings.Join(h.got, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("handler was told:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if s.resume != (Position{File: "binlog.000002", Pos: 600}) {
		t.Errorf("resume at %s, want the last commit", s.resume)
	}
}

// TestStreamStopsOnWhatItCannotApply: rows without their table map stop
// the stream with the position; never a skip. (Partial row images go on,
// for their readers to check: TestPartialImages.)
func TestStreamStopsOnWhatItCannotApply(t *testing.T) {
	for _, c := range []struct {
		e    *replication.BinlogEvent
		want string
	}{
		{ev(replication.WRITE_ROWS_EVENTv1, 200, 1, &replication.RowsEvent{TableID: 99, Rows: [][]any{{1}}}), "binlog.000003:4: rows event for table id 99 without its table-map event"},
	} {
		s := testStream(t)
		s.tables = map[uint64]*tableState{}
		s.pos = Position{File: "binlog.000003", Pos: 4}
		if err := s.handle(context.Background(), ev(replication.TABLE_MAP_EVENT, 4, 1, binlogtest.MariaDBTableMap()), &recorder{}); err != nil {
			t.Fatal(err)
		}
		err := s.handle(context.Background(), c.e, &recorder{})
		var fatal fatalError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.e.Header.EventType, err, c.want)
		} else if !asFatal(err, &fatal) {
			t.Errorf("%s: %v would reconnect, not stop", c.e.Header.EventType, err)
		}
	}
}

func asFatal(err error, f *fatalError) bool {
	fe, ok := err.(fatalError)
	*f = fe
	return ok
}
