// Package schematest holds MySQL table definitions for tests of the
// packages that map and convert tables: every type binlog2ch maps, and
// Bifrost's binlog_field_test. It must never be imported outside tests
// (architecture_test.go checks).
package schematest

import (
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Col builds a schema.Column from a COLUMN_TYPE, e.g. Col("id", "bigint(20) unsigned", false).
func Col(t testing.TB, name, columnType string, nullable bool) schema.Column {
	t.Helper()
	dataType := strings.ToLower(columnType)
	if i := strings.IndexAny(dataType, "( "); i >= 0 {
		dataType = dataType[:i]
	}
	c, err := schema.ParseColumnType(columnType, dataType)
	if err != nil {
		t.Fatal(err)
	}
	c.Name, c.Nullable = name, nullable
	return c
}

// BinlogFieldTest is the benchmark table of testdata/binlog_field_test.sql.
func BinlogFieldTest(t testing.TB) *schema.Table {
	types := []string{
		"id bigint(20) unsigned", "testtinyint tinyint(4)", "testsmallint smallint(6)", "testmediumint mediumint(8)",
		"testint int(11)", "testbigint bigint(20)", "testvarchar varchar(400)", "testchar char(2)",
		"testenum enum('en1','en2','en3')", "testset set('set1','set2','set3')", "testtime time", "testdate date",
		"testyear year(4)", "testtimestamp timestamp", "testdatetime datetime", "testfloat float(9,2)",
		"testdouble double(9,2)", "testdecimal decimal(9,2)", "testtext text", "testblob blob", "testbit bit(64)",
		"testbool tinyint(1)", "testmediumblob mediumblob", "testlongblob longblob", "testtinyblob tinyblob",
		"test_unsinged_tinyint tinyint(4) unsigned", "test_unsinged_smallint smallint(6) unsigned",
		"test_unsinged_mediumint mediumint(8) unsigned", "test_unsinged_int int(11) unsigned",
		"test_unsinged_bigint bigint(20) unsigned",
	}
	tb := &schema.Table{Database: "bifrost_test", Name: "binlog_field_test_1", PrimaryKey: []int{0}}
	for _, s := range types {
		name, typ, _ := strings.Cut(s, " ")
		tb.Columns = append(tb.Columns, Col(t, name, typ, false))
	}
	return tb
}

// EveryType is a table with every MySQL type binlog2ch maps (block's
// integration test creates it).
func EveryType(t testing.TB) *schema.Table {
	tb := &schema.Table{Database: "shop", Name: "every_type", PrimaryKey: []int{0}}
	for _, s := range []string{
		"id int(11)", "ti tinyint(4)", "tiu tinyint(3) unsigned", "b1 tinyint(1)", "si smallint(6)",
		"mi mediumint(9)", "miu mediumint(8) unsigned", "bi bigint(20)", "biu bigint(20) unsigned",
		"d92 decimal(9,2)", "d3810 decimal(38,10)", "d6530 decimal(65,30)", "f float", "dbl double",
		"bit64 bit(64)", "dt date", "dtm datetime", "dtm6 datetime(6)", "ts timestamp", "ts3 timestamp(3)",
		"tm time", "yr year(4)", "c char(10)", "txt text", "bin binary(4)", "blb blob",
		"e enum('a,b','x','é')", "eq enum('it''s','x\\\\y')", "s set('x','y''z','ü')", "j json", "g geometry",
	} {
		name, typ, _ := strings.Cut(s, " ")
		tb.Columns = append(tb.Columns, Col(t, name, typ, name != "id"))
	}
	return tb
}
