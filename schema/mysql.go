// Package schema describes tables on both sides and decides what a MySQL
// table becomes in ClickHouse: MySQL definitions (from information_schema
// or a table map), ClickHouse capabilities and types, the mapping with its
// options and overrides, and the DDL. It must not convert values (package
// block does), and never changes a server: it talks to one only to read a
// table's definition or a server's capabilities, and the DDL it writes is
// run by its callers.
package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MySQLKind is a MySQL column type family.
type MySQLKind int

// MySQL type families.
const (
	KindUnknown MySQLKind = iota
	KindTinyInt
	KindSmallInt
	KindMediumInt
	KindInt
	KindBigInt
	KindDecimal
	KindFloat
	KindDouble
	KindBit
	KindDate
	KindDateTime
	KindTimestamp
	KindTime
	KindYear
	KindChar   // CHAR, VARCHAR, TEXT types: text in a character set
	KindBinary // BINARY(n): fixed length, zero-padded bytes
	KindBlob   // VARBINARY and BLOB types: bytes
	KindEnum
	KindSet
	KindJSON
	KindGeometry
	// MariaDB's UUID (10.7), INET4 (10.10) and INET6 (10.5): fixed-size
	// bytes (16, 4, 16) that the binlog's table map shows as BINARY(n);
	// only information_schema tells them apart.
	KindUUID
	KindInet4
	KindInet6
)

// Column is one MySQL column, as information_schema describes it.
type Column struct {
	Name     string
	Type     string // COLUMN_TYPE as the server prints it, e.g. "decimal(10,2) unsigned"
	Kind     MySQLKind
	Unsigned bool
	Nullable bool
	// Precision and Scale are DECIMAL's P and S; Precision is also BIT's
	// width and the display width of integer types (TINYINT(1)).
	Precision int
	Scale     int
	// Fsp is the fractional seconds precision of TIME, DATETIME, TIMESTAMP.
	Fsp int
	// Length is BINARY(n)'s n, and the bytes of UUID (16), INET4 (4) and
	// INET6 (16).
	Length int
	// Labels are ENUM's and SET's values, exactly, in declaration order
	// (UTF-8).
	Labels []string
	// Charset is a CHAR, VARCHAR or TEXT column's character set, as MySQL
	// names it (latin1, utf8mb4...): the binlog carries its bytes in it.
	// "" when unknown or not text; charset.Passthrough tells whether its
	// bytes are UTF-8 already.
	Charset string
	// BinlogType and BinlogMeta are the column's type code and metadata in
	// the binlog's table map (0 when the definition did not come from the
	// binlog); with them rows are decoded straight from binlog bytes.
	BinlogType byte
	BinlogMeta uint16
}

// Table is one MySQL table.
type Table struct {
	Database string
	Name     string
	Columns  []Column
	// PrimaryKey lists the primary key's column indices in key order; empty
	// when the table has none.
	PrimaryKey []int
	// UniqueKey is the first unique key whose columns are all NOT NULL, used
	// as the sorting key of a table without a primary key.
	UniqueKey []int
}

// FullName is db.table, for messages.
func (t *Table) FullName() string { return t.Database + "." + t.Name }

// ColumnIndex returns the index of the named column, or -1.
func (t *Table) ColumnIndex(name string) int {
	for i := range t.Columns {
		if strings.EqualFold(t.Columns[i].Name, name) {
			return i
		}
	}
	return -1
}

// CharsetName is MySQL's name for a character set, the same whichever
// version prints it: utf8 is utf8mb3 (MySQL 8.0 and MariaDB 10.6 renamed
// it).
func CharsetName(name string) string {
	name = strings.ToLower(name)
	if name == "utf8" {
		return "utf8mb3"
	}
	return name
}

// UnsupportedTypeError is a MySQL column type without a ClickHouse mapping
// (a type a MariaDB plugin adds, for instance).
type UnsupportedTypeError struct{ Type string }

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("MySQL type %q is not supported; exclude the table (tables.exclude)", e.Type)
}

// ParseColumnType parses information_schema's COLUMN_TYPE (and DATA_TYPE,
// which names the family unambiguously, e.g. for MariaDB's JSON alias).
func ParseColumnType(columnType, dataType string) (Column, error) {
	c := Column{Type: columnType}
	lower := strings.ToLower(columnType)
	c.Unsigned = strings.Contains(lower, " unsigned")
	args := ""
	if i := strings.IndexByte(columnType, '('); i >= 0 {
		if j := strings.LastIndexByte(columnType, ')'); j > i {
			args = columnType[i+1 : j]
		}
	}
	nums := func() []int {
		var out []int
		for _, p := range strings.Split(args, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	switch strings.ToLower(dataType) {
	case "tinyint", "bool", "boolean":
		c.Kind = KindTinyInt
	case "smallint":
		c.Kind = KindSmallInt
	case "mediumint":
		c.Kind = KindMediumInt
	case "int", "integer":
		c.Kind = KindInt
	case "bigint":
		c.Kind = KindBigInt
	case "decimal", "numeric":
		c.Kind = KindDecimal
		c.Precision, c.Scale = 10, 0
		if n := nums(); len(n) >= 1 {
			c.Precision = n[0]
			if len(n) >= 2 {
				c.Scale = n[1]
			}
		}
	case "float":
		c.Kind = KindFloat
	case "double", "real", "double precision":
		c.Kind = KindDouble
	case "bit":
		c.Kind = KindBit
		c.Precision = 1
	case "date":
		c.Kind = KindDate
	case "datetime":
		c.Kind = KindDateTime
	case "timestamp":
		c.Kind = KindTimestamp
	case "time":
		c.Kind = KindTime
	case "year":
		c.Kind = KindYear
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		c.Kind = KindChar
	case "binary":
		c.Kind = KindBinary
		c.Length = 1
	case "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		c.Kind = KindBlob
	case "enum":
		c.Kind = KindEnum
	case "set":
		c.Kind = KindSet
	case "json":
		c.Kind = KindJSON
	case "uuid":
		c.Kind, c.Length = KindUUID, 16
	case "inet4":
		c.Kind, c.Length = KindInet4, 4
	case "inet6":
		c.Kind, c.Length = KindInet6, 16
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection":
		c.Kind = KindGeometry
	default:
		return c, &UnsupportedTypeError{Type: columnType}
	}
	switch c.Kind {
	case KindTinyInt, KindSmallInt, KindMediumInt, KindInt, KindBigInt, KindBit:
		if n := nums(); len(n) == 1 {
			c.Precision = n[0]
		}
	case KindBinary:
		if n := nums(); len(n) == 1 {
			c.Length = n[0]
		}
	case KindTime, KindDateTime, KindTimestamp:
		if n := nums(); len(n) == 1 {
			c.Fsp = n[0]
		}
	case KindEnum, KindSet:
		labels, err := ParseLabels(args)
		if err != nil {
			return c, fmt.Errorf("%s: %w", columnType, err)
		}
		c.Labels = labels
	}
	return c, nil
}

// ParseLabels parses the quoted value list of an ENUM or SET column type,
// e.g. `'a,b','it”s','x\\y'`: labels may hold commas, doubled quotes and
// backslash escapes, so splitting on commas is wrong.
func ParseLabels(list string) ([]string, error) {
	var labels []string
	i := 0
	for i < len(list) {
		for i < len(list) && (list[i] == ' ' || list[i] == ',') {
			i++
		}
		if i >= len(list) {
			break
		}
		if list[i] != '\'' {
			return nil, fmt.Errorf("bad value list at byte %d: want a quoted label", i)
		}
		i++
		var b strings.Builder
		closed := false
		for i < len(list) {
			ch := list[i]
			switch {
			case ch == '\'' && i+1 < len(list) && list[i+1] == '\'':
				b.WriteByte('\'')
				i += 2
			case ch == '\'':
				i++
				closed = true
			case ch == '\\' && i+1 < len(list):
				b.WriteByte(unescape(list[i+1]))
				i += 2
			default:
				b.WriteByte(ch)
				i++
			}
			if closed {
				break
			}
		}
		if !closed {
			return nil, errors.New("bad value list: unterminated label")
		}
		labels = append(labels, b.String())
	}
	return labels, nil
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case '0':
		return 0
	}
	return c
}
