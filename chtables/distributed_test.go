package chtables

import (
	"strings"
	"testing"
)

// TestShardingColumns parses Distributed engines as ClickHouse prints them
// in system.tables.engine_full, old and new.
func TestShardingColumns(t *testing.T) {
	for _, c := range []struct {
		engine  string
		cols    []string // Column, or "~Column" for reinterpretAsString
		keyless bool
		err     string
	}{
		{engine: "Distributed(c1, db, t, cityHash64(id))", cols: []string{"id"}},
		{engine: "Distributed('c1', 'db', 't', cityHash64(a, `b c`, `x\\`y`), 'policy')", cols: []string{"a", "b c", "x`y"}},
		{engine: `Distributed(c1, db, t, cityHash64("q", r_2))`, cols: []string{"q", "r_2"}},
		{engine: "Distributed(c1, db, t, cityHash64(id, reinterpretAsString(`d`)))", cols: []string{"id", "~d"}},
		{engine: "Distributed(c1, db, t, rand())", keyless: true},
		{engine: "Distributed(c1, db, t)", err: "has no sharding key"},
		{engine: "Distributed(c1, db, t, sipHash64(id))", err: "only cityHash64(columns) or rand()"},
		{engine: "Distributed(c1, db, t, cityHash64(id) % 3)", err: "only cityHash64(columns) or rand()"},
		{engine: "Distributed(c1, db, t, cityHash64(toString(id)))", err: "toString(id) is not a column"},
		{engine: "Distributed(c1, db, t, cityHash64(id, 'a,b'))", err: "'a,b' is not a column"},
		{engine: "MergeTree ORDER BY id", err: "not Distributed"},
		{engine: "Distributed(c1, db, t, cityHash64(id)", err: "cannot parse"},
	} {
		cols, keyless, err := ShardingColumns(c.engine)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want an error with %q", c.engine, err, c.err)
			}
			continue
		}
		var got []string
		for _, a := range cols {
			if a.Reinterpret {
				a.Column = "~" + a.Column
			}
			got = append(got, a.Column)
		}
		if err != nil || keyless != c.keyless || strings.Join(got, "|") != strings.Join(c.cols, "|") {
			t.Errorf("%s: got %q keyless=%v %v, want %q keyless=%v", c.engine, got, keyless, err, c.cols, c.keyless)
		}
	}
}
