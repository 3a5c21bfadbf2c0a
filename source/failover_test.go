package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// mysqlGTIDBody is a MySQL GTID_EVENT's body: flags, sid, gno, logical
// timestamps.
func mysqlGTIDBody(sid uuid.UUID, gno int64) []byte {
	b := append([]byte{1}, sid[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(gno))
	b = append(b, 2)
	b = binary.LittleEndian.AppendUint64(b, 0)
	return binary.LittleEndian.AppendUint64(b, 1)
}

// commitRecorder is a rowsRecorder that keeps whole commits.
type commitRecorder struct {
	rowsRecorder
	full []Commit
}

func (h *commitRecorder) Commit(c Commit) {
	h.full = append(h.full, c)
	h.rowsRecorder.Commit(c)
}

// TestMySQLFailoverByGTID: a MySQL stream begun on a new history from a
// checkpoint's GTID set asks the server for COM_BINLOG_DUMP_GTID with that
// set, and reads the new server's binlog (a compressed transaction, then a
// plain one) with versions from the old history's ceiling and commits
// carrying the executed set, as the checkpoint saves it.
func TestMySQLFailoverByGTID(t *testing.T) {
	old := uuid.MustParse("3e11fa47-71ca-11e1-9e33-c80aa9429562")
	promoted := uuid.MustParse("5ccc1033-44a8-11ea-bd59-0242ac190003")
	b := binlogtest.NewBinlog()                           // binlog.000003 of the promoted replica
	b.Add(replication.GTID_EVENT, mysqlGTIDBody(old, 11)) // replicated from the old primary
	pStart, pEnd := b.Add(replication.TRANSACTION_PAYLOAD_EVENT, binlogtest.Payload(t, binlogtest.CompressZSTD, testTransaction(0)...))
	b.Add(replication.GTID_EVENT, mysqlGTIDBody(promoted, 1)) // its own, after the promotion
	b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
	b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
	_, rowsEnd := b.Add(replication.WRITE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, false, binlogtest.Image(50, "x", 0)))
	_, last := b.Add(replication.XID_EVENT, binlogtest.XID(5))

	s := testStream(t)
	s.srv = Server{Flavor: mysql.MySQLFlavor, ID: "uuid:" + promoted.String(), RawRows: true}
	var asked []string
	s.testDial = func(pos Position, gtids *gtid.Set) (*client.Conn, error) {
		if gtids == nil {
			asked = append(asked, "position "+pos.String())
			return b.Dial(t, pos.File, pos.Pos), nil
		}
		asked = append(asked, "gtids "+gtids.String())
		return b.DialGTID(t, gtids.String()), nil
	}
	h := &commitRecorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h.stop, h.cancel = Position{File: binlogtest.File, Pos: last}, cancel
	const ceiling = 40
	start := Start{Position: Position{File: "binlog.000009", Pos: 7716}, GTID: old.String() + ":1-10", ByGTID: true, Ceiling: ceiling}
	if err := s.Run(ctx, start, h); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("no commit at %d; commits %v, reconnects %q", last, h.commits, h.downs)
	}
	if len(asked) != 1 || asked[0] != "gtids "+old.String()+":1-10" {
		t.Errorf("connections %q, want one by the checkpoint's GTIDs", asked)
	}
	if d := b.Dumps(); len(d) != 1 || !d[0].GTID || d[0].GTIDs != old.String()+":1-10" {
		t.Errorf("the server was asked %+v, want one COM_BINLOG_DUMP_GTID from %s:1-10", d, old)
	}
	// The header's boundaries are not offered: read by GTID, the file's
	// start may be before the checkpoint's transactions.
	var got []string
	for _, c := range h.full {
		got = append(got, fmt.Sprintf("%s %s F=%d offset=%d", c.Position, c.GTID, mustF(c.File, c.Offset), c.Offset))
	}
	want := []string{
		fmt.Sprintf("%s:%d %s:1-11 F=40 offset=37", binlogtest.File, pEnd, old),
		fmt.Sprintf("%s:%d %s:1-11,%s:1 F=40 offset=37", binlogtest.File, last, old, promoted),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commits\n%q\nwant\n%q", got, want)
	}
	for _, r := range h.rows {
		if f := uint32(r.version >> 44); f != ceiling {
			t.Errorf("row %d has F %d, want the ceiling %d", r.id, f, ceiling)
		}
	}
	if n := len(h.rows); n < 2 || h.rows[n-1].version != RowVersion(ceiling, rowsEnd, 0) || h.rows[0].version <= RowVersion(ceiling, pStart, 0) {
		t.Errorf("rows %v", h.rows)
	}
	if s.touched["d.t"][old.String()] != 11 || s.touched["d.t"][promoted.String()] != 1 {
		t.Errorf("touched %v", s.touched)
	}
}

func mustF(idx uint32, off int64) uint32 {
	f, _ := VersionFile(idx, off)
	return f
}
