package chnative

import (
	"context"
	"strings"
	"testing"
)

// TestStringSettingReadByServer: a per-query String setting goes in the
// old binary format as the server reads it (SettingFieldString::readBinary:
// a varint length and the bytes). The real ClickHouse (18.16 here) takes
// an insert with a String setting it knows, of a value long enough for a
// two-byte length, and stores the rows: a value framed otherwise would
// shift the rest of the query packet and the server would refuse it.
func TestStringSettingReadByServer(t *testing.T) {
	c, ch, db := setup(t)
	ctx := context.Background()
	var known uint64
	if err := ch.QueryRow(ctx, "SELECT count() FROM system.settings WHERE name = 'format_schema'").Scan(&known); err != nil {
		t.Fatal(err)
	}
	if known == 0 {
		t.Skip("the server has no format_schema setting")
	}
	if err := ch.Exec(ctx, "CREATE TABLE "+db+".t (id UInt64) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	for round, value := range []string{"s", strings.Repeat("x", 300)} {
		err := c.Insert(ctx, "INSERT INTO "+db+".t (id)", func([]Column) error { return nil }, func(e *Encoder) error {
			e.StartBlock(1, 1)
			e.Column("id", "UInt64")
			e.Uint64(uint64(round))
			return nil
		}, StringSetting{Name: "format_schema", Value: value})
		if err != nil {
			t.Fatalf("insert with format_schema of %d bytes: %v", len(value), err)
		}
	}
	var n uint64
	if err := ch.QueryRow(ctx, "SELECT count() FROM "+db+".t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d rows (%v), want 2", n, err)
	}
}
