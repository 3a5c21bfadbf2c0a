package snapshot

import (
	"testing"
	"time"
)

func TestProgressSumAndETA(t *testing.T) {
	p := Sum([]TableStatus{
		{State: StateDone, Confirmed: 10, Estimate: 8, Prepared: true},
		{State: StateCopying, Confirmed: 5, Estimate: 20, Prepared: true},
		{State: StateWaiting, Prepared: true, Estimate: 70},
		{State: StateWaiting},
		{State: StateFailed},
	})
	want := Progress{Tables: 5, Prepared: 3, Copying: 1, Done: 1, Failed: 1, Confirmed: 15, Estimated: 100}
	if p != want {
		t.Fatalf("Sum = %+v, want %+v", p, want)
	}
	// Rows: 15 of 100 in 10 s leave 85 rows, 56.7 s; tables: 1 of the 4
	// that can end left 3, 30 s. The longer wins.
	if got := p.ETA(10 * time.Second); got.Round(time.Second) != 57*time.Second {
		t.Errorf("ETA by rows = %v", got)
	}
	// Many small tables: the rows are nearly all in, the tables not.
	p = Progress{Tables: 2000, Done: 500, Confirmed: 1500, Estimated: 1510}
	if got := p.ETA(10 * time.Second); got != 30*time.Second {
		t.Errorf("ETA by tables = %v", got)
	}
	if got := (Progress{Tables: 3}).ETA(time.Second); got != 0 {
		t.Errorf("ETA with nothing done = %v", got)
	}
}
