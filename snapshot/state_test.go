package snapshot

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

func k(vals ...string) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out
}

func TestGapsAndMerge(t *testing.T) {
	if g := gaps(nil); len(g) != 1 || g[0].Lo != nil || g[0].Hi != nil {
		t.Errorf("gaps(nil) = %v, want the whole key space", g)
	}
	done := mergeAdjacent([]keyRange{{Hi: k("10")}, {Lo: k("10"), Hi: k("20")}, {Lo: k("30"), Hi: k("40")}, {Lo: k("40"), Hi: k("50")}})
	want := []keyRange{{Hi: k("20")}, {Lo: k("30"), Hi: k("50")}}
	if !reflect.DeepEqual(done, want) {
		t.Fatalf("merged %v, want %v", done, want)
	}
	if g := gaps(done); !reflect.DeepEqual(g, []keyRange{{Lo: k("20"), Hi: k("30")}, {Lo: k("50")}}) {
		t.Errorf("gaps = %v", g)
	}
	if g := gaps([]keyRange{{Lo: k("5"), Hi: k("7")}}); !reflect.DeepEqual(g, []keyRange{{Hi: k("5")}, {Lo: k("7")}}) {
		t.Errorf("gaps around one range = %v", g)
	}
	all := mergeAdjacent([]keyRange{{Hi: k("1", "a")}, {Lo: k("1", "a"), Hi: k("2", "b")}, {Lo: k("2", "b")}})
	if !covered(all) {
		t.Errorf("%v does not cover the key space", all)
	}
	if covered(done) {
		t.Errorf("%v covers the key space", done)
	}
}

func TestCopyStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if st, err := Load(dir, FullSyncFile); st != nil || err != nil {
		t.Fatalf("no file: %v, %v", st, err)
	}
	st := &State{Server: "server_id:7", Position: source.Position{File: "binlog.000003", Pos: 1234}, Tables: map[string]*TableProgress{
		"shop.t": {Key: []string{"a", "b"}, Done: []keyRange{{Hi: k("1", "\x00\xff")}}, Rows: 10, Chunks: 1},
	}}
	if err := Save(dir, FullSyncFile, st); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, FullSyncFile)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Errorf("round trip: %+v, want %+v", got, st)
	}
	if err := os.WriteFile(filepath.Join(dir, FullSyncFile), []byte("{bad"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, FullSyncFile); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt state: %v", err)
	}
}

// TestRangeConditions: composite keys are compared column by column, typed
// and cast so MySQL compares them as the column does.
func TestRangeConditions(t *testing.T) {
	tbl := &schema.Table{Database: "d", Name: "t", Columns: []schema.Column{
		{Name: "a", Kind: schema.KindInt, Unsigned: true}, {Name: "b", Kind: schema.KindChar}, {Name: "c", Kind: schema.KindDecimal, Precision: 10, Scale: 2},
	}}
	tr, err := newTableReader(tbl, []int{0, 1, 2}, func(int) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	where, args, err := tr.where(keyRange{Lo: k("1", "x", "2.50"), Hi: k("3", "y", "0.00")})
	if err != nil {
		t.Fatal(err)
	}
	wantWhere := " WHERE (`a` >= ? AND (`a` > ? OR `a` = ? AND (`b` > ? OR `b` = ? AND (`c` > CAST(? AS DECIMAL(10,2)))))) AND " +
		"(`a` <= ? AND (`a` < ? OR `a` = ? AND (`b` < ? OR `b` = ? AND (`c` <= CAST(? AS DECIMAL(10,2))))))"
	if where != wantWhere {
		t.Errorf("where:\n%s\nwant:\n%s", where, wantWhere)
	}
	wantArgs := []any{uint64(1), uint64(1), uint64(1), "x", "x", "2.50", uint64(3), uint64(3), uint64(3), "y", "y", "0.00"}
	if !reflect.DeepEqual(args, wantArgs) {
		t.Errorf("args %#v, want %#v", args, wantArgs)
	}
	if _, _, err := tr.where(keyRange{Lo: k("x", "y", "z")}); err == nil {
		t.Error("a non-numeric key value for an integer column was accepted")
	}
	if w, a, _ := tr.where(keyRange{}); w != "" || a != nil {
		t.Errorf("whole range: %q %v", w, a)
	}
}
