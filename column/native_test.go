package column

import (
	"testing"
)

func TestScaledDecimal(t *testing.T) {
	for _, c := range []struct {
		in    string
		scale int
		want  [4]uint64
	}{
		{"0", 2, [4]uint64{}},
		{"", 2, [4]uint64{}},
		{"-0.01", 2, [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}},
		{"1.5", 3, [4]uint64{1500}},
		{"18446744073709551616", 0, [4]uint64{0, 1}},
		{"-18446744073709551616", 0, [4]uint64{0, ^uint64(0), ^uint64(0), ^uint64(0)}},
	} {
		got, err := scaledDecimal([]byte(c.in), c.scale)
		if err != nil || got != c.want {
			t.Errorf("%q scale %d: got %v %v, want %v", c.in, c.scale, got, err, c.want)
		}
	}
	for _, bad := range []string{"1.234", "1e5", "--1", "1.2.3"} {
		if _, err := scaledDecimal([]byte(bad), 2); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
