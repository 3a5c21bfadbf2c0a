package source

import "testing"

// TestVersionsOrder: a later event, or a later row of one event, always
// has a larger version; file rotation included.
func TestVersionsOrder(t *testing.T) {
	cases := [][3]int{{1, 4, 0}, {1, 4, 1}, {1, 4, 4095}, {1, 5, 0}, {1, 1 << 31, 0}, {1, 1<<32 - 1, 4095}, {2, 4, 0}, {1<<20 - 1, 4, 0}}
	for i := 1; i < len(cases); i++ {
		a, b := cases[i-1], cases[i]
		va, vb := RowVersion(uint32(a[0]), uint32(a[1]), a[2]), RowVersion(uint32(b[0]), uint32(b[1]), b[2])
		if va >= vb {
			t.Errorf("version%v = %d is not below version%v = %d", a, va, b, vb)
		}
	}
	if RowVersion(1, 4, 5000) != RowVersion(1, 4, 4095) {
		t.Error("rows past 4095 must share the last version of their event")
	}
}

// TestSnapshotVersion: a copied row's version is at or above every event
// ending at or before the recorded position and below every later one,
// in the same binlog file or a later one.
func TestSnapshotVersion(t *testing.T) {
	const file, pos = 3, 1000
	v := RowVersion(file, pos, MaxVersionRow)
	for _, before := range []uint64{RowVersion(file, pos, 0), RowVersion(file, pos, 7), RowVersion(file, pos-1, MaxVersionRow), RowVersion(file-1, 1<<32-1, MaxVersionRow)} {
		if before > v {
			t.Errorf("event at or before the position has version %x above the copy's %x", before, v)
		}
	}
	for _, after := range []uint64{RowVersion(file, pos+1, 0), RowVersion(file+1, 4, 0)} {
		if after <= v {
			t.Errorf("event after the position has version %x, not above the copy's %x", after, v)
		}
	}
}

// TestVersionFile: an offset moves F; one outside 20 bits is refused.
func TestVersionFile(t *testing.T) {
	for _, c := range []struct {
		idx  uint32
		off  int64
		want uint32
		ok   bool
	}{{5, 0, 5, true}, {5, 100, 105, true}, {500, -470, 30, true}, {5, -6, 0, false}, {MaxFileIndex, 1, 0, false}} {
		f, ok := VersionFile(c.idx, c.off)
		if ok != c.ok || ok && f != c.want {
			t.Errorf("VersionFile(%d, %d) = %d, %v; want %d, %v", c.idx, c.off, f, ok, c.want, c.ok)
		}
	}
}
