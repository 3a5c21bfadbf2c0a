package mysqltime

import (
	"fmt"
	"testing"
)

// TestAppendInt checks the fast paths against fmt's zero padding, for the
// parts of dates and times (never negative).
func TestAppendInt(t *testing.T) {
	for _, width := range []int{0, 1, 2, 3, 4, 6} {
		for _, v := range []int{0, 1, 9, 10, 42, 99, 100, 838, 999, 1000, 2024, 9999, 10000, 123456} {
			want := fmt.Sprintf("%0*d", width, v)
			if got := string(AppendInt([]byte("x"), v, width)); got != "x"+want {
				t.Errorf("AppendInt(%d, %d) = %q, want %q", v, width, got[1:], want)
			}
		}
	}
}
