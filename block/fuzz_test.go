package block

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"
)

// fuzzColumns has a column of every MySQLKind, some several times
// (nullable or not, signed or not).
var fuzzColumns = []struct {
	name, columnType, dataType string
	nullable                   bool
}{
	{"id", "int(11)", "int", false},
	{"ti1", "tinyint(1)", "tinyint", true},
	{"tiu", "tinyint(3) unsigned", "tinyint", false},
	{"si", "smallint(6)", "smallint", true},
	{"miu", "mediumint(8) unsigned", "mediumint", true},
	{"iu", "int(10) unsigned", "int", false},
	{"bi", "bigint(20)", "bigint", true},
	{"biu", "bigint(20) unsigned", "bigint", true},
	{"d92", "decimal(9,2)", "decimal", true},
	{"d6530", "decimal(65,30) unsigned", "decimal", false},
	{"f", "float", "float", true},
	{"dbl", "double", "double", false},
	{"bit64", "bit(64)", "bit", true},
	{"dt", "date", "date", true},
	{"dtn", "date", "date", false},
	{"dtm", "datetime", "datetime", true},
	{"dtm6", "datetime(6)", "datetime", false},
	{"ts3", "timestamp(3)", "timestamp", true},
	{"ts", "timestamp", "timestamp", false},
	{"tm3", "time(3)", "time", true},
	{"tm", "time", "time", false},
	{"yr", "year(4)", "year", true},
	{"vc", "varchar(10)", "varchar", true},
	{"bin4", "binary(4)", "binary", true},
	{"vbin", "varbinary(10)", "varbinary", false},
	{"e", "enum('a','b','')", "enum", true},
	{"eq", "enum('it''s','x')", "enum", false}, // an escaped label: a String column
	{"st", "set('x','y','z')", "set", false},   // NOT NULL: set_as array allows no Nullable
	{"j", "json", "json", true},
	{"g", "point", "point", true},
}

// fuzzTargets maps the fuzz table for both server profiles, every
// invalid_dates policy, with the default options and with the others.
func fuzzTargets(tb testing.TB) []*schema.Target {
	table := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}}
	kinds := map[schema.MySQLKind]bool{}
	for _, fc := range fuzzColumns {
		c, err := schema.ParseColumnType(fc.columnType, fc.dataType)
		if err != nil {
			tb.Fatal(err)
		}
		c.Name, c.Nullable = fc.name, fc.nullable
		table.Columns = append(table.Columns, c)
		kinds[c.Kind] = true
	}
	for k := schema.KindTinyInt; k <= schema.KindGeometry; k++ {
		if !kinds[k] {
			tb.Fatalf("the fuzz table has no column of MySQLKind %d", k)
		}
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		tb.Fatal(err)
	}
	var targets []*schema.Target
	for _, caps := range []schema.Capabilities{schema.ClickHouse18, schema.ClickHouseModern} {
		for _, policy := range []string{schema.InvalidError, schema.InvalidClamp, schema.InvalidNull} {
			opts := schema.DefaultOptions()
			opts.InvalidDates = policy
			others := opts
			others.DateTimeZone = ny
			others.TimeAs = schema.TimeAsInt64Micros
			others.EnumAs = schema.EnumAsLowCard
			others.SetAs = schema.SetAsArray
			others.TinyInt1As = schema.TinyInt1AsBool
			asString := opts
			asString.EnumAs = schema.EnumAsString
			for _, o := range []schema.Options{opts, others, asString} {
				target, err := schema.Map(table, "d", caps, o, schema.TableOptions{})
				if err != nil {
					tb.Fatalf("Map(%s, %+v): %v", caps.Version, o, err)
				}
				targets = append(targets, target)
			}
		}
	}
	return targets
}

// fuzzInput is what one fuzz call provides to make row values from.
type fuzzInput struct {
	s   string
	b   []byte
	i   int64
	u   uint64
	fl  float64
	sel []byte
}

func fuzzAbs(i int64) uint64 {
	if i < 0 {
		return uint64(-(i + 1)) + 1
	}
	return uint64(i)
}

// natural is a value of the type go-mysql decodes column c to, from in:
// often valid, sometimes out of range or an invalid date.
func (in *fuzzInput) natural(c *schema.Column) any {
	a := fuzzAbs(in.i)
	switch c.Kind {
	case schema.KindTinyInt:
		if c.Precision == 1 && in.u%4 != 3 {
			return int8(in.u % 2) // a boolean, for tinyint1_as bool
		}
		return int8(in.i)
	case schema.KindSmallInt:
		return int16(in.i)
	case schema.KindMediumInt:
		return int32(in.i % (1 << 23))
	case schema.KindInt:
		return int32(in.i)
	case schema.KindBigInt:
		if c.Unsigned && in.u%2 == 0 {
			return in.u
		}
		return in.i
	case schema.KindDecimal:
		if len(in.s) > 0 && (in.s[0] == '-' || in.s[0] >= '0' && in.s[0] <= '9') {
			return in.s
		}
		return fmt.Sprintf("%d.%02d", in.i%100000000, in.u%100)
	case schema.KindFloat:
		return float32(in.fl)
	case schema.KindDouble:
		return in.fl
	case schema.KindBit:
		return int64(in.u)
	case schema.KindYear:
		return int(in.i%300) + 1900
	case schema.KindDate:
		if in.u%5 == 0 {
			return time.Unix(in.i%(1<<40), 0).UTC()
		}
		return fmt.Sprintf("%04d-%02d-%02d", a%10000, a/10000%14, a/140000%33)
	case schema.KindDateTime, schema.KindTimestamp:
		if in.u%5 == 0 {
			return time.Unix(in.i%(1<<40), int64(in.u%1e9)).UTC()
		}
		s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", a%10000, a/10000%14, a/140000%33, in.u%25, in.u/25%61, in.u/1525%61)
		if n := int(in.u / 93025 % 7); n > 0 {
			s += "." + fmt.Sprintf("%06d", in.u/651175%1000000)[:n]
		}
		return s
	case schema.KindTime:
		s := fmt.Sprintf("%02d:%02d:%02d", a%839, a/839%60, a/50340%60)
		if in.i < 0 {
			s = "-" + s
		}
		if n := int(in.u % 7); n > 0 {
			s += "." + fmt.Sprintf("%06d", in.u/7%1000000)[:n]
		}
		return s
	case schema.KindChar, schema.KindJSON:
		return in.s
	case schema.KindBinary:
		return in.b
	case schema.KindBlob, schema.KindGeometry:
		if in.u%2 == 0 {
			return in.b
		}
		return in.s
	case schema.KindEnum:
		return int64(in.u % uint64(len(c.Labels)+2))
	case schema.KindSet:
		return int64(in.u % (1 << (len(c.Labels) + 1)))
	}
	return nil
}

// wild is a value chosen by k, of any type, for any column.
func (in *fuzzInput) wild(c *schema.Column, k byte) any {
	switch k % 18 {
	case 0:
		return in.s
	case 1:
		return in.b
	case 2:
		return in.i
	case 3:
		return in.u
	case 4:
		return float32(in.fl)
	case 5:
		return in.fl
	case 6:
		return time.Unix(in.i, int64(in.u%1e9)) // any instant, any year
	case 7:
		return nil
	case 8:
		return int8(in.i)
	case 9:
		return int16(in.i)
	case 10:
		return int32(in.i)
	case 11:
		return int(in.i)
	case 12:
		return uint8(in.u)
	case 13:
		return decimal.New(in.i, int32(in.u%81)-40)
	case 14:
		return struct{}{}
	case 15:
		return &replication.JsonDiff{}
	case 16:
		return []any{in.s}
	}
	return in.natural(c)
}

// fuzzCheckBlock checks the block's columns agree with each other and with
// Rows, and hands each to a column that counts the values.
func fuzzCheckBlock(t *testing.T, b *Block) {
	t.Helper()
	rows := b.Rows()
	checkNulls := func(i int, n *column.Nulls, l int) {
		if n.Nullable != b.target.Columns[i].Type.Nullable || (n.Nullable && len(n.IsNull) != l) {
			t.Fatalf("column %s: %d null flags for %d values (nullable %v)", b.target.Columns[i].Name, len(n.IsNull), l, n.Nullable)
		}
	}
	// The records (each value after its length) are every byte held.
	checkStr := func(i int, s *column.Str) {
		held := 0
		for _, v := range s.Strings() {
			held += len(binary.AppendUvarint(nil, uint64(len(v)))) + len(v)
		}
		if held != s.BytesHeld() {
			t.Fatalf("column %s: %d values' records are %d bytes, the arena holds %d", b.target.Columns[i].Name, s.Len(), held, s.BytesHeld())
		}
	}
	for i, c := range b.cols {
		if c.Len() != rows {
			t.Fatalf("column %s holds %d values, the block %d rows", b.target.Columns[i].Name, c.Len(), rows)
		}
		switch c := c.(type) {
		case *column.Str:
			checkStr(i, c)
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Arr:
			checkStr(i, &c.Str)
			if rows > 0 && c.RowEnds[rows-1] != c.Str.Len() {
				t.Fatalf("column %s: rows end at element %d of %d", b.target.Columns[i].Name, c.RowEnds[rows-1], c.Str.Len())
			}
		case *column.Dec:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Time:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[int8]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[int16]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[int32]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[int64]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[uint8]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[uint16]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[uint32]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[uint64]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[float32]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[float64]:
			checkNulls(i, &c.Nulls, c.Len())
		case *column.Num[bool]:
			checkNulls(i, &c.Nulls, c.Len())
		default:
			t.Fatalf("column %s: unexpected buffer %T", b.target.Columns[i].Name, c)
		}
		var got fuzzCountColumn
		if err := c.AppendTo(&got); err != nil {
			t.Fatalf("column %s: hand-off: %v", b.target.Columns[i].Name, err)
		}
		if got.n != rows {
			t.Fatalf("column %s: handed off %d values for %d rows", b.target.Columns[i].Name, got.n, rows)
		}
	}
	_ = b.Size()
}

// fuzzCountColumn is a driver.BatchColumn that counts what it is given.
type fuzzCountColumn struct{ n int }

func (c *fuzzCountColumn) Append(v any) error {
	c.n += reflect.ValueOf(v).Len()
	return nil
}

func (c *fuzzCountColumn) AppendRow(any) error {
	c.n++
	return nil
}

// fuzzAppendChecker appends rows to a block and checks what each Append
// did.
type fuzzAppendChecker struct {
	t *testing.T
	b *Block
}

func (a *fuzzAppendChecker) append(row []any, version uint64, op schema.Op) {
	t, b := a.t, a.b
	t.Helper()
	before := b.Rows()
	err := b.Append(row, version, op)
	if err != nil {
		_ = err.Error()
		if b.Rows() != before {
			t.Fatalf("%s: Append failed (%v) but the block went from %d to %d rows", b.target.FullName(), err, before, b.Rows())
		}
	} else if b.Rows() != before+1 {
		t.Fatalf("%s: Append succeeded but the block went from %d to %d rows", b.target.FullName(), before, b.Rows())
	}
	fuzzCheckBlock(t, b)
}

func FuzzBlockAppend(f *testing.F) {
	targets := fuzzTargets(f)
	// First, natural rows every target accepts: dates 2000-06-15, booleans,
	// small enum and set values.
	f.Add("12.5", []byte{0xde, 0xad}, int64(2162000), uint64(1), 1.5, []byte{})
	f.Add("12.5", []byte{0xde, 0xad}, int64(20240229), uint64(42), 1.5, []byte{})
	f.Add("2024-02-29 12:34:56.5", []byte("ab"), int64(7), uint64(5), -0.25, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Add("", []byte{}, int64(0), uint64(0), 0.0, []byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})
	f.Add("-9999999.99", []byte("toolong!"), int64(-1), uint64(math.MaxUint64), math.Inf(1), []byte{17, 6, 6, 6, 13, 13, 13, 13, 13, 13})
	f.Add("not a value", []byte{0}, int64(math.MinInt64), uint64(1<<63), math.NaN(), []byte{2, 3, 8, 9, 10, 11, 12, 0, 1})
	f.Add("{\"k\":1}", []byte{1, 2, 3, 4}, int64(math.MaxInt64), uint64(255), 3.4e38, []byte{15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15})
	f.Add("99999999999999999999999999999999999.999999999999999999999999999999", []byte("x"), int64(1400000), uint64(24*93025+1), 1e300, []byte{})
	f.Add("0000-00-00 00:00:00", []byte{}, int64(21051231), uint64(1), 0.1, []byte{6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6})
	// A zero date fixed up (clamp/null) in a row a later column rejects:
	// columns dt and dtn get 0000-00-00, tm a number where TIME wants text
	// (see TestFuzzFindingFixupsOfRejectedRow).
	f.Add("0", []byte{}, int64(0), uint64(1), 0.0, []byte{17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 2})
	f.Fuzz(func(t *testing.T, s string, b []byte, i int64, u uint64, fl float64, sel []byte) {
		in := &fuzzInput{s: s, b: b, i: i, u: u, fl: fl, sel: sel}
		for _, target := range targets {
			cols := target.Source.Columns
			a := &fuzzAppendChecker{t: t, b: NewBlock(target)}
			natural := make([]any, len(cols))
			mixed := make([]any, len(cols))
			wild := make([]any, len(cols))
			nils := make([]any, len(cols))
			sparse := make([]any, len(cols)) // NULL where the column allows it
			for j := range cols {
				natural[j] = in.natural(&cols[j])
				mixed[j] = natural[j]
				if j < len(sel) {
					mixed[j] = in.wild(&cols[j], sel[j])
				}
				wild[j] = in.wild(&cols[j], byte(j)+byte(i))
				if !cols[j].Nullable {
					sparse[j] = natural[j]
				}
			}
			natural[0] = int32(1)
			nils[0] = int32(2)
			sparse[0] = int32(3)
			a.append(natural, 1, schema.OpInsert)
			a.append(mixed, 1, schema.OpInsert)
			a.append(wild, 1, schema.OpInsert)
			a.append(nils, 1, schema.OpInsert)
			a.append(sparse, 1, schema.OpInsert)
			a.append(natural[:len(natural)-1], 1, schema.OpInsert)
			a.append(append(natural[:len(natural):len(natural)], nil), 1, schema.OpInsert)
			a.append(nil, 1, schema.OpInsert)
			a.append(mixed, 2, schema.OpDelete)
			a.append(natural, 3, schema.OpUpdate)
			b := a.b
			b.Reset()
			if b.Rows() != 0 {
				t.Fatalf("Reset left %d rows", b.Rows())
			}
			fuzzCheckBlock(t, b)
			a.append(natural, 1, schema.OpInsert)
		}
	})
}

// TestFuzzFindingFixupsOfRejectedRow: Block.Append promises an unchanged
// block on error, but the invalid_dates fix-ups of the columns before the
// failing one stay counted in Block.Fixups, so the metric counts values
// that were never written.
func TestFixupsOfRejectedRowAreNotCounted(t *testing.T) {
	table := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}}
	for _, c := range [][2]string{{"id", "int"}, {"dt", "date"}, {"dtm", "datetime"}, {"x", "int"}} {
		col, err := schema.ParseColumnType(c[1], c[1])
		if err != nil {
			t.Fatal(err)
		}
		col.Name, col.Nullable = c[0], c[0] != "id"
		table.Columns = append(table.Columns, col)
	}
	for _, caps := range []schema.Capabilities{schema.ClickHouse18, schema.ClickHouseModern} {
		for _, policy := range []string{schema.InvalidClamp, schema.InvalidNull} {
			opts := schema.DefaultOptions()
			opts.InvalidDates = policy
			target, err := schema.Map(table, "d", caps, opts, schema.TableOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := NewBlock(target)
			if err := b.Append([]any{int32(1), "0000-00-00", "2024-02-30 00:00:00", int32(7)}, 1, schema.OpInsert); err != nil {
				t.Fatalf("%s %s: %v", caps.Version, policy, err)
			}
			want := [numFixups]uint64{FixupZeroDate: 1, FixupInvalidDate: 1}
			if b.Rows() != 1 || b.Fixups != want {
				t.Fatalf("%s %s: %d rows, fix-ups %v; want 1 row, %v", caps.Version, policy, b.Rows(), b.Fixups, want)
			}
			err = b.Append([]any{int32(2), "0000-00-00", "2024-02-30 00:00:00", "not an int"}, 2, schema.OpInsert)
			if err == nil || !strings.Contains(err.Error(), "d.t.x") {
				t.Fatalf("%s %s: Append of a bad int: %v, want an error naming d.t.x", caps.Version, policy, err)
			}
			if b.Rows() != 1 {
				t.Fatalf("%s %s: the rejected row changed the block to %d rows", caps.Version, policy, b.Rows())
			}
			if b.Fixups != want {
				t.Errorf("%s %s: fix-ups %v after a rejected row, want %v", caps.Version, policy, b.Fixups, want)
			}
		}
	}
}
