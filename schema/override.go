package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseCHType parses the ClickHouse types a column type override may name:
// Int8..Int64, UInt8..UInt64, Decimal(P, S), Date, Date32, DateTime['zone'],
// DateTime64(P[, 'zone']) and String. Nullable is decided by the MySQL
// column, not by the override.
func ParseCHType(s string) (CHType, error) {
	s = strings.TrimSpace(s)
	name, args, hasArgs := strings.Cut(s, "(")
	if hasArgs {
		if !strings.HasSuffix(args, ")") {
			return CHType{}, fmt.Errorf("type %q: unbalanced parentheses", s)
		}
		args = strings.TrimSuffix(args, ")")
	}
	parts := []string{}
	if hasArgs {
		for _, p := range strings.Split(args, ",") {
			parts = append(parts, strings.TrimSpace(p))
		}
	}
	zone := func(p string) (string, error) {
		if len(p) < 2 || p[0] != '\'' || p[len(p)-1] != '\'' {
			return "", fmt.Errorf("type %q: want a quoted time zone, got %s", s, p)
		}
		return p[1 : len(p)-1], nil
	}
	for kind, n := range chNames {
		if n == name && !hasArgs {
			switch kind {
			case CHInt8, CHInt16, CHInt32, CHInt64, CHUInt8, CHUInt16, CHUInt32, CHUInt64, CHString, CHDate, CHDate32:
				return CHType{Kind: kind}, nil
			}
		}
	}
	switch {
	case name == "Decimal" && len(parts) == 2:
		p, err1 := strconv.Atoi(parts[0])
		sc, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil || p < 1 || p > 76 || sc < 0 || sc > p {
			return CHType{}, fmt.Errorf("type %q: want Decimal(P, S) with 1 <= P <= 76 and 0 <= S <= P", s)
		}
		return CHType{Kind: CHDecimal, Precision: p, Scale: sc}, nil
	case name == "DateTime" && (!hasArgs || len(parts) == 1):
		t := CHType{Kind: CHDateTime, Zone: "UTC"}
		if hasArgs {
			z, err := zone(parts[0])
			if err != nil {
				return CHType{}, err
			}
			t.Zone = z
		}
		return t, nil
	case name == "DateTime64" && (len(parts) == 1 || len(parts) == 2):
		p, err := strconv.Atoi(parts[0])
		if err != nil || p < 0 || p > 6 {
			return CHType{}, fmt.Errorf("type %q: binlog2ch writes DateTime64 with a precision from 0 to 6", s)
		}
		t := CHType{Kind: CHDateTime64, Scale: p, Zone: "UTC"}
		if len(parts) == 2 {
			if t.Zone, err = zone(parts[1]); err != nil {
				return CHType{}, err
			}
		}
		return t, nil
	}
	return CHType{}, fmt.Errorf("type %q cannot be an override: use Int8..Int64, UInt8..UInt64, Decimal(P, S), Date, Date32, DateTime, DateTime64(P) or String", s)
}

// intWidth is the bits of an integer kind and whether it is unsigned.
func intWidth(k CHKind) (bits int, unsigned bool, ok bool) {
	switch k {
	case CHInt8:
		return 8, false, true
	case CHInt16:
		return 16, false, true
	case CHInt32:
		return 32, false, true
	case CHInt64:
		return 64, false, true
	case CHUInt8:
		return 8, true, true
	case CHUInt16:
		return 16, true, true
	case CHUInt32:
		return 32, true, true
	case CHUInt64:
		return 64, true, true
	}
	return 0, false, false
}

// checkOverride reports whether a column mapped to `mapped` can be written
// as `to` without changing a value: wider integers of the same signedness,
// wider decimals or their exact text, DateTime64 with at least the
// column's fraction, Date32, and ENUM labels as String.
func checkOverride(c *Column, mapped, to CHType, caps Capabilities) error {
	fail := func(why string) error {
		return fmt.Errorf("type override %s for MySQL %s (mapped to %s): %s", to, c.Type, mapped, why)
	}
	if mb, mu, ok := intWidth(mapped.Kind); ok {
		tb, tu, ok := intWidth(to.Kind)
		if !ok || tu != mu || tb < mb {
			return fail("an integer column takes only an integer type of the same signedness, at least as wide")
		}
		return nil
	}
	switch mapped.Kind {
	case CHDecimal:
		if to.Kind == CHString {
			return nil
		}
		if to.Kind != CHDecimal || to.Scale < mapped.Scale || to.Precision-to.Scale < mapped.Precision-mapped.Scale {
			return fail("a DECIMAL takes a Decimal with at least its integer digits and scale, or String")
		}
		if to.Precision > 38 && !caps.Decimal256 {
			return fail("this ClickHouse has no Decimal with more than 38 digits")
		}
		return nil
	case CHDate:
		if to.Kind == CHDate32 && caps.Date32 || to.Kind == CHDate {
			return nil
		}
		return fail("a DATE takes Date, or Date32 where the server has it")
	case CHDateTime, CHDateTime64:
		if to.Kind == CHDateTime && c.Fsp == 0 {
			return nil
		}
		if to.Kind == CHDateTime64 && caps.DateTime64 && to.Scale >= c.Fsp {
			return nil
		}
		return fail("a DATETIME/TIMESTAMP takes DateTime (no fraction) or DateTime64 with at least its fraction digits, where the server has it")
	case CHEnum8, CHEnum16:
		if to.Kind == CHString {
			return nil
		}
		return fail("an ENUM takes String")
	}
	if to.String() == mapped.String() {
		return nil
	}
	return fail("this column's type cannot be overridden")
}
