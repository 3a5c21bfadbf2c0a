package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/gtid"
)

// statementRecorder writes down the statements and rows it is handed.
type statementRecorder struct {
	nopHandler
	got []string
}

func (h *statementRecorder) Rows(_ context.Context, r Rows) error {
	h.got = append(h.got, fmt.Sprintf("rows %s at %s", r.Table, r.At))
	return nil
}

func (h *statementRecorder) Statement(_ context.Context, st Statement) error {
	var effects []string
	for _, ef := range st.Effects {
		kind := fmt.Sprint(ef.Kind)
		if ef.Kind == ddl.RowsByStatement {
			kind = "rows_by_statement"
		}
		effects = append(effects, kind+" "+ef.Table.String())
	}
	h.got = append(h.got, fmt.Sprintf("statement at %s %q: %s", st.At, st.Text, strings.Join(effects, ", ")))
	return nil
}

// runFake runs a MySQL-flavoured stream over b from its start until it
// stops by itself, counting skipped events in skipped and logging to logs.
func runFake(t *testing.T, b *binlogtest.Binlog, h Handler, skipped *prometheus.CounterVec, logs *bytes.Buffer) error {
	t.Helper()
	s := testStream(t)
	s.srv = Server{Flavor: mysql.MySQLFlavor, ID: "uuid:test"}
	s.log = slog.New(slog.NewTextHandler(logs, nil))
	s.EventsSkipped = skipped
	s.testDial = func(pos Position, _ *gtid.Set) (*client.Conn, error) { return b.Dial(t, pos.File, pos.Pos), nil }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := s.Run(ctx, Start{Position: Position{File: binlogtest.File, Pos: 4}}, h)
	if ctx.Err() != nil {
		t.Fatalf("the stream did not stop by itself: %v", err)
	}
	return err
}

// TestEventsPassedBy: the stream hands on an EXECUTE_LOAD_QUERY_EVENT's
// LOAD DATA (a session with binlog_format STATEMENT) as a statement
// changing its table's rows; counts the events that change no rows by type
// (an unknown type flagged ignorable too) and logs each type once; and
// stops at an INCIDENT_EVENT naming its position, its message and the way
// out.
func TestEventsPassedBy(t *testing.T) {
	b := binlogtest.NewBinlog()
	load := "LOAD DATA LOCAL INFILE '/tmp/SQL_LOAD_MB-1-0' INTO TABLE `t` FIELDS TERMINATED BY ',' ENCLOSED BY '' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (`id`, `v`, `n`)"
	b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
	b.Add(replication.INTVAR_EVENT, binlogtest.IntVar(7))
	b.Add(replication.BEGIN_LOAD_QUERY_EVENT, binlogtest.BeginLoadQuery(1, "1,a,1\n"))
	b.Add(replication.APPEND_BLOCK_EVENT, binlogtest.BeginLoadQuery(1, "2,b,2\n"))
	loadAt, _ := b.Add(replication.EXECUTE_LOAD_QUERY_EVENT, binlogtest.ExecuteLoadQuery(1, "d", load))
	b.Add(replication.XID_EVENT, binlogtest.XID(1))
	rowsStart, _, _ := addPlain(b, 2, 5)
	b.Add(replication.ROWS_QUERY_EVENT, binlogtest.RowsQuery("INSERT INTO t VALUES (5)"))
	b.AddFlagged(100, replication.LOG_EVENT_IGNORABLE_F, []byte("a newer server's event"))
	b.Add(replication.INTVAR_EVENT, binlogtest.IntVar(8))
	incidentAt, _ := b.Add(replication.INCIDENT_EVENT, binlogtest.Incident(1, "error writing to the binary log"))
	addPlain(b, 3, 6) // never read

	h := &statementRecorder{}
	skipped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skipped"}, []string{"type"})
	var logs bytes.Buffer
	err := runFake(t, b, h, skipped, &logs)
	var incident *IncidentError
	if !errors.As(err, &incident) || incident.At != (Position{File: binlogtest.File, Pos: incidentAt}) {
		t.Fatalf("got %v; want an IncidentError at %d", err, incidentAt)
	}
	for _, want := range []string{fmt.Sprintf("binlog %s:%d", binlogtest.File, incidentAt), `LOST_EVENTS: "error writing to the binary log"`,
		"changes may be missing", "binlog2ch verify", "fullsync -recreate -checkpoint"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the incident's error lacks %q: %v", want, err)
		}
	}
	want := []string{
		fmt.Sprintf("statement at %s:%d %q: rows_by_statement d.t", binlogtest.File, loadAt+uint32(len(binlogtest.Event(0, 0, binlogtest.ExecuteLoadQuery(1, "d", load)))), load),
		fmt.Sprintf("rows d.t at %s:%d", binlogtest.File, rowsStart),
	}
	if got := strings.Join(h.got, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("handler was told:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	for typ, n := range map[string]float64{"INTVAR_EVENT": 2, "BEGIN_LOAD_QUERY_EVENT": 1, "APPEND_BLOCK_EVENT": 1, "ROWS_QUERY_EVENT": 1, "UNKNOWN_100": 1} {
		if got := counted(t, skipped)[typ]; got != n {
			t.Errorf("skipped{type=%s} = %v, want %v", typ, got, n)
		}
	}
	if n := len(counted(t, skipped)); n != 5 {
		t.Errorf("%d types counted, want 5", n)
	}
	if n := strings.Count(logs.String(), "type=INTVAR_EVENT"); n != 1 {
		t.Errorf("INTVAR_EVENT logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "type=UNKNOWN_100") {
		t.Errorf("the unknown ignorable type is not logged:\n%s", logs.String())
	}
}

// TestEventsThatStop: an event type binlog2ch does not know, without
// the flag that lets a replica ignore it, and the LOAD events of servers
// before MySQL 5.0 stop the stream at their position, naming the type and
// the way out; nothing is counted.
func TestEventsThatStop(t *testing.T) {
	for _, c := range []struct {
		typ  replication.EventType
		want string
	}{
		{101, "an event of type 101, which binlog2ch does not know"},
		{replication.NEW_LOAD_EVENT, "NEW_LOAD_EVENT (a LOAD DATA as servers before MySQL 5.0 wrote it"},
		{replication.EXEC_LOAD_EVENT, "EXEC_LOAD_EVENT"},
		{mariadbUpdateRowsCompressed, "UPDATE_ROWS_COMPRESSED_EVENT"},
	} {
		b := binlogtest.NewBinlog()
		addPlain(b, 1, 1)
		at, _ := b.Add(c.typ, []byte("whatever it holds"))
		addPlain(b, 2, 2)
		skipped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skipped"}, []string{"type"})
		h := &statementRecorder{}
		err := runFake(t, b, h, skipped, &bytes.Buffer{})
		for _, want := range []string{fmt.Sprintf("binlog %s:%d: ", binlogtest.File, at), c.want, "fullsync -recreate -checkpoint"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("type %d: got %v; want an error with %q", c.typ, err, want)
			}
		}
		if n := len(counted(t, skipped)); n != 0 || len(h.got) != 1 {
			t.Errorf("type %d: %d types counted, handed on %q; want none, and only the rows before it", c.typ, n, h.got)
		}
	}
}

// counted is each type's count in skipped.
func counted(t *testing.T, skipped *prometheus.CounterVec) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	skipped.Collect(ch)
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		got[d.GetLabel()[0].GetValue()] = d.GetCounter().GetValue()
	}
	return got
}

// TestLoadQueryText: the statement of an EXECUTE_LOAD_QUERY_EVENT ends
// before the event's checksum when the format description announces
// CRC32, and at the event's end inside a compressed transaction, whose
// events have none.
func TestLoadQueryText(t *testing.T) {
	q := "LOAD DATA INFILE '/tmp/f' INTO TABLE t"
	body := binlogtest.ExecuteLoadQuery(3, "d", q)
	var e replication.ExecuteLoadQueryEvent
	if err := e.Decode(body); err != nil {
		t.Fatal(err)
	}
	withSum := binlogtest.Event(replication.EXECUTE_LOAD_QUERY_EVENT, 0, append(append([]byte(nil), body...), 1, 2, 3, 4))
	s := testStream(t)
	s.pos = Position{File: binlogtest.File, Pos: 100}
	s.checksum = true
	if db, got, err := s.loadQueryText(withSum, &e); err != nil || db != "d" || got != q {
		t.Errorf("with a checksum: %q, %q, %v; want d, %q", db, got, err, q)
	}
	s.payload = &payloadState{start: s.pos, end: 500}
	inner := binlogtest.Event(replication.EXECUTE_LOAD_QUERY_EVENT, 0, body)
	if db, got, err := s.loadQueryText(inner, &e); err != nil || db != "d" || got != q {
		t.Errorf("inside a compressed transaction: %q, %q, %v; want d, %q", db, got, err, q)
	}
	if _, _, err := s.loadQueryText(inner[:replication.EventHeaderSize+26], &e); err == nil {
		t.Error("a truncated event was read")
	}
}
