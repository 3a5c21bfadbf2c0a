package source

import (
	"fmt"
	"slices"
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestRowsEventFlags feeds MySQL-shaped rows events built from bytes (no
// MySQL 9.6 runs here): a DELETE as MySQL 9.6+ with SQL-layer foreign
// keys writes it (USE_SQL_FOREIGN_KEY_F: the children's rows came as
// events of their own, before it), one written with foreign_key_checks=0
// (NO_FOREIGN_KEY_CHECKS_F), and a plain one. Their flags reach the
// handler, and their rows decode on demand whether the stream left them
// raw or not.
func TestRowsEventFlags(t *testing.T) {
	for _, raw := range []bool{true, false} {
		b := binlogtest.NewBinlog()
		b.Add(replication.ANONYMOUS_GTID_EVENT, binlogtest.GTID(1))
		b.Add(replication.QUERY_EVENT, binlogtest.Query("d", "BEGIN"))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
		b.Add(replication.DELETE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd|RowsSQLForeignKeys, false, binlogtest.Image(1, "a", 1), binlogtest.Image(2, "", 2)))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t")) // each statement maps its tables
		b.Add(replication.DELETE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd|RowsNoForeignKeyChecks, false, binlogtest.Image(3, "c", 3)))
		b.Add(replication.TABLE_MAP_EVENT, binlogtest.TableMap(18, "d", "t"))
		b.Add(replication.UPDATE_ROWS_EVENTv2, binlogtest.Rows(18, binlogtest.StmtEnd, true, binlogtest.Image(4, "d", 4), binlogtest.Image(40, "d", 4)))
		_, end := b.Add(replication.XID_EVENT, binlogtest.XID(1))
		var flags []uint16
		var values [][][]any
		h := &rowsRecorder{onRows: func(r Rows) error {
			flags = append(flags, r.Flags)
			v, err := r.Values()
			if err != nil {
				return err
			}
			values = append(values, v)
			return nil
		}}
		runTo(t, raw, end, h, func(_ int, pos Position) *client.Conn { return b.Dial(t, pos.File, pos.Pos) })
		want := []uint16{binlogtest.StmtEnd | RowsSQLForeignKeys, binlogtest.StmtEnd | RowsNoForeignKeyChecks, binlogtest.StmtEnd}
		if !slices.Equal(flags, want) {
			t.Errorf("raw %v: flags %v, want %v", raw, flags, want)
		}
		got := fmt.Sprint(values)
		if wantRows := "[[[1 a 1] [2 <nil> 2]] [[3 c 3]] [[4 d 4] [40 d 4]]]"; got != wantRows {
			t.Errorf("raw %v: rows %s, want %s", raw, got, wantRows)
		}
	}
}
