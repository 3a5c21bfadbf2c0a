package schema

import (
	"slices"
	"testing"
)

// TestExprIdents: the names a partition expression may read, outside its
// string literals and numbers.
func TestExprIdents(t *testing.T) {
	for expr, want := range map[string][]string{
		"toYYYYMM(created)":                      {"toYYYYMM", "created"},
		"(region, intDiv(id, 1000))":             {"region", "intDiv", "id"},
		"`my col` % 4":                           {"my col"},
		`"b\"q" , 'it''s_not', x1`:               {`b"q`, "x1"},
		"toStartOfInterval(t, INTERVAL 1e3 day)": {"toStartOfInterval", "t", "INTERVAL", "day"},
		"":                                       nil,
	} {
		if got := ExprIdents(expr); !slices.Equal(got, want) {
			t.Errorf("ExprIdents(%q) = %q, want %q", expr, got, want)
		}
	}
}
