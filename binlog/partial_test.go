package binlog

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/jsondiff"
	"github.com/binlog2ch/binlog2ch/jsondiff/jsondifftest"
)

// Partial JSON updates exist only in MySQL 8, and the development machine
// runs MariaDB only: these tests build the binlog events byte by byte, as
// MySQL writes them (pack_row in sql/rpl_record.cc, Json_diff_vector in
// sql/json_diff.cc, binary JSON in sql-common/json_binary.cc), and feed
// them through the parser the binlog connection uses (newBinlogParser,
// with the RowsDecoder installed).

// A column of a test table.
type tcol struct {
	name string
	typ  byte
	meta uint16
}

// Column values in row images: int32 (INT), string (VARCHAR), jdoc (a
// JSON document), diffs (a partial JSON value), vector (a partial JSON
// value's raw diff vector), nil (NULL).
type (
	jdoc   struct{ v any }
	vector []byte
	diffs  = jsondifftest.Diffs
)

// rowImage is a full row image. ai: an after image of a
// PARTIAL_UPDATE_ROWS_EVENT, which starts with value_options and, when a
// JSON column holds diffs, partial_bits.
func rowImage(cols []tcol, vals []any, ai bool) []byte {
	var b []byte
	if ai {
		var bits []byte
		partial := false
		j := 0
		for i, c := range cols {
			if c.typ != mysql.MYSQL_TYPE_JSON {
				continue
			}
			if j%8 == 0 {
				bits = append(bits, 0)
			}
			switch vals[i].(type) {
			case diffs, vector:
				bits[j/8] |= 1 << (j % 8)
				partial = true
			}
			j++
		}
		if partial {
			b = append(append(b, 1), bits...)
		} else {
			b = append(b, 0)
		}
	}
	nulls := make([]byte, (len(cols)+7)/8)
	for i, v := range vals {
		if v == nil {
			nulls[i/8] |= 1 << (i % 8)
		}
	}
	b = append(b, nulls...)
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
		case int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		case string:
			b = append(append(b, byte(len(x))), x...)
		case jdoc:
			d := jsondifftest.Binary(x.v)
			b = append(binary.LittleEndian.AppendUint32(b, uint32(len(d))), d...)
		case diffs:
			d := vector(x.Vector())
			b = append(binary.LittleEndian.AppendUint32(b, uint32(len(d))), d...)
		case vector:
			b = append(binary.LittleEndian.AppendUint32(b, uint32(len(x))), x...)
		default:
			panic("rowImage: unsupported value")
		}
	}
	return b
}

func eventBytes(typ replication.EventType, body []byte) []byte {
	b := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body))
	b[4] = byte(typ)
	binary.LittleEndian.PutUint32(b[5:], 1)
	binary.LittleEndian.PutUint32(b[9:], uint32(len(b)+len(body)))
	binary.LittleEndian.PutUint32(b[13:], 1000)
	return append(b, body...)
}

// formatDescription is a MySQL 8 FORMAT_DESCRIPTION_EVENT without
// checksums.
func formatDescription() []byte {
	b := binary.LittleEndian.AppendUint16(nil, 4)
	v := make([]byte, 50)
	copy(v, "8.0.36")
	b = append(append(b, v...), 0, 0, 0, 0, replication.EventHeaderSize)
	for typ := 1; typ <= 42; typ++ {
		l := byte(10)
		if typ == int(replication.TABLE_MAP_EVENT) {
			l = 8
		}
		b = append(b, l)
	}
	b = append(b, byte(replication.BINLOG_CHECKSUM_ALG_OFF), 0, 0, 0, 0)
	return eventBytes(replication.FORMAT_DESCRIPTION_EVENT, b)
}

const testTableID = 77

func tableMapBytes(db, table string, cols []tcol) []byte {
	b := []byte{testTableID, 0, 0, 0, 0, 0, 0, 0}
	b = append(append(append(b, byte(len(db))), db...), 0)
	b = append(append(append(b, byte(len(table))), table...), 0)
	b = append(b, jsondifftest.LenEnc(len(cols))...)
	var meta []byte
	for _, c := range cols {
		b = append(b, c.typ)
		switch c.typ {
		case mysql.MYSQL_TYPE_JSON:
			meta = append(meta, byte(c.meta))
		case mysql.MYSQL_TYPE_VARCHAR:
			meta = binary.LittleEndian.AppendUint16(meta, c.meta)
		}
	}
	b = append(append(b, jsondifftest.LenEnc(len(meta))...), meta...)
	b = append(b, bytes.Repeat([]byte{0xff}, (len(cols)+7)/8)...)
	var names []byte
	for _, c := range cols {
		names = append(append(names, byte(len(c.name))), c.name...)
	}
	b = append(append(append(b, replication.TABLE_MAP_OPT_META_COLUMN_NAME), jsondifftest.LenEnc(len(names))...), names...)
	return eventBytes(replication.TABLE_MAP_EVENT, b)
}

// updateBytes is an update rows event (v2) of full images: rows holds
// before and after values in turn.
func updateBytes(typ replication.EventType, cols []tcol, rows ...[]any) []byte {
	b := []byte{testTableID, 0, 0, 0, 0, 0, 0, 0, 2, 0}
	b = append(b, jsondifftest.LenEnc(len(cols))...)
	full := bytes.Repeat([]byte{0xff}, (len(cols)+7)/8)
	b = append(append(b, full...), full...)
	for i, r := range rows {
		b = append(b, rowImage(cols, r, i%2 == 1 && typ == replication.PARTIAL_UPDATE_ROWS_EVENT)...)
	}
	return eventBytes(typ, b)
}

// decodeRows parses a table map and a rows event with the binlog
// connection's parser and returns the rows event.
func decodeRows(t *testing.T, raw bool, tableMap, rows []byte) (*replication.RowsEvent, error) {
	t.Helper()
	return decodeRowsWith(t, NewParser(mysql.MySQLFlavor, raw), tableMap, rows)
}

func decodeRowsWith(t *testing.T, p *replication.BinlogParser, tableMap, rows []byte) (*replication.RowsEvent, error) {
	t.Helper()
	for _, ev := range [][]byte{formatDescription(), tableMap} {
		if _, err := p.Parse(ev); err != nil {
			t.Fatalf("parse %v: %v", replication.EventType(ev[4]), err)
		}
	}
	ev, err := p.Parse(rows)
	if err != nil {
		return nil, err
	}
	return ev.Event.(*replication.RowsEvent), nil
}

var jsonTable = []tcol{
	{"id", mysql.MYSQL_TYPE_LONG, 0},
	{"j", mysql.MYSQL_TYPE_JSON, 4},
	{"k", mysql.MYSQL_TYPE_JSON, 4},
	{"n", mysql.MYSQL_TYPE_JSON, 4},
	{"s", mysql.MYSQL_TYPE_VARCHAR, 80},
}

// datetime packs a DATETIME as MySQL does in a JSON opaque value.
func datetime(y, mo, d, h, mi, s, us int64) jsondifftest.Opaque {
	v := ((((y*13+mo)<<5|d)<<17 | h<<12 | mi<<6 | s) << 24) | us
	return jsondifftest.Opaque{Type: mysql.MYSQL_TYPE_DATETIME, Data: binary.LittleEndian.AppendUint64(nil, uint64(v))}
}

// partialCase is a row of an UPDATE: the before image, the after image
// with diffs as MySQL logs the UPDATE with PARTIAL_JSON, and the after
// image with the whole documents, written by hand from MySQL's semantics
// for the statement.
type partialCase struct {
	before, partial, whole []any
}

var partialCases = []partialCase{
	{
		// UPDATE t SET j = JSON_SET(JSON_REMOVE(JSON_INSERT(JSON_REPLACE(j,
		//   '$.name', 'gadget'), '$.dims.d', 30), '$.tags[0]'), ...), k = '{"v": 2}', s = 'y'
		before: []any{int32(1),
			jdoc{jsondifftest.Obj{{"name", "widget"}, {"tags", []any{"a", "b"}}, {"dims", jsondifftest.Obj{{"w", 10}, {"h", 20}}}, {`k"q`, 1}}},
			jdoc{jsondifftest.Obj{{"v", 1}}}, nil, "x"},
		partial: []any{int32(1),
			diffs{
				{Op: jsondiff.Replace, Path: "$.name", V: "gadget"},
				{Op: jsondiff.Insert, Path: "$.dims.d", V: 30},
				{Op: jsondiff.Remove, Path: "$.tags[0]"},
				{Op: jsondiff.Insert, Path: "$.tags[5]", V: "z"}, // past the end: appended
				{Op: jsondiff.Replace, Path: `$."k\"q"`, V: jsondifftest.Obj{{"x", []any{1, 2}}}},
				{Op: jsondiff.Insert, Path: `$."a b"`, V: true},
			},
			jdoc{jsondifftest.Obj{{"v", 2}}}, nil, "y"},
		whole: []any{int32(1),
			jdoc{jsondifftest.Obj{{"a b", true}, {"dims", jsondifftest.Obj{{"d", 30}, {"h", 20}, {"w", 10}}}, {`k"q`, jsondifftest.Obj{{"x", []any{1, 2}}}}, {"name", "gadget"}, {"tags", []any{"b", "z"}}}},
			jdoc{jsondifftest.Obj{{"v", 2}}}, nil, "y"},
	},
	{
		// Arrays: JSON_ARRAY_INSERT, [last], [last-N], nested cells; and a
		// second partial column whose inserted keys sort where go-mysql
		// puts them; a NULL becoming a document.
		before: []any{int32(2),
			jdoc{[]any{1, []any{2, 3}, jsondifftest.Obj{{"a", nil}}, "s", 4.5}},
			jdoc{jsondifftest.Obj{{"b", 1}, {"a!", 2}, {"a", 3}, {"<", 4}, {"é", 5}, {"aa", 6}}},
			nil, "p"},
		partial: []any{int32(2),
			diffs{
				{Op: jsondiff.Insert, Path: "$[0]", V: "first"},
				{Op: jsondiff.Replace, Path: "$[2][last]", V: 30},
				{Op: jsondiff.Remove, Path: "$[last]"},
				{Op: jsondiff.Insert, Path: "$[last-1]", V: -7},
				{Op: jsondiff.Replace, Path: "$[4].a", V: jsondifftest.Obj{{"b", []any{}}}},
				{Op: jsondiff.Insert, Path: "$[2][1]", V: 25},
			},
			diffs{
				{Op: jsondiff.Insert, Path: `$."a "`, V: 7},
				{Op: jsondiff.Insert, Path: `$.">"`, V: 8},
				{Op: jsondiff.Remove, Path: "$.b"},
				{Op: jsondiff.Replace, Path: "$.é", V: "x"},
			},
			jdoc{jsondifftest.Obj{{"new", jsondifftest.Obj{}}}}, "p"},
		whole: []any{int32(2),
			jdoc{[]any{"first", 1, []any{2, 25, 30}, -7, jsondifftest.Obj{{"a", jsondifftest.Obj{{"b", []any{}}}}}, "s"}},
			jdoc{jsondifftest.Obj{{"a!", 2}, {"a", 3}, {"<", 4}, {"é", "x"}, {"aa", 6}, {"a ", 7}, {">", 8}}},
			jdoc{jsondifftest.Obj{{"new", jsondifftest.Obj{}}}}, "p"},
	},
	{
		// An empty diff vector (another column changed); values of every
		// kind; a value inserted, then changed inside.
		before: []any{int32(3),
			jdoc{jsondifftest.Obj{{"keep", []any{1, "two"}}}},
			jdoc{jsondifftest.Obj{{"a", 1}}},
			jdoc{"just a string"}, "q"},
		partial: []any{int32(3),
			diffs{},
			diffs{
				{Op: jsondiff.Insert, Path: "$.d", V: 1.5},
				{Op: jsondiff.Insert, Path: "$.u", V: uint64(math.MaxUint64)},
				{Op: jsondiff.Insert, Path: "$.i", V: -9000000000},
				{Op: jsondiff.Insert, Path: "$.s", V: "line\n\"q\"<&>\u2028\\"},
				{Op: jsondiff.Insert, Path: "$.t", V: datetime(2024, 3, 5, 6, 7, 8, 9)},
				{Op: jsondiff.Replace, Path: "$.a", V: []any{true, false, nil, 1e21, 0.000001, math.Copysign(0, -1)}},
				{Op: jsondiff.Insert, Path: "$.o", V: jsondifftest.Obj{{"x", jsondifftest.Obj{}}}},
				{Op: jsondiff.Insert, Path: "$.o.x.y", V: 100000},
			},
			jdoc{"just a string"}, "r"},
		whole: []any{int32(3),
			jdoc{jsondifftest.Obj{{"keep", []any{1, "two"}}}},
			jdoc{jsondifftest.Obj{{"a", []any{true, false, nil, 1e21, 0.000001, math.Copysign(0, -1)}}, {"d", 1.5}, {"u", uint64(math.MaxUint64)}, {"i", -9000000000}, {"s", "line\n\"q\"<&>\u2028\\"}, {"t", datetime(2024, 3, 5, 6, 7, 8, 9)}, {"o", jsondifftest.Obj{{"x", jsondifftest.Obj{{"y", 100000}}}}}}},
			jdoc{"just a string"}, "r"},
	},
}

// decodeBoth decodes partialCases logged with PARTIAL_JSON and logged
// with whole documents, each with a parser from newParser.
func decodeBoth(t *testing.T, newParser func() *replication.BinlogParser) (got, want *replication.RowsEvent) {
	t.Helper()
	var partialRows, wholeRows [][]any
	for _, c := range partialCases {
		partialRows = append(partialRows, c.before, c.partial)
		wholeRows = append(wholeRows, c.before, c.whole)
	}
	tm := tableMapBytes("d", "t", jsonTable)
	got, err := decodeRowsWith(t, newParser(), tm, updateBytes(replication.PARTIAL_UPDATE_ROWS_EVENT, jsonTable, partialRows...))
	if err != nil {
		t.Fatal(err)
	}
	want, err = decodeRowsWith(t, newParser(), tm, updateBytes(replication.UPDATE_ROWS_EVENTv2, jsonTable, wholeRows...))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("%d row images, want %d", len(got.Rows), len(want.Rows))
	}
	return got, want
}

// TestPartialJSONUpdates: an UPDATE logged with PARTIAL_JSON decodes to
// the rows the same UPDATE logged with whole documents decodes to, byte
// for byte.
func TestPartialJSONUpdates(t *testing.T) {
	got, want := decodeBoth(t, func() *replication.BinlogParser { return NewParser(mysql.MySQLFlavor, true) })
	for i := range want.Rows {
		if !reflect.DeepEqual(got.Rows[i], want.Rows[i]) {
			t.Errorf("row image %d:\n got %#v\nwant %#v", i, got.Rows[i], want.Rows[i])
		}
	}
	// The same documents, as written by hand (go-mysql's rendering: keys
	// in the order of their encoded text, '<' as \u003c).
	for _, c := range []struct {
		row, col int
		want     string
	}{
		{1, 1, `{"a b":true,"dims":{"d":30,"h":20,"w":10},"k\"q":{"x":[1,2]},"name":"gadget","tags":["b","z"]}`},
		{3, 1, `["first",1,[2,25,30],-7,{"a":{"b":[]}},"s"]`},
		{3, 2, `{"\u003c":4,"\u003e":8,"a ":7,"a!":2,"a":3,"aa":6,"é":"x"}`},
		{5, 1, `{"keep":[1,"two"]}`},
		{5, 2, `{"a":[true,false,null,1e+21,0.000001,-0],"d":1.5,"i":-9000000000,"o":{"x":{"y":100000}},"s":"line\n\"q\"\u003c\u0026\u003e\u2028\\","t":"2024-03-05 06:07:08.000009","u":18446744073709551615}`},
	} {
		if got := got.Rows[c.row][c.col]; got != c.want {
			t.Errorf("row image %d, column %d: got %#v, want %s", c.row, c.col, got, c.want)
		}
	}
}

// TestPartialUpdateOfRawTable: with PARTIAL_JSON, MySQL logs every UPDATE
// as a PARTIAL_UPDATE_ROWS_EVENT, tables without JSON columns too; their
// after images start with value_options, which the rows left as bytes must
// not keep.
func TestPartialUpdateOfRawTable(t *testing.T) {
	cols := []tcol{{"id", mysql.MYSQL_TYPE_LONG, 0}, {"v", mysql.MYSQL_TYPE_VARCHAR, 40}}
	rows := [][]any{{int32(1), "a"}, {int32(1), "b"}, {int32(2), nil}, {int32(2), "c"}}
	tm := tableMapBytes("d", "r", cols)
	for _, raw := range []bool{true, false} {
		got, err := decodeRows(t, raw, tm, updateBytes(replication.PARTIAL_UPDATE_ROWS_EVENT, cols, rows...))
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeRows(t, raw, tm, updateBytes(replication.UPDATE_ROWS_EVENTv2, cols, rows...))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Rows, want.Rows) {
			t.Errorf("raw %v: got %#v, want %#v", raw, got.Rows, want.Rows)
		}
		if _, isRaw := got.Rows[0][0].(RawRows); isRaw != raw {
			t.Errorf("raw %v: rows %#v", raw, got.Rows)
		}
	}
}

// TestPartialJSONNotApplied: a diff MySQL's replica would reject leaves a
// block.BadValue in the after image (the writer stops on it, naming the
// table, the column and the position), never a guess; the other values
// are decoded.
func TestPartialJSONNotApplied(t *testing.T) {
	obj := jdoc{jsondifftest.Obj{{"a", 1}, {"arr", []any{1}}}}
	for _, c := range []struct {
		name   string
		before any
		after  any
		want   string
	}{
		{"replace a missing member", obj, diffs{{Op: jsondiff.Replace, Path: "$.b", V: 1}}, `no member "b" to replace`},
		{"insert an existing member", obj, diffs{{Op: jsondiff.Insert, Path: "$.a", V: 2}}, `member "a" to insert is there already`},
		{"remove a missing member", obj, diffs{{Op: jsondiff.Remove, Path: "$.zz"}}, `no member "zz" to remove`},
		{"remove past the end", obj, diffs{{Op: jsondiff.Remove, Path: "$.arr[3]"}}, "no element [3] of an array of 1 to remove"},
		{"replace past the end", obj, diffs{{Op: jsondiff.Replace, Path: "$.arr[last-1]", V: 0}}, "no element [last-1] of an array of 1 to replace"},
		{"through a missing member", obj, diffs{{Op: jsondiff.Insert, Path: "$.x.y", V: 0}}, `no value at $."x"`},
		{"into a scalar", obj, diffs{{Op: jsondiff.Insert, Path: "$.a.b", V: 0}}, "the parent of the last step is not an object or an array but 1"},
		{"member of an array", obj, diffs{{Op: jsondiff.Insert, Path: "$.arr.x", V: 0}}, "an array and the step a member name"},
		{"cell of an object", obj, diffs{{Op: jsondiff.Insert, Path: "$[0]", V: 0}}, "an object and the step an array cell"},
		{"a later diff", obj, diffs{{Op: jsondiff.Replace, Path: "$.a", V: 5}, {Op: jsondiff.Remove, Path: "$.a"}, {Op: jsondiff.Remove, Path: "$.a"}}, `diff 3 of 3 (REMOVE $.a) cannot be applied`},
		{"the whole document", obj, diffs{{Op: jsondiff.Replace, Path: "$", V: 0}}, "the whole document"},
		{"a wildcard", obj, diffs{{Op: jsondiff.Remove, Path: "$.arr[*]"}}, "a [*] wildcard"},
		{"an ellipsis", obj, diffs{{Op: jsondiff.Remove, Path: "$**.a"}}, "a ** wildcard"},
		{"a range", obj, diffs{{Op: jsondiff.Remove, Path: "$.arr[0 to 1]"}}, "an array range"},
		{"a bad path", obj, diffs{{Op: jsondiff.Remove, Path: "a.b"}}, "does not start with $"},
		{"an unquoted non-identifier", obj, diffs{{Op: jsondiff.Remove, Path: "$.1a"}}, "neither quoted nor an identifier"},
		{"an unknown operation", obj, vector{7, 3, '$', '.', 'a'}, "diff 1 has operation 7"},
		{"a truncated path", obj, vector{0, 9, '$', '.', 'a'}, "its path runs past the vector"},
		{"a truncated value", obj, vector{0, 3, '$', '.', 'a', 5, 4}, "its value runs past the vector"},
		{"an empty value", obj, vector{0, 3, '$', '.', 'a', 0}, "an empty value"},
		{"a bad value", obj, diffs{{Op: jsondiff.Replace, Path: "$.a", Raw: []byte{0x20, 1}}}, "its value is not valid binary JSON"},
		{"a NULL document", nil, diffs{{Op: jsondiff.Insert, Path: "$.a", V: 1}}, "the column is NULL before the update"},
		{"a scalar document", jdoc{"s"}, diffs{{Op: jsondiff.Remove, Path: "$.a"}}, "the parent of the last step is not an object or an array but \"s\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := []any{int32(1), c.before, jdoc{jsondifftest.Obj{}}, nil, "x"}
			after := []any{int32(1), c.after, diffs{{Op: jsondiff.Insert, Path: "$.ok", V: 1}}, nil, "y"}
			ev, err := decodeRows(t, false, tableMapBytes("d", "t", jsonTable), updateBytes(replication.PARTIAL_UPDATE_ROWS_EVENT, jsonTable, before, after))
			if err != nil {
				t.Fatal(err)
			}
			bad, ok := ev.Rows[1][1].(*block.BadValue)
			if !ok {
				t.Fatalf("after image's j: %#v, want a *block.BadValue", ev.Rows[1][1])
			}
			for _, want := range []string{c.want, "partial JSON update (binlog_row_value_options=PARTIAL_JSON)", "row 1 of the event", "SET PERSIST binlog_row_value_options = ''", "binlog2ch fullsync -recreate -checkpoint", "copying d.t alone"} {
				if !strings.Contains(bad.Msg, want) {
					t.Errorf("message %q lacks %q", bad.Msg, want)
				}
			}
			if got := ev.Rows[1]; got[0] != int32(1) || got[2] != `{"ok":1}` || got[3] != nil || got[4] != "y" {
				t.Errorf("the other values of the row: %#v", got)
			}
		})
	}
}

// TestPartialJSONEventErrors: an event whose images cannot be read is a
// decoding error, as go-mysql's own are.
func TestPartialJSONEventErrors(t *testing.T) {
	tm := tableMapBytes("d", "t", jsonTable)
	good := updateBytes(replication.PARTIAL_UPDATE_ROWS_EVENT, jsonTable, partialCases[0].before, partialCases[0].partial)
	body := good[replication.EventHeaderSize:]
	for _, c := range []struct {
		name string
		ev   []byte
		want string
	}{
		{"truncated", eventBytes(replication.PARTIAL_UPDATE_ROWS_EVENT, body[:len(body)-3]), "row 1, after image: column 3"},
		{"unknown value_options", eventBytes(replication.PARTIAL_UPDATE_ROWS_EVENT, bytes.Replace(body, []byte{'x', 1, 1}, []byte{'x', 2, 1}, 1)), "without binlog_row_value_options MySQL writes"},
	} {
		if _, err := decodeRows(t, false, tm, c.ev); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "d.t: a PARTIAL_UPDATE_ROWS_EVENT binlog2ch cannot read") {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestJSONStringBinary(t *testing.T) {
	long := strings.Repeat("k", 300)
	for _, s := range []string{"", "a", long, strings.Repeat("é", 70000)} {
		if got, want := jsonStringBinary(s), jsondifftest.Binary(s); !bytes.Equal(got, want) {
			t.Errorf("%d bytes: got % x, want % x", len(s), got[:min(8, len(got))], want[:min(8, len(want))])
		}
	}
}

// TestPartialJSONParserSettings: go-mysql's settings that change how
// values render apply to the diffs' values as to whole documents; the one
// that changes the key order (MySQL's instead of go-mysql's) is refused
// rather than followed by inserts in the wrong place.
func TestPartialJSONParserSettings(t *testing.T) {
	got, want := decodeBoth(t, func() *replication.BinlogParser {
		p := NewParser(mysql.MySQLFlavor, false)
		p.SetUseFloatWithTrailingZero(true)
		p.SetUseDecimal(true)
		return p
	})
	if !reflect.DeepEqual(got.Rows, want.Rows) {
		t.Errorf("with trailing zeros:\n got %#v\nwant %#v", got.Rows, want.Rows)
	}
	if s, _ := got.Rows[5][2].(string); !strings.Contains(s, `"d":1.5`) || !strings.Contains(s, "-0.0") {
		t.Errorf("with trailing zeros: %s", s)
	}

	got, _ = decodeBoth(t, func() *replication.BinlogParser {
		p := NewParser(mysql.MySQLFlavor, false)
		p.SetRenderJSONAsMySQLText(true)
		return p
	})
	if !bytes.Equal(keyOrderProbe, jsondifftest.Binary(jsondifftest.Obj{{"aa", 2}, {"b", 1}})) {
		t.Errorf("keyOrderProbe % x, want % x", keyOrderProbe, jsondifftest.Binary(jsondifftest.Obj{{"aa", 2}, {"b", 1}}))
	}
	for _, rc := range [][2]int{{1, 1}, {3, 1}, {3, 2}, {5, 2}} {
		if bad, ok := got.Rows[rc[0]][rc[1]].(*block.BadValue); !ok || !strings.Contains(bad.Msg, "not in the key order binlog2ch reproduces") {
			t.Errorf("MySQL's key order, row image %d column %d: %#v", rc[0], rc[1], got.Rows[rc[0]][rc[1]])
		}
	}
	if got := got.Rows[5][1]; got != `{"keep":[1,"two"]}` {
		t.Errorf("MySQL's key order, an empty diff vector: %#v", got)
	}
}
