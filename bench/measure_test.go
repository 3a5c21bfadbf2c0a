package bench

import (
	"testing"
	"time"
)

func TestLagSamples(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	mysqlSide := []sample{{ms(0), 0}, {ms(100), 1000}, {ms(200), 1000}, {ms(300), 3000}, {ms(400), 5000}}
	chSide := []sample{{ms(50), 0}, {ms(150), 0}, {ms(650), 1000}, {ms(750), 3000}, {ms(1400), 5000}}
	got := lagSamples(mysqlSide, chSide)
	want := []lagSample{{ms(100), ms(550)}, {ms(300), ms(450)}, {ms(400), ms(1000)}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample %d: got %v, want %v", i, got[i], want[i])
		}
	}
	lag := summarize(got)
	if lag.P50 != 0.55 || lag.Max != 1 || lag.Samples != 3 {
		t.Fatalf("summary %+v", lag)
	}
	// Rows not yet in ClickHouse have no lag sample yet.
	if got := lagSamples([]sample{{ms(100), 10}}, []sample{{ms(200), 5}}); len(got) != 0 {
		t.Fatalf("unseen rows got a lag: %v", got)
	}
}

func TestSeries(t *testing.T) {
	s := series([]lagSample{{1500 * time.Millisecond, 700 * time.Millisecond}},
		[]sample{{500 * time.Millisecond, 100}, {1200 * time.Millisecond, 300}, {2100 * time.Millisecond, 600}})
	if len(s) != 3 || s[0].RowsPerSec != 100 || s[1].RowsPerSec != 200 || s[2].RowsPerSec != 300 {
		t.Fatalf("rates %+v", s)
	}
	if s[0].LagSeconds != -1 || s[1].LagSeconds != 0.7 {
		t.Fatalf("lags %+v", s)
	}
}
