package chsettings

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestChoose: of the settings a server lists, those that go with inserts
// are the ones of a type sent as a varint, from their version on, cluster
// ones only in a cluster.
func TestChoose(t *testing.T) {
	// What current servers list (26.x: async_insert on by default since
	// 26.3, insert_distributed_sync an alias of distributed_foreground_insert).
	current := Known{"async_insert": "Bool", "insert_distributed_sync": "Bool"}
	for _, tc := range []struct {
		known        Known
		cluster      bool
		major, minor uint64
		want         []string
	}{
		{current, false, 26, 9, []string{"async_insert=0"}},
		{current, true, 26, 9, []string{"async_insert=0", "insert_distributed_sync=1"}},
		// A shard older than the settings' server: no async_insert before 21.11.
		{current, true, 21, 8, []string{"insert_distributed_sync=1"}},
		{current, false, 21, 11, []string{"async_insert=0"}},
		// Settings of another type, or unknown, never go.
		{Known{"async_insert": "String", "insert_distributed_sync": "Int64"}, true, 26, 9, nil},
		{Known{}, true, 26, 9, nil},
		// Strict blocks where the server would adapt them.
		{Known{"async_insert": "Bool", "input_format_skip_unknown_fields": "Bool", "input_format_native_allow_types_conversion": "Bool"}, false, 26, 9,
			[]string{"async_insert=0", "input_format_skip_unknown_fields=0", "input_format_native_allow_types_conversion=0"}},
		{Known{"input_format_skip_unknown_fields": "Bool", "input_format_native_allow_types_conversion": "Bool"}, false, 23, 2,
			[]string{"input_format_skip_unknown_fields=0"}},
	} {
		var got []string
		for _, s := range Choose(tc.known, tc.cluster, tc.major, tc.minor) {
			got = append(got, fmt.Sprintf("%s=%d", s.Name, s.Value))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v, cluster %v, %d.%d: %v, want %v", tc.known, tc.cluster, tc.major, tc.minor, got, tc.want)
		}
	}
}

// TestPartToken: a shard's part of a block adds its selection to the
// block's token, the same for the same rows, another for others; a whole
// block (no selection) and a block without a token keep theirs.
func TestPartToken(t *testing.T) {
	a, a2, other := PartToken("T", []uint32{0, 2}), PartToken("T", []uint32{0, 2}), PartToken("T", []uint32{0, 3})
	if a != a2 || a == other || !strings.HasPrefix(a, "T/2:") || PartToken("T", nil) != "T" || PartToken("", []uint32{1}) != "" {
		t.Errorf("part tokens %q %q %q", a, a2, other)
	}
}

// TestTokenKnown: the token goes to a server that lists it as a String,
// from 22.2 on.
func TestTokenKnown(t *testing.T) {
	for _, tc := range []struct {
		known        Known
		major, minor uint64
		want         bool
	}{
		{Known{TokenName: "String"}, 22, 2, true},
		{Known{TokenName: "String"}, 26, 9, true},
		{Known{TokenName: "String"}, 22, 1, false},
		{Known{TokenName: ""}, 22, 2, false},
		{Known{}, 26, 9, false},
	} {
		if got := TokenKnown(tc.known, tc.major, tc.minor); got != tc.want {
			t.Errorf("%v %d.%d: %v", tc.known, tc.major, tc.minor, got)
		}
	}
}
