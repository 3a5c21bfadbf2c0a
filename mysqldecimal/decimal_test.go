package mysqldecimal

import (
	"testing"

	"github.com/shopspring/decimal"
)

// TestBinary uses the example of MySQL's documentation of the binary
// DECIMAL format (DECIMAL(14,4)): each value decoded both ways, scaled up,
// and printed; a group larger than its digits is refused.
func TestBinary(t *testing.T) {
	for _, c := range []struct {
		p           []byte
		prec, scale int
		want        string
	}{
		{[]byte{0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2}, 14, 4, "1234567890.1234"},
		{[]byte{0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D}, 14, 4, "-1234567890.1234"},
		{[]byte{0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, 14, 4, "0.0000"},
		{[]byte{0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 14, 4, "0.0000"}, // a negative zero
		{[]byte{0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05}, 14, 4, "0.0005"},
		{[]byte{0x80, 0x01}, 3, 0, "1"},
	} {
		if n := Size(c.prec, c.scale); n != len(c.p) {
			t.Errorf("Size(%d,%d) = %d, want %d", c.prec, c.scale, n, len(c.p))
		}
		for _, up := range []int{0, 2} {
			d, err := NewBinary(c.prec, c.scale, up)
			if err != nil {
				t.Fatal(err)
			}
			v, err := d.Scaled(c.p)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := Parse([]byte(c.want), c.scale+up)
			if v != want {
				t.Errorf("DECIMAL(%d,%d) % X up %d: %v, want %v", c.prec, c.scale, c.p, up, v, want)
			}
			if s, err := d.Scaled64(c.p); err != nil || s != int64(want[0]) {
				t.Errorf("DECIMAL(%d,%d) % X up %d: Scaled64 %d, %v", c.prec, c.scale, c.p, up, s, err)
			}
			if up == 0 {
				if got := string(AppendScaled(nil, v, c.scale)); got != c.want {
					t.Errorf("DECIMAL(%d,%d) % X: printed %s, want %s", c.prec, c.scale, c.p, got, c.want)
				}
			}
		}
	}
	d, _ := NewBinary(5, 2, 0)
	if _, err := d.Scaled([]byte{0x80, 0x01, 100}); err != ErrCorrupt {
		t.Errorf("a fraction group of 100 in DECIMAL(5,2): %v", err)
	}
	if _, err := NewBinary(66, 0, 0); err == nil {
		t.Error("DECIMAL(66) taken")
	}
}

func TestParse(t *testing.T) {
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
		got, err := Parse([]byte(c.in), c.scale)
		if err != nil || got != c.want {
			t.Errorf("%q scale %d: got %v %v, want %v", c.in, c.scale, got, err, c.want)
		}
	}
	for _, bad := range []string{"1.234", "1e5", "--1", "1.2.3"} {
		if _, err := Parse([]byte(bad), 2); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range []struct {
		s             string
		intDigits, sc int
	}{
		{"9999999.99", 7, 2}, {"-9999999.99", 7, 2}, {"0.01", 0, 2}, {"1", 18, 0}, {"000123.4", 3, 1},
		{"1.", 5, 2}, {".5", 5, 2}, {"-", 5, 2}, {"", 5, 2}, {"1e5", 10, 0}, {"1.2.3", 5, 5}, {"--1", 5, 0},
		{"99999999999999999999999999999999999.999999999999999999999999999999", 35, 30}, {"0", 0, 0},
		{"-0.000000000000000000000000000001", 35, 30}, {"+1", 5, 0}, {" 1", 5, 0}, {"1.5", 5, 0},
		{"-100", 2, 0}, {"123.4", 2, 1}, {"00999", 3, 0}, {"1.234", 3, 2}, {"1", 0, 0},
	} {
		f.Add(c.s, c.intDigits, c.sc)
	}
	clamp := func(n int) int { return ((n % 66) + 66) % 66 }
	f.Fuzz(func(t *testing.T, s string, intDigits, scale int) {
		intDigits, scale = clamp(intDigits), clamp(scale)
		if !Valid(s, intDigits, scale) {
			return
		}
		d, err := decimal.NewFromString(s)
		if err != nil {
			t.Fatalf("Valid(%q, %d, %d) = true, but decimal.NewFromString: %v", s, intDigits, scale, err)
		}
		// At most scale digits after the point, at most intDigits before.
		if !d.Equal(d.Truncate(int32(scale))) {
			t.Fatalf("Valid(%q, %d, %d) = true with more than %d fraction digits", s, intDigits, scale, scale)
		}
		if d.Abs().Cmp(decimal.New(1, int32(intDigits))) >= 0 {
			t.Fatalf("Valid(%q, %d, %d) = true with more than %d integer digits", s, intDigits, scale, intDigits)
		}
	})
}

// TestValidCases pins Valid on both sides of its limits;
// FuzzValid only checks what it accepts.
func TestValidCases(t *testing.T) {
	cases := []struct {
		s             string
		intDigits, sc int
		want          bool
	}{
		{"9999999.99", 7, 2, true}, {"-9999999.99", 7, 2, true}, {"10000000.00", 7, 2, false},
		{"1.999", 7, 2, false}, {"1.9", 7, 2, true}, {"1", 7, 2, true}, {"-1", 7, 2, true},
		{"0", 0, 0, true}, {"-0", 0, 0, true}, {"0.5", 0, 1, true}, {"1", 0, 0, false}, {"0.55", 0, 1, false},
		{"000000000123", 3, 0, true}, {"0001234", 3, 0, false}, {"00", 0, 0, true},
		{"12.", 5, 2, false}, {".5", 5, 2, false}, {"", 5, 2, false}, {"-", 5, 2, false}, {"--1", 5, 0, false},
		{"+1", 5, 0, false}, {" 1", 5, 0, false}, {"1 ", 5, 0, false}, {"1e5", 10, 0, false}, {"1.2.3", 5, 5, false},
		{"1.5", 5, 0, false}, {"1,5", 5, 1, false}, {"1.-5", 5, 2, false}, {"1.5a", 5, 2, false}, {"NaN", 5, 2, false},
		{"99999999999999999999999999999999999.999999999999999999999999999999", 35, 30, true},
		{"-0.000000000000000000000000000001", 35, 30, true},
	}
	for _, c := range cases {
		if got := Valid(c.s, c.intDigits, c.sc); got != c.want {
			t.Errorf("Valid(%q, %d, %d) = %v, want %v", c.s, c.intDigits, c.sc, got, c.want)
		}
	}
}
