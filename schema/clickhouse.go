package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// Capabilities is what the target ClickHouse server supports, detected at
// start rather than assumed: users run anything from 18.16 to the newest.
type Capabilities struct {
	Version        string
	DateTime64     bool // 20.1
	Date32         bool // 21.9
	Decimal256     bool // Decimal with P up to 76: 20.8, without a setting from 21.6
	Bool           bool // 21.12
	LowCardinality bool // 19.x without the experimental setting
	// IsDeleted is ReplacingMergeTree(ver, is_deleted), 23.2.
	IsDeleted bool
	// ColumnIfExists is ADD/DROP COLUMN IF [NOT] EXISTS.
	ColumnIfExists bool
	// RenameColumn is ALTER TABLE ... RENAME COLUMN, 20.4.
	RenameColumn bool
	// LegacyDateRange: before 20.x, Date and DateTime values after
	// 2105-12-31 wrap around to 1970 on read (the server's date tables end
	// there), though the types' documented range is wider.
	LegacyDateRange bool
	// HashDecimal: cityHash64 takes Decimal arguments (18.16 refuses them).
	HashDecimal bool
	// IPv4 and IPv6 are the address types (domains over UInt32 and
	// FixedString(16) from 19.x, types of their own from 23.x); without
	// them MariaDB's INET4 and INET6 map to String of their text.
	IPv4, IPv6 bool
	// DedupWindow: the MergeTree setting non_replicated_deduplication_window
	// exists (system.merge_tree_settings; not in 18.16), so a plain
	// MergeTree table can keep the block ids that drop a replayed batch.
	DedupWindow bool
}

// Profiles for golden tests and for `schema` without a server.
var (
	// ClickHouse18 is ClickHouse 18.16, the oldest server binlog2ch runs on.
	ClickHouse18 = Capabilities{Version: "18.16.1", LegacyDateRange: true}
	// ClickHouseModern is a current server (24.x and later).
	ClickHouseModern = Capabilities{Version: "24.8", DateTime64: true, Date32: true, Decimal256: true, Bool: true,
		LowCardinality: true, IsDeleted: true, ColumnIfExists: true, RenameColumn: true, HashDecimal: true,
		IPv4: true, IPv6: true, DedupWindow: true}
)

// DetectCapabilities asks the server what it supports: the data types from
// system.data_type_families, the rest from the version, where no system
// table tells.
func DetectCapabilities(ctx context.Context, conn driver.Conn) (Capabilities, error) {
	var c Capabilities
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&c.Version); err != nil {
		return c, fmt.Errorf("ClickHouse: read version: %w", err)
	}
	rows, err := conn.Query(ctx, "SELECT name FROM system.data_type_families")
	if err != nil {
		return c, fmt.Errorf("ClickHouse: read system.data_type_families: %w", err)
	}
	types := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return c, fmt.Errorf("ClickHouse: read system.data_type_families: %w", err)
		}
		types[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("ClickHouse: read system.data_type_families: %w", err)
	}
	major, minor := parseVersion(c.Version)
	at := func(ma, mi int) bool { return major > ma || (major == ma && minor >= mi) }
	c.DateTime64 = types["DateTime64"]
	c.Date32 = types["Date32"]
	c.Decimal256 = types["Decimal256"]
	if c.Decimal256 && !at(21, 6) {
		var v string
		err := conn.QueryRow(ctx, "SELECT value FROM system.settings WHERE name = 'allow_experimental_bigint_types'").Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return c, fmt.Errorf("ClickHouse: read system.settings: %w", err)
		}
		c.Decimal256 = bigTypesAllowed(major, minor, v)
	}
	c.Bool = types["Bool"]
	c.IPv4, c.IPv6 = types["IPv4"], types["IPv6"]
	// LowCardinality exists in 18.16 behind allow_experimental_low_cardinality_type.
	c.LowCardinality = types["LowCardinality"] && at(19, 9)
	c.IsDeleted = at(23, 2)
	c.ColumnIfExists = at(19, 3)
	c.RenameColumn = at(20, 4)
	c.LegacyDateRange = !at(20, 1)
	var dedup uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.merge_tree_settings WHERE name = 'non_replicated_deduplication_window'").Scan(&dedup); err != nil {
		return c, fmt.Errorf("ClickHouse: read system.merge_tree_settings: %w", err)
	}
	c.DedupWindow = dedup > 0
	// No system table tells which argument types a function takes: ask.
	var h uint64
	switch err := conn.QueryRow(ctx, "SELECT cityHash64(toDecimal32(1, 0))").Scan(&h); {
	case err == nil:
		c.HashDecimal = true
	case !isException(err):
		return c, fmt.Errorf("ClickHouse: check cityHash64 on Decimal: %w", err)
	}
	return c, nil
}

// bigTypesAllowed reports whether a server that lists Decimal256 in
// system.data_type_families also creates tables with it: the type came in
// 20.8 behind the user setting allow_experimental_bigint_types (setting is
// its value in system.settings, "" where the server has none), and 21.6
// made the big types production ready (ClickHouse #23631).
func bigTypesAllowed(major, minor int, setting string) bool {
	return major > 21 || (major == 21 && minor >= 6) || setting == "1"
}

// isException reports whether err is the server's answer to the query (as
// opposed to a failed connection).
func isException(err error) bool {
	var ex *proto.Exception
	return errors.As(err, &ex)
}

func parseVersion(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 2 {
		major, _ = strconv.Atoi(parts[0])
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}

// CHKind is a ClickHouse column type family.
type CHKind int

// ClickHouse type families binlog2ch writes.
const (
	CHInt8 CHKind = iota + 1
	CHInt16
	CHInt32
	CHInt64
	CHUInt8
	CHUInt16
	CHUInt32
	CHUInt64
	CHFloat32
	CHFloat64
	CHDecimal
	CHString
	CHFixedString
	CHDate
	CHDate32
	CHDateTime
	CHDateTime64
	CHEnum8
	CHEnum16
	CHBool
	CHLowCardinalityString
	CHArrayString
	CHUUID
	CHIPv4
	CHIPv6
)

// CHType is a ClickHouse column type.
type CHType struct {
	Kind      CHKind
	Nullable  bool
	Precision int // Decimal
	Scale     int // Decimal; DateTime64's precision
	Length    int // FixedString
	Zone      string
	Enum      []EnumValue
}

// EnumValue is one label of an Enum8/Enum16.
type EnumValue struct {
	Label string
	Value int
}

var chNames = map[CHKind]string{
	CHInt8: "Int8", CHInt16: "Int16", CHInt32: "Int32", CHInt64: "Int64",
	CHUInt8: "UInt8", CHUInt16: "UInt16", CHUInt32: "UInt32", CHUInt64: "UInt64",
	CHFloat32: "Float32", CHFloat64: "Float64", CHString: "String", CHDate: "Date", CHDate32: "Date32",
	CHBool: "Bool", CHLowCardinalityString: "LowCardinality(String)", CHArrayString: "Array(String)",
	CHUUID: "UUID", CHIPv4: "IPv4", CHIPv6: "IPv6",
}

// String is the type as DDL spells it.
func (t CHType) String() string {
	var s string
	switch t.Kind {
	case CHDecimal:
		s = "Decimal(" + strconv.Itoa(t.Precision) + ", " + strconv.Itoa(t.Scale) + ")"
	case CHFixedString:
		s = "FixedString(" + strconv.Itoa(t.Length) + ")"
	case CHDateTime:
		s = "DateTime(" + QuoteString(t.Zone) + ")"
	case CHDateTime64:
		s = "DateTime64(" + strconv.Itoa(t.Scale) + ", " + QuoteString(t.Zone) + ")"
	case CHEnum8, CHEnum16:
		var b strings.Builder
		if t.Kind == CHEnum8 {
			b.WriteString("Enum8(")
		} else {
			b.WriteString("Enum16(")
		}
		for i, e := range t.Enum {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(QuoteString(e.Label))
			b.WriteString(" = ")
			b.WriteString(strconv.Itoa(e.Value))
		}
		b.WriteByte(')')
		s = b.String()
	case CHLowCardinalityString:
		// ClickHouse spells a nullable one inside out.
		if t.Nullable {
			return "LowCardinality(Nullable(String))"
		}
		s = chNames[t.Kind]
	default:
		s = chNames[t.Kind]
	}
	if t.Nullable {
		return "Nullable(" + s + ")"
	}
	return s
}

// QuoteIdent quotes a ClickHouse identifier with backquotes.
func QuoteIdent(s string) string { return quote(s, '`') }

// QuoteString quotes a ClickHouse string literal.
func QuoteString(s string) string { return quote(s, '\'') }

func quote(s string, q byte) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case q, '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}
