package column

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/mysqldecimal"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestDec holds values of every width, the extremes of their precision
// among them, and reads them back: as text, as stored bytes, after a
// truncation, scattered, and encoded as Native data.
func TestDec(t *testing.T) {
	for _, c := range []struct {
		t    schema.CHType
		vals []string
	}{
		{schema.CHType{Kind: schema.CHDecimal, Precision: 9, Scale: 2}, []string{"0.00", "-0.01", "9999999.99", "-9999999.99", "1234.50"}},
		{schema.CHType{Kind: schema.CHDecimal, Precision: 18, Scale: 0}, []string{"999999999999999999", "-999999999999999999", "0", "42"}},
		{schema.CHType{Kind: schema.CHDecimal, Precision: 38, Scale: 10}, []string{"9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999", "0.0000000001", "-1.0000000000"}},
		{schema.CHType{Kind: schema.CHDecimal, Precision: 76, Scale: 30}, []string{"9999999999999999999999999999999999999999999999.999999999999999999999999999999", "-0.000000000000000000000000000001", "0.000000000000000000000000000000"}},
	} {
		b := NewDec(Nulls{Nullable: true}, c.t)
		for _, v := range c.vals {
			sv, err := mysqldecimal.Parse([]byte(v), c.t.Scale)
			if err != nil {
				t.Fatalf("%s %s: %v", c.t, v, err)
			}
			b.Add(sv)
		}
		b.AppendNull()
		if b.Len() != len(c.vals)+1 || !b.IsNull[len(c.vals)] || b.Value(len(c.vals)) != ([4]uint64{}) {
			t.Fatalf("%s: %d values, NULL %v %v", c.t, b.Len(), b.IsNull, b.Value(len(c.vals)))
		}
		for i, v := range c.vals {
			if got := string(b.AppendText(nil, i)); got != v {
				t.Errorf("%s: value %d reads %s, want %s", c.t, i, got, v)
			}
			want, _ := mysqldecimal.Parse([]byte(v), c.t.Scale)
			if b.Value(i) != want {
				t.Errorf("%s %s: value %v, want %v", c.t, v, b.Value(i), want)
			}
			stored := decimalBytes(want, b.Width)
			if !bytes.Equal(b.Data[i*b.Width:(i+1)*b.Width], stored[:b.Width]) {
				t.Errorf("%s %s: stored % x, want % x", c.t, v, b.Data[i*b.Width:(i+1)*b.Width], stored[:b.Width])
			}
		}
		// The Native data is the values' bytes after the null map.
		e := chnative.NewCapture()
		if err := Native(b, schema.CHType{Kind: schema.CHDecimal, Precision: c.t.Precision, Scale: c.t.Scale, Nullable: true})(e, nil); err != nil {
			t.Fatal(err)
		}
		if got := e.Captured(); !bytes.Equal(got[b.Len():], b.Data) || got[b.Len()-1] != 1 {
			t.Errorf("%s: Native data % x, want the null map then % x", c.t, got, b.Data)
		}
		if Native(b, schema.CHType{Kind: schema.CHDecimal, Precision: c.t.Precision, Scale: c.t.Scale + 1}) != nil {
			t.Errorf("%s: encoded as a Decimal of another scale", c.t)
		}
		// Scattered to two parts, every other value.
		to := make([]uint32, b.Len())
		for i := range to {
			to[i] = uint32(i % 2)
		}
		parts := []Buf{NewDec(Nulls{Nullable: true}, c.t), NewDec(Nulls{Nullable: true}, c.t)}
		b.Scatter(to, parts)
		for i := range b.Len() {
			p := parts[i%2].(*Dec)
			if p.Value(i/2) != b.Value(i) || p.IsNull[i/2] != b.IsNull[i] {
				t.Errorf("%s: value %d scattered as %v", c.t, i, p.Value(i/2))
			}
		}
		b.Truncate(1)
		if b.Len() != 1 || len(b.IsNull) != 1 || string(b.AppendText(nil, 0)) != c.vals[0] {
			t.Errorf("%s: truncated to %d values, %s", c.t, b.Len(), b.AppendText(nil, 0))
		}
	}
	if NewDec(Nulls{}, schema.CHType{Kind: schema.CHDecimal, Precision: 77}) != nil {
		t.Error("a Decimal(77) column")
	}
}

// TestDecAddInt64 sign-extends into every width.
func TestDecAddInt64(t *testing.T) {
	for _, p := range []int{9, 18, 38, 76} {
		b := NewDec(Nulls{}, schema.CHType{Kind: schema.CHDecimal, Precision: p, Scale: 0})
		for _, v := range []int64{0, 1, -1, 999999999, -999999999} {
			b.AddInt64(v)
			want, _ := mysqldecimal.Parse([]byte(strconv.FormatInt(v, 10)), 0)
			if got := b.Value(b.Len() - 1); got != want {
				t.Errorf("Decimal(%d) %d: %v, want %v", p, v, got, want)
			}
		}
	}
}

// decimalBytes is a scaled decimal as stored: width little-endian bytes,
// zeros after them.
func decimalBytes(v [4]uint64, width int) (b [32]byte) {
	for l, limb := range v {
		binary.LittleEndian.PutUint64(b[8*l:], limb)
	}
	clear(b[width:])
	return b
}
