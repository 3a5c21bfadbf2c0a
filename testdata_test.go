package binlog2ch

import (
	"strings"
	"testing"
)

func TestBinlogFieldTestDDLIsEmbedded(t *testing.T) {
	if !strings.Contains(BinlogFieldTestDDL, "CREATE TABLE IF NOT EXISTS `binlog_field_test_1`") {
		t.Fatal("testdata/binlog_field_test.sql is not the benchmark table's DDL")
	}
	// 30 columns plus the PRIMARY KEY line.
	if n := strings.Count(BinlogFieldTestDDL, "\n  `"); n != 30 {
		t.Fatalf("want 30 column definitions, got %d", n)
	}
}
