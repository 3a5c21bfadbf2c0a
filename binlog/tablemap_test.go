package binlog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/schema"
)

func TestTableFromMap(t *testing.T) {
	tb, err := TableFromMap(binlogtest.MariaDBTableMap(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type col struct {
		kind     schema.MySQLKind
		unsigned bool
		nullable bool
	}
	want := []col{
		{schema.KindInt, true, false}, {schema.KindChar, false, false}, {schema.KindBinary, false, true},
		{schema.KindEnum, false, true}, {schema.KindDecimal, false, true}, {schema.KindDateTime, false, true}, {schema.KindBlob, false, true},
	}
	for i, w := range want {
		c := tb.Columns[i]
		if (col{c.Kind, c.Unsigned, c.Nullable}) != w {
			t.Errorf("column %s: kind %v unsigned %v nullable %v, want %+v", c.Name, c.Kind, c.Unsigned, c.Nullable, w)
		}
	}
	if c := tb.Columns[2]; c.Length != 4 || c.Type != "binary(4)" {
		t.Errorf("BINARY(4): length %d type %s", c.Length, c.Type)
	}
	if c := tb.Columns[3]; !reflect.DeepEqual(c.Labels, []string{"x", "y"}) {
		t.Errorf("ENUM labels %q", c.Labels)
	}
	if c := tb.Columns[4]; c.Precision != 10 || c.Scale != 3 {
		t.Errorf("DECIMAL(10,3): %d,%d", c.Precision, c.Scale)
	}
	if c := tb.Columns[5]; c.Fsp != 3 || c.Type != "datetime(3)" {
		t.Errorf("DATETIME(3): fsp %d type %s", c.Fsp, c.Type)
	}
	if !reflect.DeepEqual(tb.PrimaryKey, []int{1, 0}) {
		t.Errorf("primary key %v", tb.PrimaryKey)
	}
	for i := range tb.Columns {
		if !block.RawDecodable(tb.Columns[i].BinlogType, tb.Columns[i].BinlogMeta) {
			t.Errorf("column %s not decodable from binlog bytes", tb.Columns[i].Name)
		}
	}
}

func TestTableFromMapNeedsColumnNames(t *testing.T) {
	e := binlogtest.MariaDBTableMap()
	e.ColumnName = nil
	if _, err := TableFromMap(e, nil); err == nil || !strings.Contains(err.Error(), "binlog_row_metadata was not FULL") {
		t.Fatalf("got %v", err)
	}
}

func TestEnrichKeepsBinlogTypes(t *testing.T) {
	binlog, err := TableFromMap(binlogtest.MariaDBTableMap(), nil)
	if err != nil {
		t.Fatal(err)
	}
	live := &schema.Table{Database: "d", Name: "t", Columns: append([]schema.Column(nil), binlog.Columns...), UniqueKey: []int{2}}
	for i := range live.Columns {
		live.Columns[i].BinlogType, live.Columns[i].BinlogMeta = 0, 0
	}
	got := Enrich(binlog, live)
	if !reflect.DeepEqual(got.UniqueKey, []int{2}) || got.Columns[4].BinlogType != 246 || !reflect.DeepEqual(got.PrimaryKey, []int{1, 0}) {
		t.Errorf("Enrich lost something: %+v", got)
	}
	live.Columns[1].Name = "renamed"
	if got := Enrich(binlog, live); got != binlog {
		t.Error("a live schema with other columns must not be used")
	}
}

func TestSameTableMap(t *testing.T) {
	a, b := binlogtest.MariaDBTableMap(), binlogtest.MariaDBTableMap()
	if !SameTableMap(a, b) {
		t.Fatal("equal table maps differ")
	}
	b.ColumnName[3] = []byte("renamed")
	if SameTableMap(a, b) {
		t.Error("a renamed column went unnoticed")
	}
	b = binlogtest.MariaDBTableMap()
	b.EnumStrValue[0][1] = []byte("z")
	if SameTableMap(a, b) {
		t.Error("a changed ENUM label went unnoticed")
	}
}
