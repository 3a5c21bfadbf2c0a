package block

import (
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
)

// TestLiteral: key values from rows events become the literals of what
// the writers store: unsigned integers as go-mysql's signed values
// reinterpret them, text converted from its character set, BINARY with the
// zero bytes the binlog drops; types whose stored value depends on options
// are refused.
func TestLiteral(t *testing.T) {
	for _, c := range []struct {
		v    any
		col  schema.Column
		want string
	}{
		{int32(-5), schema.Column{Kind: schema.KindInt}, "-5"},
		{int32(-1), schema.Column{Kind: schema.KindInt, Unsigned: true}, "4294967295"},
		{uint64(1 << 63), schema.Column{Kind: schema.KindBigInt, Unsigned: true}, "9223372036854775808"},
		{int64(-1), schema.Column{Kind: schema.KindBigInt, Unsigned: true}, "18446744073709551615"},
		{int8(-128), schema.Column{Kind: schema.KindTinyInt}, "-128"},
		{int64(5), schema.Column{Kind: schema.KindBit, Precision: 3}, "5"},
		{"12.50", schema.Column{Kind: schema.KindDecimal, Precision: 10, Scale: 2}, "'12.50'"},
		{"it's", schema.Column{Kind: schema.KindChar, Charset: "utf8mb4"}, `'it\'s'`},
		{"caf\xe9", schema.Column{Kind: schema.KindChar, Charset: "latin1"}, "'café'"},
		{[]byte{1, 0, '\\'}, schema.Column{Kind: schema.KindBlob}, "'\x01\\0\\\\'"},
		{"ab", schema.Column{Kind: schema.KindBinary, Length: 4}, `'ab\0\0'`},
		{"2024-02-29", schema.Column{Kind: schema.KindDate}, "'2024-02-29'"},
		{time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), schema.Column{Kind: schema.KindDate}, "'2024-02-29'"},
		{"2024-02-29 23:59:58", schema.Column{Kind: schema.KindDateTime}, "'2024-02-29 23:59:58'"},
	} {
		got, err := Literal(c.v, &c.col)
		if err != nil || got != c.want {
			t.Errorf("Literal(%#v, %v) = %q, %v; want %q", c.v, c.col.Kind, got, err, c.want)
		}
	}
	for _, c := range []struct {
		v    any
		col  schema.Column
		want string
	}{
		{"0000-00-00", schema.Column{Kind: schema.KindDate}, "zero, invalid"},
		{"2024-02-29 23:59:58.5", schema.Column{Kind: schema.KindDateTime, Fsp: 1}, "fractional"},
		{int64(2), schema.Column{Kind: schema.KindEnum, Type: "enum('a','b')"}, "not supported"},
		{float32(1), schema.Column{Kind: schema.KindFloat, Type: "float"}, "not supported"},
		{"1", schema.Column{Kind: schema.KindInt}, "want an integer"},
		{"1e3", schema.Column{Kind: schema.KindDecimal, Precision: 10, Scale: 2}, "not a DECIMAL"},
	} {
		if _, err := Literal(c.v, &c.col); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Literal(%#v, %v): %v; want an error with %q", c.v, c.col.Kind, err, c.want)
		}
	}
}
