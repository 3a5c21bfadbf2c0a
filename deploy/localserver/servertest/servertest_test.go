package servertest

import (
	"regexp"
	"testing"
)

func TestNameIsUniqueAndAnIdentifier(t *testing.T) {
	ident := regexp.MustCompile(`^[a-z0-9_]+$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		n := Name("b2c_test")
		if !ident.MatchString(n) {
			t.Fatalf("%q is not a plain identifier", n)
		}
		if seen[n] {
			t.Fatalf("%q returned twice", n)
		}
		seen[n] = true
	}
}
