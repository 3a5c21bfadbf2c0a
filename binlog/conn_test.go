package binlog

import (
	"bytes"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
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
