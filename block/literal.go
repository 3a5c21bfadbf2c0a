package block

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/binlog2ch/binlog2ch/mysqldecimal"
	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Literal renders one MySQL value of column c, as go-mysql decodes it from
// a rows event, as a ClickHouse literal whose value is what the writers
// store for it: a number, or a quoted string that the caller CASTs to the
// column's type (Date, DateTime, Decimal, FixedString parse it). It serves
// the statements binlog2ch builds around key values (foreign-key
// cascades), not the rows' path. Types whose stored value depends on
// options or fix-ups (ENUM, SET, TIME, TIMESTAMP, fractional DATETIME,
// floats, zero or invalid dates) are refused: a guessed literal would
// match other rows than MySQL's.
func Literal(v any, c *schema.Column) (string, error) {
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt, schema.KindYear, schema.KindBit:
		unsigned, bits := intShape(c)
		u, s, ok := intValue(v, unsigned, bits)
		if !ok {
			return "", fmt.Errorf("want an integer, got %T", v)
		}
		if unsigned {
			return strconv.FormatUint(u, 10), nil
		}
		return strconv.FormatInt(s, 10), nil
	case schema.KindDecimal:
		d, ok := v.(string)
		if !ok || !mysqldecimal.Valid(d, c.Precision-c.Scale, c.Scale) {
			return "", fmt.Errorf("not a DECIMAL(%d,%d): %v", c.Precision, c.Scale, v)
		}
		return schema.QuoteString(d), nil
	case schema.KindChar, schema.KindBlob, schema.KindBinary:
		var p []byte
		switch s := v.(type) {
		case string:
			p = unsafe.Slice(unsafe.StringData(s), len(s))
		case []byte:
			p = s
		default:
			return "", fmt.Errorf("want a string, got %T", v)
		}
		if dec, err := textDecoder(c); err != nil {
			return "", err
		} else if dec != nil {
			out, err := dec.Append(nil, p)
			if err != nil {
				return "", fmt.Errorf("%w: the text is not valid in the column's character set", err)
			}
			p = out
		}
		if c.Kind == schema.KindBinary && c.Length > len(p) {
			// The binlog drops BINARY's trailing zero bytes; MySQL holds them.
			p = append(append([]byte(nil), p...), make([]byte, c.Length-len(p))...)
		}
		return schema.QuoteString(string(p)), nil
	case schema.KindDate:
		var y, m, d int
		switch x := v.(type) {
		case string:
			var ok bool
			if y, m, d, ok = mysqltime.ParseDate(x); !ok {
				return "", fmt.Errorf("not a DATE: %q", x)
			}
		case time.Time:
			y, m, d = x.Year(), int(x.Month()), x.Day()
		default:
			return "", fmt.Errorf("want a DATE, got %T", v)
		}
		if y < 1970 || m < 1 || d < 1 {
			return "", fmt.Errorf("DATE %04d-%02d-%02d: zero, invalid or before 1970, stored as schema.invalid_dates says", y, m, d)
		}
		return schema.QuoteString(fmt.Sprintf("%04d-%02d-%02d", y, m, d)), nil
	case schema.KindDateTime:
		if c.Fsp != 0 {
			return "", fmt.Errorf("DATETIME(%d): fractional seconds are not supported in cascade keys", c.Fsp)
		}
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case time.Time:
			s = x.Format(time.DateTime)
		default:
			return "", fmt.Errorf("want a DATETIME, got %T", v)
		}
		if t, err := time.Parse(time.DateTime, s); err != nil || t.Year() < 1970 {
			return "", fmt.Errorf("DATETIME %q: zero, invalid or before 1970, stored as schema.invalid_dates says", s)
		}
		return schema.QuoteString(s), nil
	}
	return "", fmt.Errorf("MySQL type %s is not supported in foreign-key cascade keys", c.Type)
}
