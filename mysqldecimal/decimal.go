// Package mysqldecimal reads MySQL's DECIMAL values: the binary format of
// row images (sql/decimal.c's decimal2bin: groups of nine digits in four
// bytes, big-endian, the sign in the first bit, a negative value's bits
// flipped) decoded into scaled integers or printed as MySQL prints them,
// and DECIMAL text checked and parsed. Scaled integers are the value times
// 10^scale, 256-bit two's complement, least significant 64-bit limb first:
// what ClickHouse's Decimal stores. It must not know ClickHouse's types or
// hold any state.
package mysqldecimal

import (
	"errors"
	"fmt"
	"math/bits"
)

// dig2bytes is the bytes of a group of i digits.
var dig2bytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// pow10 is 10^i for i up to 19.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// MaxPrecision is MySQL's largest DECIMAL precision.
const MaxPrecision = 65

// Size is the bytes of a binary DECIMAL(precision, scale).
func Size(precision, scale int) int {
	intg, frac := precision-scale, scale
	return intg/9*4 + dig2bytes[intg%9] + frac/9*4 + dig2bytes[frac%9]
}

// ErrCorrupt is a binary value with a group larger than its digits allow.
var ErrCorrupt = errors.New("a binary DECIMAL with a group of digits larger than its digits allow (a corrupt value)")

// Binary decodes the binary values of one DECIMAL(precision, scale) into
// scaled integers of a scale at least as large.
type Binary struct {
	groups [16]int8 // digits of each group, in order
	n      int      // groups
	size   int
	up     int  // the target scale's extra digits
	narrow bool // the scaled value fits 63 bits
}

// NewBinary is the decoder of DECIMAL(precision, scale) values into
// integers scaled by 10^(scale+up).
func NewBinary(precision, scale, up int) (*Binary, error) {
	if precision < 1 || precision > MaxPrecision || scale < 0 || scale > precision || up < 0 || precision+up > 76 {
		return nil, fmt.Errorf("no DECIMAL(%d,%d) scaled up by %d digits", precision, scale, up)
	}
	d := &Binary{size: Size(precision, scale), up: up, narrow: precision+up <= 18}
	// A partial group of intg%9 digits, the whole ones of nine, then the
	// fraction's, its partial group last.
	add := func(digits int) {
		d.groups[d.n] = int8(digits)
		d.n++
	}
	intg, frac := precision-scale, scale
	if intg%9 > 0 {
		add(intg % 9)
	}
	for range intg / 9 {
		add(9)
	}
	for range frac / 9 {
		add(9)
	}
	if frac%9 > 0 {
		add(frac % 9)
	}
	return d, nil
}

// Size is the bytes of a value.
func (d *Binary) Size() int { return d.size }

// Narrow reports whether the values fit Scaled64.
func (d *Binary) Narrow() bool { return d.narrow }

// undo copies a value's bytes with the sign encoding undone.
func (d *Binary) undo(p []byte) (b [32]byte, neg bool) {
	copy(b[:], p[:d.size])
	neg = b[0]&0x80 == 0
	if neg {
		for i := range d.size {
			b[i] = ^b[i]
		}
	}
	b[0] ^= 0x80
	return b, neg
}

// Scaled64 decodes the value at the start of p (at least Size bytes) when
// the decoder is Narrow.
func (d *Binary) Scaled64(p []byte) (int64, error) {
	b, neg := d.undo(p)
	var acc uint64
	pos := 0
	for _, g := range d.groups[:d.n] {
		n := dig2bytes[g]
		v := beUint(b[pos : pos+n])
		if v >= pow10[g] {
			return 0, ErrCorrupt
		}
		pos += n
		acc = acc*pow10[g] + v
	}
	acc *= pow10[d.up]
	if neg {
		return -int64(acc), nil
	}
	return int64(acc), nil
}

// Scaled decodes the value at the start of p (at least Size bytes).
func (d *Binary) Scaled(p []byte) ([4]uint64, error) {
	b, neg := d.undo(p)
	var v [4]uint64
	pos := 0
	for _, g := range d.groups[:d.n] {
		n := dig2bytes[g]
		x := beUint(b[pos : pos+n])
		if x >= pow10[g] {
			return v, ErrCorrupt
		}
		pos += n
		mulAdd(&v, pow10[g], x)
	}
	for range d.up {
		mulAdd(&v, 10, 0)
	}
	if neg {
		negate(&v)
	}
	return v, nil
}

func beUint(p []byte) uint64 {
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v
}

// AppendScaled appends a scaled integer as MySQL prints the DECIMAL: scale
// fraction digits, at least one integer digit.
func AppendScaled(dst []byte, v [4]uint64, scale int) []byte {
	if int64(v[3]) < 0 {
		dst = append(dst, '-')
		negate(&v)
	}
	// Digits, least significant first, 19 at a time.
	var digits [80]byte
	n := 0
	for v != [4]uint64{} {
		var rem uint64
		for l := 3; l >= 0; l-- {
			v[l], rem = bits.Div64(rem, v[l], 1e19)
		}
		for k := 0; k < 19 && (rem != 0 || v != [4]uint64{}); k++ {
			digits[n] = byte('0' + rem%10)
			rem /= 10
			n++
		}
	}
	for n <= scale { // at least one integer digit
		digits[n] = '0'
		n++
	}
	for i := n - 1; i >= 0; i-- {
		if i == scale-1 {
			dst = append(dst, '.')
		}
		dst = append(dst, digits[i])
	}
	return dst
}

// Valid reports whether s is a plain decimal number with at most
// intDigits significant digits before the point and at most scale after.
func Valid(s string, intDigits, scale int) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[:i]
	if len(intPart) == 0 {
		return false
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if len(intPart) > intDigits && intPart != "0" {
		return false
	}
	if i == len(s) {
		return true
	}
	frac := s[i+1:]
	if s[i] != '.' || len(frac) == 0 || len(frac) > scale {
		return false
	}
	for j := 0; j < len(frac); j++ {
		if frac[j] < '0' || frac[j] > '9' {
			return false
		}
	}
	return true
}

// Parse reads a decimal's text ("-123.45") as the integer value*10^scale.
// Empty text is 0. It does not bound the integer digits (Valid does): a
// value beyond 256 bits wraps.
func Parse(s []byte, scale int) ([4]uint64, error) {
	var v [4]uint64
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	frac := -1
	digits := 0
	for _, c := range s {
		if c == '.' && frac < 0 {
			frac = 0
			continue
		}
		if c < '0' || c > '9' {
			return v, fmt.Errorf("%q is not a decimal number", s)
		}
		if frac >= 0 {
			frac++
		}
		digits++
		if digits <= 19 && v[1]|v[2]|v[3] == 0 && v[0] <= (1<<64-1-9)/10 {
			v[0] = v[0]*10 + uint64(c-'0')
		} else {
			mulAdd(&v, 10, uint64(c-'0'))
		}
	}
	if frac > scale {
		return v, fmt.Errorf("%q has more than %d decimal places", s, scale)
	}
	for i := max(frac, 0); i < scale; i++ {
		mulAdd(&v, 10, 0)
	}
	if neg {
		negate(&v)
	}
	return v, nil
}

// mulAdd sets v = v*m + a, v unsigned.
func mulAdd(v *[4]uint64, m, a uint64) {
	carry := a
	for i := range v {
		hi, lo := bits.Mul64(v[i], m)
		var c uint64
		v[i], c = bits.Add64(lo, carry, 0)
		carry = hi + c
	}
}

// negate sets v = -v in two's complement.
func negate(v *[4]uint64) {
	var borrow uint64
	for i := range v {
		v[i], borrow = bits.Sub64(0, v[i], borrow)
	}
}
