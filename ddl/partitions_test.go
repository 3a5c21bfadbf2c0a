package ddl

import (
	"reflect"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
)

// TestToDays: MySQL's TO_DAYS, 719528 being 1970-01-01; no value for what
// is not a date.
func TestToDays(t *testing.T) {
	for in, want := range map[string]int64{"1970-01-01": 719528, "2024-06-01": 739403, "2000-03-01 12:00:00": 730545} {
		if got, ok := toDays(in); !ok || got != want {
			t.Errorf("toDays(%s) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"2024-02-30", "0999-01-01", "June"} {
		if got, ok := toDays(in); ok {
			t.Errorf("toDays(%s) = %d; want none", in, got)
		}
	}
}

// TestUnparsedPartitioning: an ALTER TABLE the parser cannot read names
// its table when its words speak of partitions, a CREATE TABLE always.
func TestUnparsedPartitioning(t *testing.T) {
	for q, want := range map[string][]schema.TableName{
		"ALTER TABLE db.t PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10)) WAIT 5": {{Database: "db", Table: "t"}},
		"ALTER ONLINE TABLE t CONVERT TABLE u TO PARTITION p1 VALUES LESS THAN (5)":            {{Table: "t"}},
		"CREATE OR REPLACE TABLE x.y (id INT) PARTITION BY HASH (id)":                          {{Database: "x", Table: "y"}},
		"CREATE TABLE IF NOT EXISTS y (id INT) WITH SYSTEM VERSIONING":                         {{Table: "y"}},
		"ALTER TABLE t ADD COLUMN c INT WAIT 5":                                                nil,
		"CREATE TEMPORARY TABLE tmp (id INT)":                                                  nil,
	} {
		if got := UnparsedPartitioning(q); !reflect.DeepEqual(got, want) {
			t.Errorf("UnparsedPartitioning(%q) = %v, want %v", q, got, want)
		}
	}
}
