package replicator

import "testing"

// TestVersionsOrder: a later event, or a later row of one event, always
// has a larger version; file rotation included.
func TestVersionsOrder(t *testing.T) {
	cases := [][3]int{{1, 4, 0}, {1, 4, 1}, {1, 4, 4095}, {1, 5, 0}, {1, 1 << 31, 0}, {1, 1<<32 - 1, 4095}, {2, 4, 0}, {1<<20 - 1, 4, 0}}
	for i := 1; i < len(cases); i++ {
		a, b := cases[i-1], cases[i]
		va, vb := version(uint32(a[0]), uint32(a[1]), a[2]), version(uint32(b[0]), uint32(b[1]), b[2])
		if va >= vb {
			t.Errorf("version%v = %d is not below version%v = %d", a, va, b, vb)
		}
	}
	if version(1, 4, 5000) != version(1, 4, 4095) {
		t.Error("rows past 4095 must share the last version of their event")
	}
}
