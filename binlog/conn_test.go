package binlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestMySQLGTIDDumpCommand: COM_BINLOG_DUMP_GTID as MySQL reads it
// (sql/rpl_binlog_sender, com_binlog_dump_gtid): command, flags (2),
// server id (4), name length (4), name, position (8), data size (4), the
// encoded set.
func TestMySQLGTIDDumpCommand(t *testing.T) {
	set, err := mysql.ParseMysqlGTIDSet("5ccc1033-44a8-11ea-bd59-0242ac190003:1-119")
	if err != nil {
		t.Fatal(err)
	}
	enc := set.Encode()
	got := mysqlGTIDDump(4242, enc)
	want := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP_GTID, 0, 0, 0x92, 0x10, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, byte(len(enc)), 0, 0, 0}
	want = append(want, enc...)
	if !bytes.Equal(got, want) {
		t.Errorf("got  %x\nwant %x", got, want)
	}
	back, err := mysql.DecodeMysqlGTIDSet(enc)
	if err != nil || back.String() != set.String() {
		t.Errorf("the encoded set decodes as %v, %v", back, err)
	}
}

// TestDumpCommandsAsAServerReadsThem: the dump commands binlog2ch sends
// (dumpCommand, mysqlGTIDDump) read by binlogtest's server as a MySQL
// server reads them, file, position, server id and set intact, and the
// server refuses a position it has no event at.
func TestDumpCommandsAsAServerReadsThem(t *testing.T) {
	b := binlogtest.NewBinlog()
	b.Add(replication.GTID_EVENT, binlogtest.GTID(1))
	b.Add(replication.XID_EVENT, binlogtest.XID(1))
	set, err := mysql.ParseMysqlGTIDSet("3e3e3e3e-3e3e-3e3e-3e3e-3e3e3e3e3e3e:1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Flavor: mysql.MySQLFlavor, Log: slog.New(slog.DiscardHandler)}
	for _, cmd := range [][]byte{dumpCommand(4242, binlogtest.File, b.EventStart(1)), mysqlGTIDDump(4242, set.Encode())} {
		d := Read(b.DialCommand(t, cmd), cfg)
		for i := 0; i < 2; i++ { // the rotate and the format description
			if _, err := d.GetEvent(context.Background()); err != nil {
				t.Fatalf("command %x: %v", cmd, err)
			}
		}
		d.Close()
	}
	want := []binlogtest.Dump{{File: binlogtest.File, Pos: uint64(b.EventStart(1)), ServerID: 4242},
		{GTID: true, Pos: 4, ServerID: 4242, GTIDs: set.String()}}
	if got := b.Dumps(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the server read %+v, want %+v", got, want)
	}
	d := Read(b.DialCommand(t, dumpCommand(4242, binlogtest.File, b.End()+10)), cfg)
	defer d.Close()
	_, err = d.GetEvent(context.Background())
	var me *mysql.MyError
	if !errors.As(err, &me) || me.Code != mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG || me.Message != binlogtest.ErrPastEnd {
		t.Fatalf("a dump past the end: %v, want 1236 %q", err, binlogtest.ErrPastEnd)
	}
}

// TestSameServerID: the servers' errors for a replica dropped for another
// with its server id, as MariaDB 10.11 sent them (TestSameServerID in
// replicator reads them from the server) and as MySQL's
// rpl_binlog_sender.cc words them, and what is not one.
func TestSameServerID(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{mysql.NewError(4052, "A slave with the same server_uuid/server_id as this slave has connected to the master"), true},
		{fmt.Errorf("read: %w", mysql.NewError(4052, "A slave with the same server_uuid/server_id is already connected; the first event 'binlog.000001' at 325, the last event read from 'binlog.000001' at 256, the last byte read from 'binlog.000001' at 325.")), true},
		{mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "A replica with the same server_uuid/server_id as this replica has connected to the source; the first event 'binlog.000002' at 4, the last event read from './binlog.000002' at 126"), true},
		{mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "Could not find first log file name in binary log index file"), false},
		{errors.New("A slave with the same server_uuid/server_id as this slave has connected to the master"), false},
		{nil, false},
	} {
		if got := SameServerID(c.err); got != c.want {
			t.Errorf("SameServerID(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
