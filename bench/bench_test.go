package bench

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"strings"
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

func sampleReport() *Report {
	kept := true
	return &Report{Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Host: "test <cpu>", MySQL: "10.11", ClickHouse: "18.16.1", Binlog2ch: "devel",
		Scenarios: []Scenario{
			{Name: "catch-up", Rows: 1000, RowsInCH: 1000, Seconds: 1, RowsPerMin: 60000, Series: []Point{{0, 1000, -1}}},
			{Name: "live, 5 rows/s", Rows: 50, RowsInCH: 50, Seconds: 10, RowsPerMin: 300, LoadRowsPerMin: 300,
				Lag: &Lag{P50: 0.5, P99: 0.9, Max: 1, Samples: 10}, KeptUp: &kept, Series: []Point{{0, 5, 0.5}, {1, 5, 0.9}}},
		}}
}

func TestReportFormats(t *testing.T) {
	rep := sampleReport()
	var table strings.Builder
	rep.Table(&table)
	for _, want := range []string{"catch-up", "0.06M", "0.50/0.90/1.00 s", "yes"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	dir := t.TempDir()
	paths, err := rep.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("wrote %v", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil || len(back.Scenarios) != 2 || back.Scenarios[1].Lag.P99 != 0.9 {
		t.Fatalf("JSON round trip: %v %+v", err, back)
	}
	md, _ := os.ReadFile(paths[1])
	if !strings.Contains(string(md), "| live, 5 rows/s | 50 |") || !strings.Contains(string(md), ".svg)") {
		t.Fatalf("markdown:\n%s", md)
	}
	svg, _ := os.ReadFile(paths[2])
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
	}
	if !strings.Contains(string(svg), "<polyline") {
		t.Fatalf("SVG lacks the lag line:\n%s", svg)
	}
}
