package schema

import "testing"

// TestBigTypesAllowed: Decimal256 is used from 21.6 on, and on 20.8-21.5
// only where the user's profile sets allow_experimental_bigint_types
// (without it those servers refuse CREATE TABLE with the type).
func TestBigTypesAllowed(t *testing.T) {
	for _, c := range []struct {
		version, setting string
		want             bool
	}{
		{"20.8.3", "0", false},
		{"21.5.9", "0", false},
		{"21.3.20", "1", true},
		{"21.5.9", "", false},
		{"21.6.1", "0", true},
		{"21.12.4", "", true},
		{"26.9.1", "", true},
	} {
		major, minor := parseVersion(c.version)
		if got := bigTypesAllowed(major, minor, c.setting); got != c.want {
			t.Errorf("ClickHouse %s, allow_experimental_bigint_types %q: got %v, want %v", c.version, c.setting, got, c.want)
		}
	}
}
