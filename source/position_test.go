package source

import "testing"

func TestPositionOrder(t *testing.T) {
	pos := func(f string, p uint32) Position { return Position{File: f, Pos: p} }
	if !pos("binlog.000009", 900).Before(pos("binlog.000010", 4)) || pos("binlog.000010", 4).Before(pos("binlog.000009", 900)) ||
		pos("binlog.000010", 4).Before(pos("binlog.000010", 4)) || !pos("binlog.000010", 4).Before(pos("binlog.000010", 5)) {
		t.Error("positions misordered")
	}
	if _, err := FileIndex("binlog.000123"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"binlog", "binlog.", "binlog.x1", "binlog.99999999"} {
		if _, err := FileIndex(bad); err == nil {
			t.Errorf("FileIndex(%q) accepted", bad)
		}
	}
}
