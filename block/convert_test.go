package block

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/go-mysql-org/go-mysql/replication"
)

// oneColumn maps a table (id INT, c <columnType>) and returns a block.
func oneColumn(t *testing.T, columnType string, nullable bool, caps schema.Capabilities, opts schema.Options) *Block {
	t.Helper()
	tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0},
		Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "c", columnType, nullable)}}
	target, err := schema.Map(tb, "d", caps, opts, schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return NewBlock(target)
}

// value returns the converted value of column c in the block's last row,
// in its buffer representation.
func value(t *testing.T, b *Block) any {
	t.Helper()
	switch buf := b.cols[1].(type) {
	case *column.Str:
		s := buf.Strings()
		if buf.Nullable && buf.IsNull[len(s)-1] {
			return nil
		}
		return s[len(s)-1]
	case *column.Dec:
		n := buf.Len()
		if buf.Nullable && buf.IsNull[n-1] {
			return nil
		}
		return string(buf.AppendText(nil, n-1))
	case *column.Time:
		if buf.Nullable && buf.IsNull[len(buf.Vals)-1] {
			return nil
		}
		return time.UnixMicro(buf.Vals[len(buf.Vals)-1]).UTC()
	case *column.Num[int64]:
		if buf.Nullable && buf.IsNull[len(buf.Vals)-1] {
			return nil
		}
		return buf.Vals[len(buf.Vals)-1]
	case *column.Num[uint8]:
		return buf.Vals[len(buf.Vals)-1]
	case *column.Num[uint32]:
		return buf.Vals[len(buf.Vals)-1]
	case *column.Num[uint64]:
		return buf.Vals[len(buf.Vals)-1]
	case *column.Num[int8]:
		return buf.Vals[len(buf.Vals)-1]
	}
	t.Fatalf("unhandled buffer %T", b.cols[1])
	return nil
}

func TestInvalidDatePolicies(t *testing.T) {
	d := func(s string) time.Time { v, _ := time.Parse(time.DateTime, s); return v }
	cases := []struct {
		colType  string
		nullable bool
		policy   string
		in       any
		want     any // nil: NULL; error: the message wanted
		fixup    Fixup
	}{
		{"date", false, schema.InvalidClamp, "0000-00-00", d("1970-01-01 00:00:00"), FixupZeroDate},
		{"date", true, schema.InvalidNull, "0000-00-00", nil, FixupZeroDate},
		{"date", false, schema.InvalidNull, "0000-00-00", d("1970-01-01 00:00:00"), FixupZeroDate},
		{"date", true, schema.InvalidClamp, "2024-00-10", d("1970-01-01 00:00:00"), FixupInvalidDate},
		{"date", true, schema.InvalidClamp, "2023-02-29", d("1970-01-01 00:00:00"), FixupInvalidDate},
		{"date", true, schema.InvalidClamp, "1969-12-31", d("1970-01-01 00:00:00"), FixupDateOutOfRange},
		{"date", true, schema.InvalidClamp, "2200-01-01", d("2105-12-31 00:00:00"), FixupDateOutOfRange},
		{"date", true, schema.InvalidError, "0000-00-00", errors.New("d.t.c (date): zero date; set schema.invalid_dates to clamp or null"), 0},
		{"datetime", true, schema.InvalidError, "2024-02-30 00:00:00", errors.New("invalid date"), 0},
		{"datetime", true, schema.InvalidClamp, "0000-00-00 00:00:00", int64(0), FixupZeroDate},
		{"datetime", true, schema.InvalidNull, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), nil, FixupDateOutOfRange},
		{"datetime", true, schema.InvalidClamp, "3000-01-01 00:00:00", int64(49673*86400 - 1), FixupDateOutOfRange},
		{"timestamp", true, schema.InvalidClamp, "0000-00-00 00:00:00", int64(0), FixupZeroDate},
	}
	for _, c := range cases {
		opts := schema.DefaultOptions()
		opts.InvalidDates = c.policy
		b := oneColumn(t, c.colType, c.nullable, schema.ClickHouse18, opts)
		err := b.Append([]any{int32(1), c.in}, 1, schema.OpInsert)
		if want, ok := c.want.(error); ok {
			if err == nil || !strings.Contains(err.Error(), want.Error()) {
				t.Errorf("%s %v %s: got %v, want error %q", c.colType, c.in, c.policy, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v %s: %v", c.colType, c.in, c.policy, err)
			continue
		}
		if got := value(t, b); got != c.want {
			t.Errorf("%s %v %s: got %v, want %v", c.colType, c.in, c.policy, got, c.want)
		}
		if b.Fixups[c.fixup] != 1 {
			t.Errorf("%s %v %s: fix-ups %v, want one %s", c.colType, c.in, c.policy, b.Fixups, c.fixup)
		}
	}
}

func TestDateTimeZones(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	opts := schema.DefaultOptions()
	opts.DateTimeZone = berlin
	// DATETIME is wall clock in the configured zone, whatever the input form.
	for _, in := range []any{"2024-07-01 12:00:00", time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)} {
		b := oneColumn(t, "datetime", false, schema.ClickHouse18, opts)
		if err := b.Append([]any{int32(1), in}, 1, schema.OpInsert); err != nil {
			t.Fatal(err)
		}
		if got, want := value(t, b), time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC).Unix(); got != want {
			t.Errorf("DATETIME %v in Berlin: got %v, want %v", in, got, want)
		}
	}
	// TIMESTAMP is an instant: the zone option does not apply.
	b := oneColumn(t, "timestamp", false, schema.ClickHouse18, opts)
	if err := b.Append([]any{int32(1), "2024-07-01 12:00:00"}, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	if got, want := value(t, b), time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC).Unix(); got != want {
		t.Errorf("TIMESTAMP: got %v, want %v", got, want)
	}
	// DateTime64 keeps microseconds.
	b = oneColumn(t, "datetime(6)", false, schema.ClickHouseModern, schema.DefaultOptions())
	if err := b.Append([]any{int32(1), "2024-07-01 12:00:00.000001"}, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	if got, want := value(t, b), time.Date(2024, 7, 1, 12, 0, 0, 1000, time.UTC); got != want {
		t.Errorf("DateTime64(6): got %v, want %v", got, want)
	}
	// Without DateTime64 the fraction is kept as text, TIMESTAMP in UTC.
	b = oneColumn(t, "timestamp(3)", false, schema.ClickHouse18, schema.DefaultOptions())
	if err := b.Append([]any{int32(1), time.Date(2024, 7, 1, 14, 0, 0, 120_000_000, berlin)}, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	if got := value(t, b); got != "2024-07-01 12:00:00.120" {
		t.Errorf("TIMESTAMP(3) text: got %v", got)
	}
}

func TestIntegers(t *testing.T) {
	for _, c := range []struct {
		colType string
		in      any
		want    any
	}{
		// Without signedness metadata an UNSIGNED value arrives signed.
		{"int(10) unsigned", int32(-1), uint32(4294967295)},
		{"mediumint(8) unsigned", int32(-1), uint32(16777215)},
		{"bigint(20) unsigned", int64(-1), uint64(18446744073709551615)},
		{"bigint(20) unsigned", uint64(18446744073709551615), uint64(18446744073709551615)},
		{"tinyint(3) unsigned", int8(-56), uint8(200)},
		{"bit(64)", int64(-1), uint64(18446744073709551615)},
		{"tinyint(4)", int8(-128), int8(-128)},
	} {
		b := oneColumn(t, c.colType, false, schema.ClickHouse18, schema.DefaultOptions())
		if err := b.Append([]any{int32(1), c.in}, 1, schema.OpInsert); err != nil {
			t.Errorf("%s %v: %v", c.colType, c.in, err)
			continue
		}
		if got := value(t, b); got != c.want {
			t.Errorf("%s %v: got %v (%T), want %v", c.colType, c.in, got, got, c.want)
		}
	}
	for _, c := range []struct {
		colType string
		in      any
		want    string
	}{
		{"tinyint(4)", int16(300), "out of the ClickHouse column's range"},
		{"int(11)", "12", "want an integer"},
		{"int(11)", uint64(1 << 63), "want an integer"},
	} {
		b := oneColumn(t, c.colType, false, schema.ClickHouse18, schema.DefaultOptions())
		if err := b.Append([]any{int32(1), c.in}, 1, schema.OpInsert); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %v, want %q", c.colType, c.in, err, c.want)
		}
	}
	opts := schema.DefaultOptions()
	opts.TinyInt1As = schema.TinyInt1AsBool
	b := oneColumn(t, "tinyint(1)", false, schema.ClickHouse18, opts)
	if err := b.Append([]any{int32(1), int8(2)}, 1, schema.OpInsert); err == nil || !strings.Contains(err.Error(), "not 0 or 1") {
		t.Errorf("tinyint1_as bool with 2: %v", err)
	}
}

func TestStringsAndLabels(t *testing.T) {
	for _, c := range []struct {
		colType string
		opts    func(*schema.Options)
		in      any
		want    any
	}{
		{"binary(4)", nil, "A", "A\x00\x00\x00"},
		{"binary(4)", nil, []byte{0, 1}, "\x00\x01\x00\x00"},
		{"varbinary(10)", nil, []byte{0, 0xff, 0}, "\x00\xff\x00"},
		{"text", nil, []byte("emoji 🙂"), "emoji 🙂"},
		{"geometry", nil, []byte{0, 0, 0, 0, 1, 1}, "000000000101"},
		{"set('a','b','c')", nil, int64(5), "a,c"},
		{"set('a','b','c')", nil, int64(0), ""},
		{"enum('x','y')", func(o *schema.Options) { o.EnumAs = schema.EnumAsString }, int64(2), "y"},
		{"enum('x','y')", func(o *schema.Options) { o.EnumAs = schema.EnumAsString }, int64(0), ""},
		{"enum('x','y')", nil, int64(2), int8(2)},
		{"time(3)", nil, "-838:59:59", "-838:59:59.000"},
		{"time", func(o *schema.Options) { o.TimeAs = schema.TimeAsInt64Micros }, "-01:00:00.5", int64(-3600500000)},
		{"decimal(5,2)", nil, "-123.45", "-123.45"},
		{"decimal(65,30)", nil, "0.000000000000000000000000000001", "0.000000000000000000000000000001"},
	} {
		opts := schema.DefaultOptions()
		if c.opts != nil {
			c.opts(&opts)
		}
		b := oneColumn(t, c.colType, false, schema.ClickHouse18, opts)
		if err := b.Append([]any{int32(1), c.in}, 1, schema.OpInsert); err != nil {
			t.Errorf("%s %v: %v", c.colType, c.in, err)
			continue
		}
		if got := value(t, b); got != c.want {
			t.Errorf("%s %v: got %q, want %q", c.colType, c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		colType string
		in      any
		want    string
	}{
		{"binary(2)", "abc", "longer than BINARY(2)"},
		{"set('a','b')", int64(4), "bits beyond its 2 labels"},
		{"enum('a','b')", int64(3), "ENUM index out of range 0..2"},
		{"decimal(5,2)", "1234.5", "not a DECIMAL(5,2)"},
		{"decimal(5,2)", "1.234", "not a DECIMAL(5,2)"},
		{"decimal(5,2)", "1e5", "not a DECIMAL(5,2)"},
		{"json", &replication.JsonDiff{}, "want a string"},
		{"json", &BadValue{Msg: "partial JSON update cannot be applied"}, "d.t.c (json): partial JSON update cannot be applied"},
		{"int", &BadValue{Msg: "no value"}, "d.t.c (int): no value"},
		{"time", "25", "not a TIME value"},
	} {
		b := oneColumn(t, c.colType, false, schema.ClickHouse18, schema.DefaultOptions())
		if err := b.Append([]any{int32(1), c.in}, 1, schema.OpInsert); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %v, want %q", c.colType, c.in, err, c.want)
		}
	}
}

// TestAppendIsAtomic: a row that fails on its last column leaves no part
// of itself behind, and the error names table, column, type and value.
func TestAppendIsAtomic(t *testing.T) {
	tb := schematest.EveryType(t)
	target, err := schema.Map(tb, "x", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBlock(target)
	row := make([]any, len(tb.Columns))
	row[0] = int32(1)
	if err := b.Append(row, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	row[len(row)-1] = 42 // geometry wants bytes
	err = b.Append(row, 2, schema.OpInsert)
	var ce *ConvertError
	if !errors.As(err, &ce) || err.Error() != "shop.every_type.g (geometry): want geometry bytes: value 42 (int)" {
		t.Fatalf("got %v", err)
	}
	if b.Rows() != 1 {
		t.Fatalf("rows %d after a failed append, want 1", b.Rows())
	}
	for i, c := range b.cols {
		if c.Len() != 1 {
			t.Errorf("column %s holds %d values, want 1", target.Columns[i].Name, c.Len())
		}
	}
	if err := b.Append(row[:3], 3, schema.OpInsert); err == nil || !strings.Contains(err.Error(), "row has 3 values but the table has 31 columns") {
		t.Errorf("short row: %v", err)
	}
	row[len(row)-1] = nil
	row[0] = nil
	if err := b.Append(row, 3, schema.OpInsert); err == nil || !strings.Contains(err.Error(), "NULL in a column that is NOT NULL") {
		t.Errorf("NULL key: %v", err)
	}
}

func TestMetaColumns(t *testing.T) {
	b := oneColumn(t, "int(11)", false, schema.ClickHouse18, schema.DefaultOptions())
	for i, op := range []schema.Op{schema.OpInsert, schema.OpUpdate, schema.OpDelete} {
		if err := b.Append([]any{int32(i), int32(i)}, uint64(100+i), op); err != nil {
			t.Fatal(err)
		}
	}
	version := b.cols[2].(*column.Num[uint64]).Vals
	deleted := b.cols[3].(*column.Num[uint8]).Vals
	if version[0] != 100 || version[2] != 102 || deleted[0] != 0 || deleted[1] != 0 || deleted[2] != 1 {
		t.Errorf("version %v is_deleted %v", version, deleted)
	}
	b.Reset()
	if b.Rows() != 0 || b.Size() != 0 {
		t.Errorf("after Reset: %d rows, %d bytes", b.Rows(), b.Size())
	}
}

// TestTextInOtherCharsets: a text column's values arrive in its character
// set (as go-mysql hands them, string or []byte, and as raw binlog bytes)
// and land as UTF-8; bytes that are no character of the set are an error
// naming the column and the set, with the block unchanged. A BLOB beside
// it is not converted.
func TestTextInOtherCharsets(t *testing.T) {
	newBlock := func(cs string) *Block {
		t.Helper()
		c := schematest.Col(t, "c", "varchar(20)", true)
		c.Charset, c.BinlogType, c.BinlogMeta = cs, 15, 20 // VARCHAR(20) in the binlog
		tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0},
			Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), c}}
		target, err := schema.Map(tb, "d", schema.Capabilities{}, schema.DefaultOptions(), schema.TableOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return NewBlock(target)
	}
	b := newBlock("latin1")
	for _, v := range []any{"caf\xe9", []byte("caf\xe9")} {
		if err := b.Append([]any{int32(1), v}, 1, schema.OpInsert); err != nil {
			t.Fatal(err)
		}
		if got := value(t, b); got != "café" {
			t.Errorf("latin1 %q landed as %q", v, got)
		}
	}
	// The raw path: the VARCHAR's length byte, then its bytes.
	if _, err := b.raw[1]([]byte{4, 'c', 'a', 'f', 0xe9}); err != nil || value(t, b) != "café" {
		t.Errorf("raw latin1 landed as %q, %v", value(t, b), err)
	}
	a := newBlock("ascii")
	err := a.Append([]any{int32(1), "ok\x80"}, 1, schema.OpInsert)
	var ce *ConvertError
	if !errors.As(err, &ce) || ce.Column != "c" || !strings.Contains(err.Error(), "ascii") || a.Rows() != 0 {
		t.Errorf("invalid ascii: %v, %d rows; want a ConvertError naming c and ascii, no row", err, a.Rows())
	}
	if _, err := schema.Map(&schema.Table{Database: "d", Name: "t", Columns: []schema.Column{{Name: "c", Kind: schema.KindChar, Type: "varchar(5)", Charset: "big5"}}},
		"d", schema.Capabilities{}, schema.DefaultOptions(), schema.TableOptions{}); err == nil || !strings.Contains(err.Error(), "character set big5") {
		t.Errorf("a big5 column mapped: %v", err)
	}
}
