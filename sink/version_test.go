package sink

import "testing"

// TestVersionsOrder: a later event, or a later row of one event, always
// has a larger version; file rotation included.
func TestVersionsOrder(t *testing.T) {
	cases := [][3]int{{1, 4, 0}, {1, 4, 1}, {1, 4, 4095}, {1, 5, 0}, {1, 1 << 31, 0}, {1, 1<<32 - 1, 4095}, {2, 4, 0}, {1<<20 - 1, 4, 0}}
	for i := 1; i < len(cases); i++ {
		a, b := cases[i-1], cases[i]
		va, vb := Version(uint32(a[0]), uint32(a[1]), a[2]), Version(uint32(b[0]), uint32(b[1]), b[2])
		if va >= vb {
			t.Errorf("version%v = %d is not below version%v = %d", a, va, b, vb)
		}
	}
	if Version(1, 4, 5000) != Version(1, 4, 4095) {
		t.Error("rows past 4095 must share the last version of their event")
	}
}

// TestSnapshotVersion: a copied row's version is at or above every event
// ending at or before the recorded position and below every later one,
// in the same binlog file or a later one.
func TestSnapshotVersion(t *testing.T) {
	const file, pos = 3, 1000
	v := Version(file, pos, MaxVersionRow)
	for _, before := range []uint64{Version(file, pos, 0), Version(file, pos, 7), Version(file, pos-1, MaxVersionRow), Version(file-1, 1<<32-1, MaxVersionRow)} {
		if before > v {
			t.Errorf("event at or before the position has version %x above the copy's %x", before, v)
		}
	}
	for _, after := range []uint64{Version(file, pos+1, 0), Version(file+1, 4, 0)} {
		if after <= v {
			t.Errorf("event after the position has version %x, not above the copy's %x", after, v)
		}
	}
}
