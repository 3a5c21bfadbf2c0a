package schema

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLabelsValues(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{`'a,b','it''s','x\\y','é'`, []string{"a,b", "it's", `x\y`, "é"}},
		{`''`, []string{""}},
		{`'',''`, []string{"", ""}},
		{`'a',''`, []string{"a", ""}},
		{`'','a'`, []string{"", "a"}},
		{`''''`, []string{"'"}},
		{`'''a'''`, []string{"'a'"}},
		{`'it\'s'`, []string{"it's"}},
		{`'a\nb'`, []string{"a\nb"}},
		{`'\t\r\0'`, []string{"\t\r\x00"}},
		{`'\\'`, []string{`\`}},
		{`'\\\\'`, []string{`\\`}},
		{`'\q'`, []string{"q"}},
		{`'a', 'b' ,'c'`, []string{"a", "b", "c"}},
		{`'a b','  '`, []string{"a b", "  "}},
		{`'a)','(b'`, []string{"a)", "(b"}},
		{`'中文','🙂'`, []string{"中文", "🙂"}},
		{"'raw\nnewline'", []string{"raw\nnewline"}},
		{`'en1','en2','en3'`, []string{"en1", "en2", "en3"}},
	}
	for _, c := range cases {
		got, err := ParseLabels(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseLabels(%s) = %q, %v; want %q, nil", c.in, got, err, c.want)
		}
	}
	if got, err := ParseLabels(""); err != nil || len(got) != 0 {
		t.Errorf("ParseLabels(``) = %q, %v; want no labels, nil", got, err)
	}
	bad := []struct{ in, msg string }{
		{`'a`, "unterminated"},
		{`'`, "unterminated"},
		{`'a','b`, "unterminated"},
		{`'a''`, "unterminated"}, // the doubled quote is a quote, not the end
		{`'a\'`, "unterminated"}, // the escaped quote is a quote, not the end
		{`'a\`, "unterminated"},
		{`a,b`, "want a quoted label"},
		{`a`, "want a quoted label"},
		{`'a'b`, "want a quoted label"},
		{`'a',b`, "want a quoted label"},
		{`"a"`, "want a quoted label"},
		{`'a';'b'`, "want a quoted label"},
	}
	for _, c := range bad {
		got, err := ParseLabels(c.in)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ParseLabels(%s) = %q, %v; want an error with %q", c.in, got, err, c.msg)
		}
		if got != nil {
			t.Errorf("ParseLabels(%s) returned labels %q with its error", c.in, got)
		}
	}
}

func TestParseColumnTypeKinds(t *testing.T) {
	cases := []struct {
		columnType, dataType string
		want                 Column
	}{
		{"decimal(65,30) unsigned", "decimal", Column{Kind: KindDecimal, Precision: 65, Scale: 30, Unsigned: true}},
		{"decimal(10,2)", "decimal", Column{Kind: KindDecimal, Precision: 10, Scale: 2}},
		{"decimal(18,0)", "decimal", Column{Kind: KindDecimal, Precision: 18}},
		{"decimal(12)", "decimal", Column{Kind: KindDecimal, Precision: 12}},
		{"decimal", "decimal", Column{Kind: KindDecimal, Precision: 10}},
		{"numeric(5, 3)", "numeric", Column{Kind: KindDecimal, Precision: 5, Scale: 3}},
		{"tinyint(1)", "tinyint", Column{Kind: KindTinyInt, Precision: 1}},
		{"tinyint(4) unsigned", "tinyint", Column{Kind: KindTinyInt, Precision: 4, Unsigned: true}},
		{"tinyint unsigned", "tinyint", Column{Kind: KindTinyInt, Unsigned: true}},
		{"smallint(6)", "smallint", Column{Kind: KindSmallInt, Precision: 6}},
		{"mediumint(8) unsigned", "mediumint", Column{Kind: KindMediumInt, Precision: 8, Unsigned: true}},
		{"int(11)", "int", Column{Kind: KindInt, Precision: 11}},
		{"int(10) unsigned zerofill", "int", Column{Kind: KindInt, Precision: 10, Unsigned: true}},
		{"INT(11) UNSIGNED", "INT", Column{Kind: KindInt, Precision: 11, Unsigned: true}},
		{"int", "integer", Column{Kind: KindInt}},
		{"bigint(20) unsigned", "bigint", Column{Kind: KindBigInt, Precision: 20, Unsigned: true}},
		{"bigint", "bigint", Column{Kind: KindBigInt}},
		{"float", "float", Column{Kind: KindFloat}},
		{"float(9,2)", "float", Column{Kind: KindFloat}},
		{"double", "double", Column{Kind: KindDouble}},
		{"double(9,2) unsigned", "double", Column{Kind: KindDouble, Unsigned: true}},
		{"real", "real", Column{Kind: KindDouble}},
		{"bit(64)", "bit", Column{Kind: KindBit, Precision: 64}},
		{"bit(1)", "bit", Column{Kind: KindBit, Precision: 1}},
		{"bit", "bit", Column{Kind: KindBit, Precision: 1}},
		{"date", "date", Column{Kind: KindDate}},
		{"datetime", "datetime", Column{Kind: KindDateTime}},
		{"datetime(6)", "datetime", Column{Kind: KindDateTime, Fsp: 6}},
		{"timestamp(3)", "timestamp", Column{Kind: KindTimestamp, Fsp: 3}},
		{"timestamp", "timestamp", Column{Kind: KindTimestamp}},
		{"time", "time", Column{Kind: KindTime}},
		{"time(2)", "time", Column{Kind: KindTime, Fsp: 2}},
		{"year(4)", "year", Column{Kind: KindYear}},
		{"year", "year", Column{Kind: KindYear}},
		{"char(10)", "char", Column{Kind: KindChar}},
		{"varchar(400)", "varchar", Column{Kind: KindChar}},
		{"tinytext", "tinytext", Column{Kind: KindChar}},
		{"text", "text", Column{Kind: KindChar}},
		{"mediumtext", "mediumtext", Column{Kind: KindChar}},
		{"longtext", "longtext", Column{Kind: KindChar}},
		{"binary(16)", "binary", Column{Kind: KindBinary, Length: 16}},
		{"binary", "binary", Column{Kind: KindBinary, Length: 1}},
		{"varbinary(10)", "varbinary", Column{Kind: KindBlob}},
		{"tinyblob", "tinyblob", Column{Kind: KindBlob}},
		{"blob", "blob", Column{Kind: KindBlob}},
		{"mediumblob", "mediumblob", Column{Kind: KindBlob}},
		{"longblob", "longblob", Column{Kind: KindBlob}},
		{"enum('a','b')", "enum", Column{Kind: KindEnum, Labels: []string{"a", "b"}}},
		{"enum('a,b','x','é')", "enum", Column{Kind: KindEnum, Labels: []string{"a,b", "x", "é"}}},
		{"enum('it''s','x\\\\y')", "enum", Column{Kind: KindEnum, Labels: []string{"it's", `x\y`}}},
		{"enum('a)','(b')", "enum", Column{Kind: KindEnum, Labels: []string{"a)", "(b"}}},
		{"enum('','x')", "enum", Column{Kind: KindEnum, Labels: []string{"", "x"}}},
		{"set('x','y''z','ü')", "set", Column{Kind: KindSet, Labels: []string{"x", "y'z", "ü"}}},
		{"json", "json", Column{Kind: KindJSON}},
		{"longtext", "json", Column{Kind: KindJSON}}, // MariaDB's JSON alias: DATA_TYPE decides
		{"geometry", "geometry", Column{Kind: KindGeometry}},
		{"point", "point", Column{Kind: KindGeometry}},
		{"linestring", "linestring", Column{Kind: KindGeometry}},
		{"polygon", "polygon", Column{Kind: KindGeometry}},
		{"multipoint", "multipoint", Column{Kind: KindGeometry}},
		{"multilinestring", "multilinestring", Column{Kind: KindGeometry}},
		{"multipolygon", "multipolygon", Column{Kind: KindGeometry}},
		{"geometrycollection", "geometrycollection", Column{Kind: KindGeometry}},
		{"geomcollection", "geomcollection", Column{Kind: KindGeometry}},
	}
	for _, c := range cases {
		got, err := ParseColumnType(c.columnType, c.dataType)
		if err != nil {
			t.Errorf("ParseColumnType(%q, %q): %v", c.columnType, c.dataType, err)
			continue
		}
		want := c.want
		want.Type = c.columnType
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseColumnType(%q, %q) = %+v, want %+v", c.columnType, c.dataType, got, want)
		}
	}
}

func TestParseColumnTypeErrors(t *testing.T) {
	cases := []struct {
		columnType, dataType string
		msg                  []string // all in the error
	}{
		{"vector(3)", "vector", []string{`"vector(3)"`, "not supported"}},
		{"serial", "serial", []string{`"serial"`, "not supported"}},
		{"", "", []string{`""`, "not supported"}},
		{"enum('a)", "enum", []string{"enum('a)", "unterminated"}},
		{"enum(a,b)", "enum", []string{"enum(a,b)", "want a quoted label"}},
		{"set('x',y)", "set", []string{"set('x',y)", "want a quoted label"}},
	}
	for _, c := range cases {
		got, err := ParseColumnType(c.columnType, c.dataType)
		if err == nil {
			t.Errorf("ParseColumnType(%q, %q) = %+v, want an error", c.columnType, c.dataType, got)
			continue
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("ParseColumnType(%q, %q): error %q does not mention %q", c.columnType, c.dataType, err, m)
			}
		}
	}
}
