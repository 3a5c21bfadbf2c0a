// Package verify compares replicated tables between MySQL and ClickHouse:
// row counts and an order-independent checksum per primary-key range,
// computed by each server over a canonical text of every row, so a large
// table is checked without reading it into memory. It must never change a
// replicated table or its rows: a difference is reported, not repaired.
package verify

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/charset"
	"github.com/binlog2ch/binlog2ch/schema"
)

// nullMark is a NULL's canonical text. No canonical value of a non-NULL is
// "N" (numbers, dates, hex and MD5 texts never are), so NULL, the empty
// string and zero stay distinct.
const nullMark = "N"

// form is how a column's canonical text reads, for messages.
type form int

const (
	formText  form = iota // numbers, dates, times: readable as is
	formHex               // upper-case hex of the bytes
	formMD5               // lower-case MD5 of the bytes (large values)
	formRaw               // Decimal128 as the two 64-bit halves of its scaled integer
	formFloat             // IEEE double as mantissa 'p' exponent
)

// column is one compared column: the SQL that renders its value
// canonically on each server.
type column struct {
	name     string
	mysql    string // MySQL expression, never NULL
	ch       string // ClickHouse expression, never NULL
	form     form
	temporal bool // DATE/DATETIME/TIMESTAMP: invalid_dates fix-ups may change it
}

// canonical builds the canonical expressions of a replicated column: the
// MySQL side renders the source value as the mapping (target type t) stores
// it, the ClickHouse side renders the stored value, and equal values give
// equal texts.
func canonical(c *schema.Column, t schema.CHType, caps schema.Capabilities) (column, error) {
	my := "`" + strings.ReplaceAll(c.Name, "`", "``") + "`"
	ch := "assumeNotNull(" + schema.QuoteIdent(c.Name) + ")"
	col := column{name: c.Name}
	var m, h string
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt:
		m, h = "CAST("+my+" AS CHAR)", "toString("+ch+")"
		if t.Kind == schema.CHBool {
			h = "toString(toUInt8(" + ch + "))"
		}
	case schema.KindYear, schema.KindBit:
		// +0: YEAR 0000 and BIT values as plain unsigned numbers.
		m, h = "CAST("+my+" + 0 AS CHAR)", "toString("+ch+")"
	case schema.KindDecimal:
		m, h, col.form = decimalExprs(my, ch, c, t, caps)
	case schema.KindFloat, schema.KindDouble:
		// Compared bit for bit: both sides decompose the same IEEE double.
		m, h, col.form = floatMySQL(my), floatClickHouse("toFloat64("+ch+")"), formFloat
	case schema.KindDate:
		m, h, col.temporal = "CAST("+my+" AS CHAR)", "toString("+ch+")", true
		if t.Kind == schema.CHDate {
			// ClickHouse before 20.x prints day 0 as 0000-00-00.
			h = "if(toUInt16(" + ch + ") = 0, '1970-01-01', toString(" + ch + "))"
		}
	case schema.KindDateTime, schema.KindTimestamp:
		m, h, col.temporal = dateTimeExprs(my, ch, c, t)
	case schema.KindTime:
		if t.Kind == schema.CHInt64 {
			m, h = "CAST(TIME_TO_SEC("+my+") * 1000000 AS SIGNED)", "toString("+ch+")"
		} else {
			// MySQL's text with fsp digits, which is what the mapping stores.
			m, h = "CAST("+my+" AS CHAR)", ch
		}
	case schema.KindChar, schema.KindBlob, schema.KindJSON:
		// MD5 keeps a row's text short whatever the value's size (MySQL's
		// CONCAT is capped by max_allowed_packet).
		m, h, col.form = "MD5("+utf8Text(my, c)+")", "lower(hex(MD5("+ch+")))", formMD5
	case schema.KindBinary:
		m, h, col.form = "HEX("+my+")", "hex("+ch+")", formHex
	case schema.KindUUID, schema.KindInet4, schema.KindInet6:
		// MariaDB's text, which a String column holds as it is; UUID and
		// IPv4 print the same text in ClickHouse (lower-case, dotted).
		m, h = "CAST("+my+" AS CHAR)", ch
		switch t.Kind {
		case schema.CHUUID, schema.CHIPv4:
			h = "toString(" + ch + ")"
		case schema.CHIPv6:
			// ClickHouse prints some addresses otherwise (::1.2.3.4): the
			// bytes, through the one function every version has.
			m, h, col.form = "HEX("+my+")", "hex(IPv6StringToNum(toString("+ch+")))", formHex
		}
	case schema.KindGeometry:
		// The mapping stores MySQL's HEX() of the internal value.
		m, h, col.form = "MD5(HEX("+my+"))", "lower(hex(MD5("+ch+")))", formMD5
	case schema.KindEnum, schema.KindSet:
		// The label(s), whatever the storage (Enum, String, Array): labels
		// come from information_schema as UTF-8, so MySQL converts to it.
		m, col.form = "HEX(CAST("+my+" AS CHAR CHARACTER SET utf8mb4))", formHex
		h = "hex(toString(" + ch + "))"
		if t.Kind == schema.CHArrayString {
			h = "hex(arrayStringConcat(" + ch + ", ','))"
		}
	default:
		return column{}, fmt.Errorf("column %s: MySQL type %s has no canonical form", c.Name, c.Type)
	}
	col.mysql = "IF(" + my + " IS NULL, '" + nullMark + "', " + m + ")"
	col.ch = h
	if t.Nullable {
		col.ch = "if(isNull(" + schema.QuoteIdent(c.Name) + "), '" + nullMark + "', " + h + ")"
	}
	return col, nil
}

// utf8Text is a text column's value as UTF-8, as ClickHouse holds it: MD5
// and HEX read the bytes of the column's own character set.
func utf8Text(my string, c *schema.Column) string {
	if c.Kind == schema.KindChar && !charset.Passthrough(c.Charset) {
		return "CONVERT(" + my + " USING utf8mb4)"
	}
	return my
}

// keyHexForm renders key text columns as hex rather than MD5, so a
// differing key can be printed.
func keyHexForm(col *column, c *schema.Column) {
	if c.Kind == schema.KindChar || c.Kind == schema.KindBlob {
		my := "`" + strings.ReplaceAll(c.Name, "`", "``") + "`"
		col.mysql = "HEX(" + utf8Text(my, c) + ")"
		col.ch = "hex(" + schema.QuoteIdent(c.Name) + ")"
		col.form = formHex
	}
}

func decimalExprs(my, ch string, c *schema.Column, t schema.CHType, caps schema.Capabilities) (string, string, form) {
	if t.Kind == schema.CHString {
		// DECIMAL wider than the server's Decimal: MySQL's exact text.
		return "CAST(" + my + " AS CHAR)", ch, formText
	}
	target := my
	if t.Precision != c.Precision || t.Scale != c.Scale {
		target = fmt.Sprintf("CAST(%s AS DECIMAL(%d,%d))", my, t.Precision, t.Scale)
	}
	if t.Precision <= 18 || !caps.LegacyDateRange {
		return "CAST(" + target + " AS CHAR)", "toString(" + ch + ")", formText
	}
	// ClickHouse before 20.x corrupts large Decimal128 values in toString:
	// compare the stored 128-bit scaled integer instead, as its two
	// little-endian 64-bit halves. MySQL computes the same halves from the
	// two's complement of value * 10^scale in exact DECIMAL arithmetic.
	// The scaled integer from the text (which has exactly the scale's
	// digits): multiplying would need more digits than DECIMAL(65) has left
	// for a large scale.
	scaled := "CAST(REPLACE(CAST(" + target + " AS CHAR), '.', '') AS DECIMAL(65,0))"
	const two64, two128 = "18446744073709551616", "340282366920938463463374607431768211456"
	u := "IF(" + scaled + " < 0, " + scaled + " + " + two128 + ", " + scaled + ")"
	lo := "MOD(" + u + ", " + two64 + ")"
	hi := "CAST((" + u + " - " + lo + ") / " + two64 + " AS DECIMAL(65,0))"
	m := "CONCAT(CAST(" + hi + " AS CHAR), ':', CAST(CAST(" + lo + " AS DECIMAL(65,0)) AS CHAR))"
	s := "reinterpretAsString(" + ch + ")" // drops trailing zero bytes; reinterpretAsUInt64 pads them back
	h := "concat(toString(reinterpretAsUInt64(substring(" + s + ", 9, 8))), ':', toString(reinterpretAsUInt64(substring(" + s + ", 1, 8))))"
	return m, h, formRaw
}

// dateTimeExprs: MySQL's text (the session is in UTC, so TIMESTAMP reads in
// UTC; DATETIME is wall clock, as ClickHouse prints it in the column's zone)
// with the stored fraction digits.
func dateTimeExprs(my, ch string, c *schema.Column, t schema.CHType) (string, string, bool) {
	digits := c.Fsp
	if t.Kind == schema.CHDateTime64 {
		digits = t.Scale
	}
	m := "CAST(" + my + " AS CHAR)"
	if digits > c.Fsp {
		pad := strings.Repeat("0", digits-c.Fsp)
		if c.Fsp == 0 {
			pad = "." + pad
		}
		m = "CONCAT(" + m + ", '" + pad + "')"
	}
	h := "toString(" + ch + ")"
	switch t.Kind {
	case schema.CHString:
		h = ch
	case schema.CHDateTime:
		// ClickHouse before 20.x prints the epoch as 0000-00-00 00:00:00.
		epoch := "1970-01-01 00:00:00"
		if loc, err := time.LoadLocation(t.Zone); err == nil {
			epoch = time.Unix(0, 0).In(loc).Format(time.DateTime)
		}
		h = "if(toUInt32(" + ch + ") = 0, '" + epoch + "', " + h + ")"
	}
	return m, h, true
}

// Floats are compared as the exact IEEE value: sign and 53-bit mantissa as
// an integer, 'p', the binary exponent. Both servers compute it with exact
// operations (division by a power of two, integer conversion of an exact
// integer); log2 only guesses the exponent, and an off-by-one guess is
// corrected, so libm differences cannot change the text. Subnormals are
// scaled by 2^1074; -0 equals 0.
const (
	two52    = "4503599627370496"
	two53    = "9007199254740992"
	minDbl   = "2.2250738585072014e-308"
	posPrint = "'p'"
)

func floatMySQL(x string) string {
	e := "FLOOR(LOG2(ABS(" + x + ")))"
	n := "(" + x + " / POW(2, " + e + " - 52))"
	part := func(n, e string) string {
		return "CONCAT(CAST(" + n + " AS SIGNED), " + posPrint + ", CAST(" + e + " AS SIGNED))"
	}
	return "CASE WHEN " + x + " = 0 THEN '0'" +
		" WHEN ABS(" + x + ") < " + minDbl + " THEN CONCAT('s', CAST(" + x + " * POW(2, 537) * POW(2, 537) AS SIGNED))" +
		" WHEN ABS" + n + " >= " + two53 + " THEN " + part(n+" / 2", e+" + 1") +
		" WHEN ABS" + n + " < " + two52 + " THEN " + part(n+" * 2", e+" - 1") +
		" ELSE " + part(n, e) + " END"
}

func floatClickHouse(x string) string {
	e := "floor(log2(abs(" + x + ")))"
	n := "(" + x + " / pow(2, " + e + " - 52))"
	part := func(n, e string) string {
		return "concat(toString(toInt64(" + n + ")), " + posPrint + ", toString(toInt64(" + e + ")))"
	}
	return "multiIf(" + x + " = 0, '0'," +
		" abs(" + x + ") < " + minDbl + ", concat('s', toString(toInt64(" + x + " * pow(2, 537) * pow(2, 537))))," +
		" abs" + n + " >= " + two53 + ", " + part(n+" / 2", e+" + 1") + "," +
		" abs" + n + " < " + two52 + ", " + part(n+" * 2", e+" - 1") + "," +
		" " + part(n, e) + ")"
}

// concatMySQL joins canonical texts with commas (no canonical text holds
// one unless it is free text, which is hashed).
func concatMySQL(exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	return "CONCAT_WS(','," + strings.Join(exprs, ", ") + ")"
}

func concatClickHouse(exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	parts := make([]string, 0, 2*len(exprs))
	for i, e := range exprs {
		if i > 0 {
			parts = append(parts, "','")
		}
		parts = append(parts, e)
	}
	return "concat(" + strings.Join(parts, ", ") + ")"
}

// rowHashMySQL is the first 64 bits of the MD5 of a row's canonical text,
// as an unsigned integer; rowHashClickHouse is the same number.
func rowHashMySQL(text string) string {
	return "CAST(CONV(LEFT(MD5(" + text + "), 16), 16, 10) AS UNSIGNED)"
}

func rowHashClickHouse(text string) string {
	return "reinterpretAsUInt64(reverse(substring(MD5(" + text + "), 1, 8)))"
}

// keyLiteral renders a key value read from MySQL (text) as a literal of
// each dialect. Only the kinds keyOrderSafe admits reach here.
func keyLiteral(c *schema.Column, t schema.CHType, v string) (my, ch string, err error) {
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt, schema.KindYear:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			if _, err := strconv.ParseUint(v, 10, 64); err != nil {
				return "", "", fmt.Errorf("key column %s: value %q is not an integer", c.Name, v)
			}
		}
		// Bare numbers: MySQL compares an integer with a quoted string as
		// doubles, which loses BIGINT precision.
		return v, v, nil
	case schema.KindDate:
		return schema.QuoteString(v), "toDate(" + schema.QuoteString(v) + ")", nil
	case schema.KindDateTime, schema.KindTimestamp:
		return schema.QuoteString(v), "toDateTime(" + schema.QuoteString(v) + ", " + schema.QuoteString(t.Zone) + ")", nil
	}
	return "", "", fmt.Errorf("key column %s: no literal for %s", c.Name, c.Type)
}

// keyOrderSafe reports whether both servers order a key column's values the
// same way, so a key range selects the same rows on both. Text with a
// collation does not qualify (MySQL orders by collation, ClickHouse by
// bytes), nor do DATETIME wall clocks in a zone with DST.
func keyOrderSafe(c *schema.Column, t schema.CHType) bool {
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt, schema.KindYear:
		switch t.Kind {
		case schema.CHInt8, schema.CHInt16, schema.CHInt32, schema.CHInt64, schema.CHUInt8, schema.CHUInt16, schema.CHUInt32, schema.CHUInt64:
			return true
		}
	case schema.KindDate:
		return t.Kind == schema.CHDate || t.Kind == schema.CHDate32
	case schema.KindDateTime, schema.KindTimestamp:
		return c.Fsp == 0 && (t.Kind == schema.CHDateTime || t.Kind == schema.CHDateTime64 && t.Scale == 0) && t.Zone == "UTC"
	}
	return false
}
