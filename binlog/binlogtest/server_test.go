package binlogtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// sid is the source uuid of GTID's events.
var sid = uuid.UUID(bytes.Repeat([]byte{0x3e}, 16))

// testBinlog is the fake's binlog with two transactions, sid:1 and sid:2.
func testBinlog() *Binlog {
	b := NewBinlog()
	for gno := uint64(1); gno <= 2; gno++ {
		b.Add(replication.GTID_EVENT, GTID(gno))
		b.Add(replication.QUERY_EVENT, Query("d", "BEGIN"))
		b.Add(replication.XID_EVENT, XID(gno))
	}
	return b
}

// read reads what the server sends up to an error, EOF, or n events.
func read(t *testing.T, c *client.Conn, n int) (events []*replication.BinlogEvent, err error) {
	t.Helper()
	p := replication.NewBinlogParser()
	for len(events) < n {
		data, err := c.ReadPacket()
		if err != nil {
			return events, err
		}
		switch data[0] {
		case mysql.ERR_HEADER:
			return events, c.HandleErrorPacket(data)
		case mysql.EOF_HEADER:
			return events, nil
		}
		ev, err := p.Parse(data[1:])
		if err != nil {
			t.Fatalf("event %d: %v", len(events), err)
		}
		events = append(events, ev)
	}
	return events, nil
}

func describe(events []*replication.BinlogEvent) string {
	var out []string
	for _, ev := range events {
		s := fmt.Sprintf("%s@%d", ev.Header.EventType, ev.Header.LogPos)
		if r, ok := ev.Event.(*replication.RotateEvent); ok {
			s += fmt.Sprintf("(%s:%d ts=%d flags=%#x)", r.NextLogName, r.Position, ev.Header.Timestamp, ev.Header.Flags)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestDumpStartsAsAServerDoes: every dump begins with a fake rotate
// (timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F) to the file and
// position asked for, then the format description: as the file has it at
// position 4, with log_pos 0 past it; then the events from there.
func TestDumpStartsAsAServerDoes(t *testing.T) {
	b := testBinlog()
	fdeEnd, second := b.EventEnd(0), b.EventStart(4)
	for _, tc := range []struct {
		pos  uint32
		want string
	}{
		{4, fmt.Sprintf("RotateEvent@0(%s:4 ts=0 flags=0x20) FormatDescriptionEvent@%d GTIDEvent@%d", File, fdeEnd, b.EventEnd(1))},
		{second, fmt.Sprintf("RotateEvent@0(%s:%d ts=0 flags=0x20) FormatDescriptionEvent@0 GTIDEvent@%d", File, second, b.EventEnd(4))},
	} {
		c := b.Dial(t, File, tc.pos)
		events, err := read(t, c, 3)
		if err != nil {
			t.Fatalf("from %d: %v", tc.pos, err)
		}
		if got := describe(events); got != tc.want {
			t.Errorf("from %d:\n got %s\nwant %s", tc.pos, got, tc.want)
		}
	}
	if d := b.Dumps(); len(d) != 2 || d[1] != (Dump{File: File, Pos: uint64(second), ServerID: 100}) {
		t.Errorf("dumps read %+v", d)
	}
}

// TestDumpRefusals: what a server refuses it refuses with error 1236 and
// its text, as MySQL 8.0's Binlog_sender does: a file it does not have, a
// position below 4 or past the end, a position inside an event (the
// server reads the event's tail as a header), a command it does not know.
func TestDumpRefusals(t *testing.T) {
	b := testBinlog()
	end := b.End()
	mid := b.EventStart(1) + 3
	for _, tc := range []struct {
		name string
		conn func() *client.Conn
		code uint16
		text string
	}{
		{"a file it does not have", func() *client.Conn { return b.Dial(t, "binlog.000002", 4) }, 1236, ErrNoFile},
		{"position 0", func() *client.Conn { return b.Dial(t, File, 0) }, 1236, ErrBelow4},
		{"past the end", func() *client.Conn { return b.Dial(t, File, end+1) }, 1236, ErrPastEnd},
		{"inside an event", func() *client.Conn { return b.Dial(t, File, mid) }, 1236,
			fmt.Sprintf("; the first event '%s' at %d, the last event read from './%s' at %d", File, mid, File, mid)},
		{"not a dump command", func() *client.Conn { return b.DialCommand(t, []byte{0, 0, 0, 0, mysql.COM_QUERY, 'x'}) }, 1047, "Unknown command"},
		{"a truncated dump command", func() *client.Conn { return b.DialCommand(t, []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP, 4, 0}) }, 1236, "Malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, err := read(t, tc.conn(), 100)
			var me *mysql.MyError
			if !asMyError(err, &me) || me.Code != tc.code || !strings.Contains(me.Message, tc.text) {
				t.Fatalf("got %s then %v, want error %d %q", describe(events), err, tc.code, tc.text)
			}
			if tc.name == "inside an event" {
				// The file was opened: the rotate and the format
				// description went out before the misread.
				read := strings.HasPrefix(me.Message, ErrBogus) || strings.HasPrefix(me.Message, ErrTruncated) || strings.HasPrefix(me.Message, "log event entry exceeded")
				if len(events) != 2 || !read {
					t.Errorf("got %s then %q", describe(events), me.Message)
				}
			} else if len(events) != 0 {
				t.Errorf("events before the refusal: %s", describe(events))
			}
		})
	}
	// A position at the end is not refused: the rotate, the format
	// description, then nothing until the binlog grows.
	events, err := read(t, b.Dial(t, File, end), 2)
	if err != nil || describe(events) != fmt.Sprintf("RotateEvent@0(%s:%d ts=0 flags=0x20) FormatDescriptionEvent@0", File, end) {
		t.Errorf("at the end: %s, %v", describe(events), err)
	}
}

func asMyError(err error, me **mysql.MyError) bool {
	e, ok := err.(*mysql.MyError)
	*me = e
	return ok
}

// TestGTIDDump: COM_BINLOG_DUMP_GTID gets the rotate and the format
// description, then the transactions the replica's set lacks, a heartbeat
// at the end of those it skipped; a set that lacks some of gtid_purged is
// refused with the server's text naming the missing transactions.
func TestGTIDDump(t *testing.T) {
	b := testBinlog()
	c := b.DialGTID(t, sid.String()+":1")
	events, err := read(t, c, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("RotateEvent@0(%s:4 ts=0 flags=0x20) FormatDescriptionEvent@%d HeartbeatEvent@%d GTIDEvent@%d", File, b.EventEnd(0), b.EventEnd(3), b.EventEnd(4))
	if got := describe(events); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if g, ok := events[3].Event.(*replication.GTIDEvent); !ok || g.GNO != 2 {
		t.Errorf("the first transaction sent is %+v, want sid:2", events[3].Event)
	}
	if d := b.Dumps(); len(d) != 1 || !d[0].GTID || d[0].GTIDs != sid.String()+":1" || d[0].Pos != 4 || d[0].File != "" {
		t.Errorf("dumps read %+v", d)
	}

	b.SetPurged(t, sid.String()+":1-2")
	events, err = read(t, b.DialGTID(t, sid.String()+":1"), 10)
	var me *mysql.MyError
	if !asMyError(err, &me) || me.Code != 1236 || !strings.HasPrefix(me.Message, "Cannot replicate because the source purged required binary logs.") ||
		!strings.Contains(me.Message, fmt.Sprintf("The GTID set sent by the replica is '%s:1', and the missing transactions are '%s:2'", sid, sid)) || len(events) != 0 {
		t.Fatalf("got %s then %v, want the purged refusal", describe(events), err)
	}
	// A set with all of gtid_purged is served.
	if _, err := read(t, b.DialGTID(t, sid.String()+":1-2"), 2); err != nil {
		t.Fatal(err)
	}
}

// TestNonBlockingDumpEnds: BINLOG_DUMP_NON_BLOCK, or server id 0, ends
// the dump with EOF at the end of the binlog.
func TestNonBlockingDumpEnds(t *testing.T) {
	b := testBinlog()
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP}
	cmd = binary.LittleEndian.AppendUint32(cmd, 4)
	cmd = binary.LittleEndian.AppendUint16(cmd, dumpNonBlock)
	cmd = binary.LittleEndian.AppendUint32(cmd, 100)
	events, err := read(t, b.DialCommand(t, append(cmd, File...)), 100)
	if err != nil || len(events) != 8 {
		t.Fatalf("got %s, %v; want the rotate and the 7 events, then EOF", describe(events), err)
	}
}
