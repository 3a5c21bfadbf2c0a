package sink

import (
	"context"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestBadValueStopsWriter: a value the rows decoder could not produce (a
// partial JSON update it cannot apply: binlog.RowsDecoder leaves a
// block.BadValue in the after image) stops the writer with the binlog
// position of the rows event, the table, the column and the decoder's
// message, and writes nothing of the row.
func TestBadValueStopsWriter(t *testing.T) {
	tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0},
		Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "j", "json", true)}}
	target, err := schema.Map(tb, "d", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &Writer{name: schema.TableName{Database: "d", Table: "t"}, source: tb, target: target, block: block.NewBlock(target)}
	msg := "a partial JSON update binlog2ch cannot apply: ... run `binlog2ch fullsync -recreate -checkpoint`"
	err = w.handle(context.Background(), Message{Schema: tb, Op: source.OpUpdate, Version: source.RowVersion(3, 1234, 0), Versions: source.VersionSlots,
		At:   source.Position{File: "binlog.000003", Pos: 1000},
		Rows: [][]any{{int32(1), `{"a":1}`}, {int32(1), &block.BadValue{Msg: msg}}}})
	if want := "binlog binlog.000003:1000: d.t.j (json): " + msg; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if n := w.block.Rows(); n != 0 {
		t.Errorf("%d rows in the block", n)
	}
	if err != nil && strings.Contains(err.Error(), "value ") {
		t.Errorf("the stand-in shown as a value: %v", err)
	}
}
