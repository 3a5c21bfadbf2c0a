package binlog

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	tidbcharset "github.com/pingcap/tidb/pkg/parser/charset"

	"github.com/binlog2ch/binlog2ch/charset"
	"github.com/binlog2ch/binlog2ch/schema"
)

// binaryCollation is the collation id of the binary character set.
const binaryCollation = 63

// TableFromMap builds a table definition from a table-map event written
// with binlog_row_metadata=FULL: the schema as it was when the event was
// written, which is what the row values must be read with (the live schema
// may have changed since).
//
// It reads the event's fields, never go-mysql's helpers that cache into the
// event (ColumnNameString, EnumStrValueString...): the parser goroutine
// reads the same event concurrently (rowsDecoder).
//
// collations maps the server's collation ids to their character sets
// (Server.Collations); ids it lacks are looked up in MySQL's list.
func TableFromMap(e *replication.TableMapEvent, collations map[uint64]string) (*schema.Table, error) {
	if len(e.ColumnName) != int(e.ColumnCount) {
		return nil, fmt.Errorf("table %s.%s: the binlog's table-map event has no column names: binlog_row_metadata was not FULL when this event was written; set binlog_row_metadata=FULL on the server and start from a position written after that (a new full sync)", e.Schema, e.Table)
	}
	t := &schema.Table{Database: string(e.Schema), Name: string(e.Table)}
	unsigned := e.UnsignedMap()
	textCollations, labelCollations := e.CollationMap(), e.EnumSetCollationMap()
	nextEnum, nextSet := 0, 0
	var labelErr error
	labels := func(values [][][]byte, next *int, col int) []string {
		if *next >= len(values) {
			return nil
		}
		var dec *charset.Decoder
		if id, ok := labelCollations[col]; ok && !charset.Passthrough(charsetOf(id, collations)) {
			cs := charsetOf(id, collations)
			var err error
			if dec, err = charset.New(cs); err != nil {
				labelErr = fmt.Errorf("%s.%s.%s: the labels' %w", e.Schema, e.Table, e.ColumnName[col], err)
			}
		}
		out := make([]string, len(values[*next]))
		for i, v := range values[*next] {
			out[i] = string(v)
			if dec != nil {
				u, err := dec.Append(nil, v)
				if err != nil {
					labelErr = fmt.Errorf("%s.%s.%s: label %q: %w", e.Schema, e.Table, e.ColumnName[col], v, err)
				}
				out[i] = string(u)
			}
		}
		*next++
		return out
	}
	for i := 0; i < int(e.ColumnCount); i++ {
		c := schema.Column{Name: string(e.ColumnName[i]), Unsigned: unsigned[i], BinlogType: e.ColumnType[i], BinlogMeta: e.ColumnMeta[i]}
		_, c.Nullable = e.Nullable(i)
		meta := e.ColumnMeta[i]
		typ := e.ColumnType[i]
		if typ == mysql.MYSQL_TYPE_STRING && meta >= 256 {
			// The real type of a CHAR/BINARY/ENUM/SET column is in the meta.
			b0, b1 := byte(meta>>8), meta&0xff
			if b0&0x30 != 0x30 {
				c.Length = int(b1 | (uint16((b0&0x30)^0x30) << 4))
				typ = b0 | 0x30
			} else {
				c.Length = int(b1)
				typ = b0
			}
		}
		binary := textCollations[i] == binaryCollation
		switch typ {
		case mysql.MYSQL_TYPE_TINY:
			c.Kind, c.Type = schema.KindTinyInt, "tinyint"
		case mysql.MYSQL_TYPE_SHORT:
			c.Kind, c.Type = schema.KindSmallInt, "smallint"
		case mysql.MYSQL_TYPE_INT24:
			c.Kind, c.Type = schema.KindMediumInt, "mediumint"
		case mysql.MYSQL_TYPE_LONG:
			c.Kind, c.Type = schema.KindInt, "int"
		case mysql.MYSQL_TYPE_LONGLONG:
			c.Kind, c.Type = schema.KindBigInt, "bigint"
		case mysql.MYSQL_TYPE_NEWDECIMAL:
			c.Kind, c.Precision, c.Scale = schema.KindDecimal, int(meta>>8), int(meta&0xff)
			c.Type = "decimal(" + strconv.Itoa(c.Precision) + "," + strconv.Itoa(c.Scale) + ")"
		case mysql.MYSQL_TYPE_FLOAT:
			c.Kind, c.Type = schema.KindFloat, "float"
		case mysql.MYSQL_TYPE_DOUBLE:
			c.Kind, c.Type = schema.KindDouble, "double"
		case mysql.MYSQL_TYPE_BIT:
			c.Kind, c.Precision = schema.KindBit, int(meta>>8)*8+int(meta&0xff)
			c.Type = "bit(" + strconv.Itoa(c.Precision) + ")"
		case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
			c.Kind, c.Type = schema.KindDate, "date"
		case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
			c.Kind, c.Type = schema.KindDateTime, "datetime"
		case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
			c.Kind, c.Type = schema.KindTimestamp, "timestamp"
		case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
			c.Kind, c.Type = schema.KindTime, "time"
		case mysql.MYSQL_TYPE_YEAR:
			c.Kind, c.Type = schema.KindYear, "year"
		case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
			c.Kind, c.Type = schema.KindChar, "varchar"
			if binary {
				c.Kind, c.Type = schema.KindBlob, "varbinary"
			}
		case mysql.MYSQL_TYPE_STRING:
			c.Kind, c.Type = schema.KindChar, "char"
			if binary {
				c.Kind, c.Type = schema.KindBinary, "binary("+strconv.Itoa(c.Length)+")"
			}
		case mysql.MYSQL_TYPE_ENUM:
			c.Kind, c.Labels, c.Type = schema.KindEnum, labels(e.EnumStrValue, &nextEnum, i), "enum"
		case mysql.MYSQL_TYPE_SET:
			c.Kind, c.Labels, c.Type = schema.KindSet, labels(e.SetStrValue, &nextSet, i), "set"
		case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB:
			c.Kind, c.Type = schema.KindChar, "text"
			if binary {
				c.Kind, c.Type = schema.KindBlob, "blob"
			}
		case mysql.MYSQL_TYPE_JSON:
			c.Kind, c.Type = schema.KindJSON, "json"
		case mysql.MYSQL_TYPE_GEOMETRY:
			c.Kind, c.Type = schema.KindGeometry, "geometry"
		default:
			return nil, fmt.Errorf("%s.%s.%s: MySQL column type %d is not supported; exclude the table (tables.exclude)", e.Schema, e.Table, c.Name, typ)
		}
		switch c.Kind {
		case schema.KindDateTime, schema.KindTimestamp, schema.KindTime:
			if typ == mysql.MYSQL_TYPE_DATETIME2 || typ == mysql.MYSQL_TYPE_TIMESTAMP2 || typ == mysql.MYSQL_TYPE_TIME2 {
				c.Fsp = int(meta)
				if c.Fsp > 0 {
					c.Type += "(" + strconv.Itoa(c.Fsp) + ")"
				}
			}
		}
		if c.Unsigned {
			c.Type += " unsigned"
		}
		if id, ok := textCollations[i]; ok && c.Kind == schema.KindChar {
			c.Charset = charsetOf(id, collations)
		}
		t.Columns = append(t.Columns, c)
	}
	if labelErr != nil {
		return nil, labelErr
	}
	for _, k := range e.PrimaryKey {
		t.PrimaryKey = append(t.PrimaryKey, int(k))
	}
	return t, nil
}

// charsetOf is the character set of a collation id: the server's own list
// first (MariaDB's ids above 255 are its own), then MySQL's.
func charsetOf(id uint64, server map[uint64]string) string {
	if cs, ok := server[id]; ok {
		return cs
	}
	if c, err := tidbcharset.GetCollationByID(int(id)); err == nil {
		return schema.CharsetName(c.CharsetName)
	}
	return "of unknown collation id " + strconv.FormatUint(id, 10)
}

// SameColumns reports whether two definitions of a table have the same
// columns in the same order, with the same types as the binlog shows them.
func SameColumns(a, b *schema.Table) bool {
	if len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		x, y := &a.Columns[i], &b.Columns[i]
		if x.Name != y.Name || binlogKind(x) != binlogKind(y) || x.Unsigned != y.Unsigned || x.Nullable != y.Nullable ||
			x.Scale != y.Scale || x.Fsp != y.Fsp || !equalStrings(x.Labels, y.Labels) || x.Charset != y.Charset && x.Charset != "" && y.Charset != "" ||
			(binlogKind(x) == schema.KindBinary) && x.Length != y.Length ||
			(x.Kind == schema.KindDecimal || x.Kind == schema.KindBit) && x.Precision != y.Precision {
			return false
		}
	}
	return true
}

// binlogKind is a column's kind as the binlog's table map shows it:
// MariaDB's UUID, INET4 and INET6 are BINARY(16), BINARY(4), BINARY(16)
// there, with the same bytes (UUID's in the order of its text, whatever
// order the row holds them in: sql_type_uuid.h's pack).
func binlogKind(c *schema.Column) schema.MySQLKind {
	switch c.Kind {
	case schema.KindUUID, schema.KindInet4, schema.KindInet6:
		return schema.KindBinary
	}
	return c.Kind
}

// fixedBinKind is the kind the live definition gives a BINARY(16) or
// BINARY(4) column of the binlog's of the same name, when the live column
// is a UUID, INET4 or INET6 of that size; the binlog's own kind otherwise.
func fixedBinKind(c *schema.Column, live *schema.Table) (schema.MySQLKind, string) {
	if c.Kind != schema.KindBinary || live == nil {
		return c.Kind, c.Type
	}
	i := live.ColumnIndex(c.Name)
	if i < 0 {
		return c.Kind, c.Type
	}
	l := &live.Columns[i]
	if binlogKind(l) == schema.KindBinary && l.Kind != schema.KindBinary && l.Length == c.Length {
		return l.Kind, l.Type
	}
	return c.Kind, c.Type
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Enrich takes what the binlog cannot tell (TINYINT(1)'s display width,
// unique keys, the exact type text) from the live definition when it has
// the same columns as the binlog's; otherwise the binlog's stands.
//
// UUID, INET4 and INET6 columns the binlog shows as BINARY(n) take their
// kind from the live column of the same name even when the columns differ
// (an event from before a later ALTER TABLE): read as BINARY, their bytes
// would land in ClickHouse as FixedString and the target's UUID column be
// changed to it.
func Enrich(binlog, live *schema.Table) *schema.Table {
	if live == nil {
		return binlog
	}
	if !SameColumns(binlog, live) {
		var t *schema.Table
		for i := range binlog.Columns {
			c := &binlog.Columns[i]
			if k, typ := fixedBinKind(c, live); k != c.Kind {
				if t == nil {
					cp := *binlog
					cp.Columns = append([]schema.Column(nil), binlog.Columns...)
					t = &cp
				}
				t.Columns[i].Kind, t.Columns[i].Type = k, typ
			}
		}
		if t == nil {
			return binlog
		}
		return t
	}
	t := *live
	t.Columns = append([]schema.Column(nil), live.Columns...)
	for i := range t.Columns {
		t.Columns[i].BinlogType, t.Columns[i].BinlogMeta = binlog.Columns[i].BinlogType, binlog.Columns[i].BinlogMeta
	}
	if len(binlog.PrimaryKey) > 0 {
		t.PrimaryKey = binlog.PrimaryKey
	}
	return &t
}

// SameTableMap reports whether two table-map events describe the same
// schema, so the decoded definition can be reused.
func SameTableMap(a, b *replication.TableMapEvent) bool {
	if !bytes.Equal(a.Schema, b.Schema) || !bytes.Equal(a.Table, b.Table) || !bytes.Equal(a.ColumnType, b.ColumnType) ||
		!slices.Equal(a.ColumnMeta, b.ColumnMeta) || !bytes.Equal(a.NullBitmap, b.NullBitmap) ||
		!bytes.Equal(a.SignednessBitmap, b.SignednessBitmap) || len(a.ColumnName) != len(b.ColumnName) ||
		!slices.Equal(a.PrimaryKey, b.PrimaryKey) || len(a.EnumStrValue) != len(b.EnumStrValue) || len(a.SetStrValue) != len(b.SetStrValue) {
		return false
	}
	for i := range a.ColumnName {
		if !bytes.Equal(a.ColumnName[i], b.ColumnName[i]) {
			return false
		}
	}
	for _, pair := range [][2][][][]byte{{a.EnumStrValue, b.EnumStrValue}, {a.SetStrValue, b.SetStrValue}} {
		for i := range pair[0] {
			if len(pair[0][i]) != len(pair[1][i]) {
				return false
			}
			for j := range pair[0][i] {
				if !bytes.Equal(pair[0][i][j], pair[1][i][j]) {
					return false
				}
			}
		}
	}
	return true
}
