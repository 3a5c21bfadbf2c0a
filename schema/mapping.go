package schema

import (
	"fmt"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/charset"
)

// Options are the mapping choices a user can make. The zero value is not
// usable; start from DefaultOptions.
type Options struct {
	// DateTimeZone is the zone DATETIME values (wall-clock, no zone in
	// MySQL) are taken to be in. Default UTC. TIMESTAMP values are instants
	// and need none.
	DateTimeZone *time.Location
	// TimeAs is how TIME columns are stored: "string" (MySQL's text, e.g.
	// "-838:59:58.123") or "int64_micros" (signed microseconds).
	TimeAs string
	// EnumAs is "enum" (Enum8/Enum16 with MySQL's labels and indexes),
	// "low_cardinality" or "string".
	EnumAs string
	// SetAs is "string" (comma-joined labels, as MySQL prints them) or
	// "array" (Array(String)).
	SetAs string
	// TinyInt1As is "int" (TINYINT(1) like any TINYINT: Int8, exact) or
	// "bool" (Bool where the server has it, else UInt8; values other than 0
	// and 1 are then an error).
	TinyInt1As string
	// InvalidDates is what happens to zero dates ('0000-00-00'), invalid
	// dates ('2024-00-10') and dates outside the ClickHouse type's range:
	// "error" (replication stops with an error naming the table, column and
	// value), "clamp" (the type's nearest bound: a zero date becomes the
	// minimum, e.g. 1970-01-01 for Date), or "null" (NULL in Nullable
	// columns, clamp in the others). Every fix-up is counted.
	InvalidDates string
	// Cluster, when set, puts the tables in a ClickHouse cluster.
	Cluster *Cluster
	// CurrentViews gives each table with a key a current-state view
	// (ViewOf).
	CurrentViews bool
}

// Option values.
const (
	TimeAsString      = "string"
	TimeAsInt64Micros = "int64_micros"
	EnumAsEnum        = "enum"
	EnumAsLowCard     = "low_cardinality"
	EnumAsString      = "string"
	SetAsString       = "string"
	SetAsArray        = "array"
	TinyInt1AsInt     = "int"
	TinyInt1AsBool    = "bool"
	InvalidError      = "error"
	InvalidClamp      = "clamp"
	InvalidNull       = "null"
)

// DefaultOptions are the choices that never change a value.
func DefaultOptions() Options {
	return Options{
		DateTimeZone: time.UTC,
		TimeAs:       TimeAsString,
		EnumAs:       EnumAsEnum,
		SetAs:        SetAsString,
		TinyInt1As:   TinyInt1AsInt,
		InvalidDates: InvalidError,
	}
}

// Validate checks every option has a known value.
func (o Options) Validate() error {
	check := func(name, v string, allowed ...string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%s: want one of %s, got %q", name, strings.Join(allowed, ", "), v)
	}
	if o.DateTimeZone == nil {
		return fmt.Errorf("datetime_zone: not set")
	}
	for _, err := range []error{
		check("time_as", o.TimeAs, TimeAsString, TimeAsInt64Micros),
		check("enum_as", o.EnumAs, EnumAsEnum, EnumAsLowCard, EnumAsString),
		check("set_as", o.SetAs, SetAsString, SetAsArray),
		check("tinyint1_as", o.TinyInt1As, TinyInt1AsInt, TinyInt1AsBool),
		check("invalid_dates", o.InvalidDates, InvalidError, InvalidClamp, InvalidNull),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Mode is how a table's changes are stored.
type Mode string

const (
	// ModeReplacing keeps the latest version of each row:
	// ReplacingMergeTree(_version) with _is_deleted; read with FINAL and
	// WHERE _is_deleted = 0.
	ModeReplacing Mode = "replacing"
	// ModeChangelog appends every event as a row with _op and _version.
	ModeChangelog Mode = "changelog"
)

// TableOptions are per-table overrides.
type TableOptions struct {
	Name        string   // target table name; default the MySQL name
	Engine      string   // full ENGINE clause body, e.g. "ReplacingMergeTree(_version)"
	OrderBy     []string // sorting key columns; default the primary key
	PartitionBy string   // PARTITION BY expression; default none
	Exclude     []string // MySQL columns not replicated
	Mode        Mode     // default ModeReplacing (ModeChangelog without a key)
	// Types overrides the ClickHouse type of MySQL columns (see
	// ParseCHType and checkOverride for what is allowed).
	Types map[string]string
}

// Meta columns binlog2ch adds to every table.
const (
	VersionColumn   = "_version"
	IsDeletedColumn = "_is_deleted"
	OpColumn        = "_op"
)

// Meta identifies the columns binlog2ch adds.
type Meta int

// Meta column kinds.
const (
	MetaNone Meta = iota
	MetaVersion
	MetaIsDeleted
	MetaOp
)

// Op is a row event type, as stored in _op.
type Op int8

// Row event types.
const (
	OpInsert Op = 1
	OpUpdate Op = 2
	OpDelete Op = 3
)

// TargetColumn is one ClickHouse column.
type TargetColumn struct {
	Name   string
	Type   CHType
	Source int // index in the MySQL table's columns; -1 for meta columns
	Meta   Meta
}

// Target is what a MySQL table becomes in ClickHouse.
type Target struct {
	Source   *Table
	Database string
	Name     string
	Mode     Mode
	Columns  []TargetColumn
	// SourceToTarget maps a MySQL column index to its target column index,
	// -1 for excluded columns.
	SourceToTarget []int
	OrderBy        []string
	PartitionBy    string
	Engine         string
	Caps           Capabilities
	Options        Options
}

// FullName is db.table in ClickHouse, for messages.
func (t *Target) FullName() string { return t.Database + "." + t.Name }

// UnsupportedCharsetError is a text column in a character set binlog2ch
// cannot convert to UTF-8 as MySQL does.
type UnsupportedCharsetError struct{ Charset string }

func (e *UnsupportedCharsetError) Error() string {
	return fmt.Sprintf("character set %s: binlog2ch has no conversion of it to UTF-8 that matches MySQL's, and will not write its bytes as they are beside the snapshot's UTF-8. Convert the column to utf8mb4 in MySQL (ALTER TABLE ... MODIFY ... CHARACTER SET utf8mb4), or leave the column out (tables.overrides.<db.table>.exclude_columns) or the table (tables.exclude)", e.Charset)
}

// Map decides the ClickHouse table for MySQL table t in database db.
func Map(t *Table, db string, caps Capabilities, opts Options, to TableOptions) (*Target, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	target := &Target{Source: t, Database: db, Name: t.Name, Caps: caps, Options: opts, Mode: to.Mode, PartitionBy: to.PartitionBy}
	if to.Name != "" {
		target.Name = to.Name
	}
	for name := range to.Types {
		if t.ColumnIndex(name) < 0 {
			return nil, fmt.Errorf("%s: type override for column %q, which does not exist", t.FullName(), name)
		}
	}
	excluded := map[int]bool{}
	for _, name := range to.Exclude {
		i := t.ColumnIndex(name)
		if i < 0 {
			return nil, fmt.Errorf("%s: excluded column %q does not exist", t.FullName(), name)
		}
		excluded[i] = true
	}
	key := t.PrimaryKey
	if len(key) == 0 {
		key = t.UniqueKey
	}
	for _, i := range key {
		if excluded[i] {
			return nil, fmt.Errorf("%s: column %s is in the table's key and cannot be excluded", t.FullName(), t.Columns[i].Name)
		}
	}
	if target.Mode == "" {
		target.Mode = ModeReplacing
		if len(key) == 0 {
			target.Mode = ModeChangelog
		}
	}
	if target.Mode != ModeReplacing && target.Mode != ModeChangelog {
		return nil, fmt.Errorf("%s: mode: want %s or %s, got %q", t.FullName(), ModeReplacing, ModeChangelog, target.Mode)
	}
	inKey := map[int]bool{}
	for _, i := range key {
		inKey[i] = true
	}
	target.SourceToTarget = make([]int, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		target.SourceToTarget[i] = -1
		if excluded[i] {
			continue
		}
		switch c.Name {
		case VersionColumn, IsDeletedColumn, OpColumn:
			return nil, fmt.Errorf("%s: column %s clashes with a column binlog2ch adds; exclude it or rename it in MySQL", t.FullName(), c.Name)
		}
		typ, err := mapType(c, caps, opts)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.FullName(), c.Name, err)
		}
		if c.Kind == KindChar && !charset.Supported(c.Charset) {
			return nil, fmt.Errorf("%s.%s: %w", t.FullName(), c.Name, &UnsupportedCharsetError{Charset: c.Charset})
		}
		if o, ok := to.Types[c.Name]; ok {
			over, err := ParseCHType(o)
			if err == nil {
				err = checkOverride(c, typ, over, caps)
			}
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t.FullName(), c.Name, err)
			}
			typ = over
		}
		// A sorting key column cannot be Nullable in ClickHouse; MySQL key
		// columns are NOT NULL anyway.
		typ.Nullable = c.Nullable && !inKey[i]
		if typ.Nullable && typ.Kind == CHArrayString {
			return nil, fmt.Errorf("%s.%s: set_as %s cannot tell NULL from the empty set in a nullable column; use set_as %s", t.FullName(), c.Name, SetAsArray, SetAsString)
		}
		target.SourceToTarget[i] = len(target.Columns)
		target.Columns = append(target.Columns, TargetColumn{Name: c.Name, Type: typ, Source: i})
	}
	target.Columns = append(target.Columns, TargetColumn{Name: VersionColumn, Type: CHType{Kind: CHUInt64}, Source: -1, Meta: MetaVersion})
	if target.Mode == ModeReplacing {
		if len(key) == 0 {
			return nil, fmt.Errorf("%s: mode %s needs a primary key or a NOT NULL unique key; use mode %s", t.FullName(), ModeReplacing, ModeChangelog)
		}
		target.Columns = append(target.Columns, TargetColumn{Name: IsDeletedColumn, Type: CHType{Kind: CHUInt8}, Source: -1, Meta: MetaIsDeleted})
		target.Engine = "ReplacingMergeTree(" + QuoteIdent(VersionColumn) + ")"
		if caps.IsDeleted {
			target.Engine = "ReplacingMergeTree(" + QuoteIdent(VersionColumn) + ", " + QuoteIdent(IsDeletedColumn) + ")"
		}
		for _, i := range key {
			target.OrderBy = append(target.OrderBy, t.Columns[i].Name)
		}
	} else {
		target.Columns = append(target.Columns, TargetColumn{Name: OpColumn,
			Type:   CHType{Kind: CHEnum8, Enum: []EnumValue{{"insert", int(OpInsert)}, {"update", int(OpUpdate)}, {"delete", int(OpDelete)}}},
			Source: -1, Meta: MetaOp})
		target.Engine = "MergeTree"
		for _, i := range key {
			target.OrderBy = append(target.OrderBy, t.Columns[i].Name)
		}
		if len(key) > 0 {
			target.OrderBy = append(target.OrderBy, VersionColumn)
		}
	}
	if to.Engine != "" {
		target.Engine = to.Engine
	}
	if opts.Cluster != nil {
		target.Engine = opts.Cluster.replicated(target.Engine)
	}
	if len(to.OrderBy) > 0 {
		for _, name := range to.OrderBy {
			if !target.hasColumn(name) {
				return nil, fmt.Errorf("%s: order_by column %q is not a replicated column", t.FullName(), name)
			}
		}
		target.OrderBy = to.OrderBy
	}
	return target, nil
}

func (t *Target) hasColumn(name string) bool {
	for _, c := range t.Columns {
		if c.Name == name {
			return true
		}
	}
	return false
}

// mapType is the ClickHouse type of a MySQL column, Nullable aside.
func mapType(c *Column, caps Capabilities, opts Options) (CHType, error) {
	signed := func(s, u CHKind) CHType {
		if c.Unsigned {
			return CHType{Kind: u}
		}
		return CHType{Kind: s}
	}
	switch c.Kind {
	case KindTinyInt:
		if c.Precision == 1 && opts.TinyInt1As == TinyInt1AsBool {
			if caps.Bool {
				return CHType{Kind: CHBool}, nil
			}
			return CHType{Kind: CHUInt8}, nil
		}
		return signed(CHInt8, CHUInt8), nil
	case KindSmallInt:
		return signed(CHInt16, CHUInt16), nil
	case KindMediumInt, KindInt:
		return signed(CHInt32, CHUInt32), nil
	case KindBigInt:
		return signed(CHInt64, CHUInt64), nil
	case KindDecimal:
		if c.Precision <= 38 || (c.Precision <= 76 && caps.Decimal256) {
			return CHType{Kind: CHDecimal, Precision: c.Precision, Scale: c.Scale}, nil
		}
		return CHType{Kind: CHString}, nil
	case KindFloat:
		return CHType{Kind: CHFloat32}, nil
	case KindDouble:
		return CHType{Kind: CHFloat64}, nil
	case KindBit:
		return CHType{Kind: CHUInt64}, nil
	case KindDate:
		if caps.Date32 {
			return CHType{Kind: CHDate32}, nil
		}
		return CHType{Kind: CHDate}, nil
	case KindDateTime, KindTimestamp:
		zone := "UTC"
		if c.Kind == KindDateTime {
			zone = opts.DateTimeZone.String()
		}
		if caps.DateTime64 {
			return CHType{Kind: CHDateTime64, Scale: c.Fsp, Zone: zone}, nil
		}
		if c.Fsp == 0 {
			return CHType{Kind: CHDateTime, Zone: zone}, nil
		}
		// No DateTime64: keep the fraction as text, "2024-02-29 23:59:58.123456"
		// (TIMESTAMP in UTC).
		return CHType{Kind: CHString}, nil
	case KindTime:
		if opts.TimeAs == TimeAsInt64Micros {
			return CHType{Kind: CHInt64}, nil
		}
		return CHType{Kind: CHString}, nil
	case KindYear:
		return CHType{Kind: CHUInt16}, nil
	case KindChar, KindBlob, KindJSON, KindGeometry:
		return CHType{Kind: CHString}, nil
	case KindBinary:
		if c.Length == 0 {
			return CHType{Kind: CHString}, nil
		}
		return CHType{Kind: CHFixedString, Length: c.Length}, nil
	case KindUUID:
		return CHType{Kind: CHUUID}, nil // every ClickHouse binlog2ch runs on (18.16) has it
	case KindInet4:
		if caps.IPv4 {
			return CHType{Kind: CHIPv4}, nil
		}
		return CHType{Kind: CHString}, nil // MariaDB's text, 1.2.3.4
	case KindInet6:
		if caps.IPv6 {
			return CHType{Kind: CHIPv6}, nil
		}
		return CHType{Kind: CHString}, nil // MariaDB's text, ::ffff:1.2.3.4
	case KindEnum:
		return enumType(c, caps, opts), nil
	case KindSet:
		if opts.SetAs == SetAsArray {
			return CHType{Kind: CHArrayString}, nil
		}
		return CHType{Kind: CHString}, nil
	}
	return CHType{}, fmt.Errorf("MySQL type %s has no ClickHouse mapping", c.Type)
}

// enumType keeps MySQL's indexes as the enum values, so the binlog's index
// is written as is; 0 is MySQL's ” for invalid values.
func enumType(c *Column, caps Capabilities, opts Options) CHType {
	if opts.EnumAs == EnumAsEnum && !needsEscape(c.Labels) {
		values := make([]EnumValue, 0, len(c.Labels)+1)
		hasEmpty := false
		for _, l := range c.Labels {
			hasEmpty = hasEmpty || l == ""
		}
		if !hasEmpty {
			values = append(values, EnumValue{"", 0})
		}
		for i, l := range c.Labels {
			values = append(values, EnumValue{l, i + 1})
		}
		switch {
		case len(c.Labels) <= 127:
			return CHType{Kind: CHEnum8, Enum: values}
		case len(c.Labels) <= 32767:
			return CHType{Kind: CHEnum16, Enum: values}
		}
	}
	if opts.EnumAs != EnumAsString && caps.LowCardinality {
		return CHType{Kind: CHLowCardinalityString}
	}
	return CHType{Kind: CHString}
}

// needsEscape reports whether a label needs a backslash escape in a
// ClickHouse Enum type. clickhouse-go v2.51 mis-parses (and panics on) Enum
// types with more than one escaped label, so such ENUMs become strings:
// the labels are kept exactly, only the storage is wider.
func needsEscape(labels []string) bool {
	for _, l := range labels {
		for i := 0; i < len(l); i++ {
			if c := l[i]; c == '\'' || c == '\\' || c < 0x20 {
				return true
			}
		}
	}
	return false
}

// CreateTableSQL is the CREATE TABLE statement for the target.
func (t *Target) CreateTableSQL() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(QuoteIdent(t.Database))
	b.WriteByte('.')
	b.WriteString(QuoteIdent(t.Name))
	b.WriteString(t.OnCluster())
	b.WriteString("\n(\n")
	for i, c := range t.Columns {
		b.WriteString("    ")
		b.WriteString(QuoteIdent(c.Name))
		b.WriteByte(' ')
		b.WriteString(c.Type.String())
		if i < len(t.Columns)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(")\nENGINE = ")
	b.WriteString(t.Engine)
	if t.PartitionBy != "" {
		b.WriteString("\nPARTITION BY ")
		b.WriteString(t.PartitionBy)
	}
	b.WriteString("\nORDER BY ")
	if len(t.OrderBy) == 0 {
		b.WriteString("tuple()")
	} else {
		b.WriteByte('(')
		for i, c := range t.OrderBy {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(QuoteIdent(c))
		}
		b.WriteByte(')')
	}
	if t.dedupWindow() {
		fmt.Fprintf(&b, "\nSETTINGS non_replicated_deduplication_window = %d", DedupWindow)
	}
	return b.String()
}

// DedupWindow is the non_replicated_deduplication_window of the plain
// MergeTree tables binlog2ch creates: the block ids of that many recent
// inserts are kept, so that a batch sent again with the same
// insert_deduplication_token is dropped (sink's batchToken). 1000 is
// ClickHouse's replicated_deduplication_window since 23.11 (ClickHouse
// #57335, up from 100): room for every batch a replay after a crash
// sends again, at a few kilobytes of ids per table. The setting's default
// is 0, off (MergeTreeSettings).
const DedupWindow = 1000

// dedupWindow reports whether the CREATE sets non_replicated_deduplication_window:
// a plain MergeTree-family engine on a server that has the setting
// (Replicated ones keep their own window), not one the user's engine
// option already gives settings to.
func (t *Target) dedupWindow() bool {
	name, _, _ := strings.Cut(t.Engine, "(")
	return t.Caps.DedupWindow && strings.HasSuffix(name, "MergeTree") && !strings.HasPrefix(name, "Replicated") &&
		!strings.Contains(strings.ToUpper(t.Engine), "SETTINGS")
}

// InsertSQL is the INSERT a batch for this table is prepared with: an
// explicit column list, which ClickHouse 18.16 needs.
func (t *Target) InsertSQL() string {
	// In a cluster, through the Distributed table, which routes each row
	// to its shard by the sharding key (inserts are synchronous, see
	// replicator's inserters).
	return t.insertInto(t.ReadName())
}

// InsertLocalSQL is the INSERT statement into the table itself, not its
// Distributed table: for rows sent straight to a shard.
func (t *Target) InsertLocalSQL() string { return t.insertInto(t.Name) }

func (t *Target) insertInto(table string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(QuoteIdent(t.Database))
	b.WriteByte('.')
	b.WriteString(QuoteIdent(table))
	b.WriteString(" (")
	for i, c := range t.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteIdent(c.Name))
	}
	b.WriteByte(')')
	return b.String()
}

// ColumnIndex is the index of the target column named name, or -1.
func (t *Target) ColumnIndex(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// ExprIdents are the words of a ClickHouse expression that may name a
// column: identifiers, bare or quoted, outside string literals. Function
// names are among them; they only match a column of the same name, which
// asks for one column more.
func ExprIdents(expr string) []string {
	var out []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '\'':
			i = skipQuoted(expr, i, '\'')
		case c == '`' || c == '"':
			end := skipQuoted(expr, i, c)
			inner := expr[i+1 : max(i+1, end-1)]
			out = append(out, strings.ReplaceAll(inner, `\`+string(c), string(c)))
			i = end
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(expr) && (expr[j] == '_' || expr[j] >= 'a' && expr[j] <= 'z' || expr[j] >= 'A' && expr[j] <= 'Z' || expr[j] >= '0' && expr[j] <= '9') {
				j++
			}
			out = append(out, expr[i:j])
			i = j
		case c >= '0' && c <= '9':
			for i < len(expr) && (expr[i] == '_' || expr[i] == '.' || expr[i] >= '0' && expr[i] <= '9' || expr[i] >= 'a' && expr[i] <= 'z' || expr[i] >= 'A' && expr[i] <= 'Z') {
				i++ // a number (1e3, 0x1F): not a name
			}
		default:
			i++
		}
	}
	return out
}

// skipQuoted returns the index past the quoted text starting at i.
func skipQuoted(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return len(s)
}
