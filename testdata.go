// Package binlog2ch holds the fixtures that the binary needs at run time
// (go:embed cannot reach testdata/ from the packages below it). It must
// not grow code or import binlog2ch's packages: it stands below every
// package that reads a fixture through it.
package binlog2ch

import _ "embed"

// BinlogFieldTestDDL creates binlog_field_test_1, the 30-column table of
// Bifrost's published performance test and binlog2ch's reference benchmark.
//
//go:embed testdata/binlog_field_test.sql
var BinlogFieldTestDDL string
