package schema

import (
	"fmt"
	"testing"
)

// TestPlacement: the key, the sorting key's columns and, in a cluster, the
// sharding key's (every replicated column when it cannot be read); never
// a column that is not replicated, never one twice.
func TestPlacement(t *testing.T) {
	src := &Table{Database: "d", Name: "t", PrimaryKey: []int{0},
		Columns: []Column{{Name: "id"}, {Name: "a"}, {Name: "B"}, {Name: "skipped"}, {Name: "c"}}}
	tg := &Target{Source: src, SourceToTarget: []int{0, 1, 2, -1, 3}, OrderBy: []string{"id", "b", "skipped"}}
	for _, c := range []struct {
		cluster  bool
		sharding string
		want     string
	}{
		{false, "", "[0 2]"},
		{false, "cityHash64(c)", "[0 2]"}, // no cluster: the sharding key is none of its business
		{true, "cityHash64(c, a)", "[0 2 4 1]"},
		{true, "", "[0 2 1 4]"},
	} {
		tg.Options.Cluster = nil
		if c.cluster {
			tg.Options.Cluster = &Cluster{}
		}
		if got := fmt.Sprint(tg.Placement(c.sharding)); got != c.want {
			t.Errorf("cluster %v, sharding %q: %s, want %s", c.cluster, c.sharding, got, c.want)
		}
	}
	if got := fmt.Sprint(tg.ExprColumns([]int{1}, "intDiv(A, 2) + c")); got != "[1 4]" {
		t.Errorf("ExprColumns: %s, want [1 4]", got)
	}
}
