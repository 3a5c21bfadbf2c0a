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

func sampleReport() *Report {
	kept := true
	return &Report{Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Host: "test <cpu>", MySQL: "10.11", ClickHouse: "18.16.1", Binlog2ch: "devel",
		Scenarios: []Scenario{
			{Name: "catch-up", Rows: 1000, RowsInCH: 1000, Seconds: 1, RowsPerMin: 60000, Series: []Point{{0, 1000, -1}}},
			{Name: "live, 5 rows/s", Rows: 50, RowsInCH: 50, Seconds: 10, RowsPerMin: 300, LoadRowsPerMin: 300,
				Lag: &Lag{P50: 0.5, P99: 0.9, Max: 1, Samples: 10}, KeptUp: &kept, Series: []Point{{0, 5, 0.5}, {1, 5, 0.9}}},
		},
		ManyTables: []TablesRun{
			{Name: "1 table, 40 rows/s", Tables: 1, Rate: 40, LoadRows: 400, LoadRowsPerSec: 40, RowsInMySQL: 401, RowsInCH: 401, Seconds: 10.5,
				CHCPUSeconds: 0.5, CHSystemCPUSeconds: 0.25, CHCPUSource: "clickhouse-server process", CHInserts: 10, CHInsertsPerSec: 0.95, PartsCreated: 10, PartsActive: 2,
				DaemonCPUSeconds: 0.2, DaemonPeakRSSMiB: 30, DaemonGoroutines: 17, Lag: &Lag{P50: 0.5, P99: 1, Max: 1.01, Samples: 400}, WorstTableP99: 1, LagTables: 1,
				LagSource: "inotify", DaemonLag: &Lag{Max: 2}, Series: []Point{{0, 40, 1}}},
			{Name: "3 tables, 40 rows/s", Tables: 3, Rate: 40, LoadRows: 300, LoadRowsPerSec: 30, RowsInMySQL: 403, RowsInCH: 402, TablesDiffering: 1, Seconds: 10.6,
				CHCPUSeconds: 1.5, CHSystemCPUSeconds: 1, CHCPUSource: "clickhouse-server process", CHInserts: 30, CHInsertsPerSec: 2.83, PartsCreated: 30, PartsActive: 5,
				DaemonCPUSeconds: 0.3, DaemonPeakRSSMiB: 31, DaemonGoroutines: 25, Lag: &Lag{P50: 0.6, P99: 1.1, Max: 1.2, Samples: 400}, WorstTableP99: 1.15, LagTables: 3,
				LagSource: "inotify", Series: []Point{{0, 40, 1.2}}},
		},
		ManyTablesCPURatio: 3}
}

func TestReportFormats(t *testing.T) {
	rep := sampleReport()
	var table strings.Builder
	rep.Table(&table)
	for _, want := range []string{"catch-up", "0.06M", "0.50/0.90/1.00 s", "yes", "3 tables, 40 rows/s", "1.50 (1.00)", "0.60/1.10/1.20 s", "10/2", "no: 1 tables differ",
		"ClickHouse CPU, 3 tables / 1 table: 3.0x", "from the clickhouse-server process", "The 3 tables, 40 rows/s run's load reached only 30 rows/s"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "The 1 table, 40 rows/s run's load") {
		t.Errorf("the run at its rate is said to fall short:\n%s", table.String())
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
	if err := json.Unmarshal(data, &back); err != nil || len(back.Scenarios) != 2 || back.Scenarios[1].Lag.P99 != 0.9 ||
		len(back.ManyTables) != 2 || back.ManyTables[1].CHCPUSeconds != 1.5 || back.ManyTablesCPURatio != 3 {
		t.Fatalf("JSON round trip: %v %+v", err, back)
	}
	md, _ := os.ReadFile(paths[1])
	if !strings.Contains(string(md), "| live, 5 rows/s | 50 |") || !strings.Contains(string(md), "| 3 tables, 40 rows/s | 300 | 30 |") || !strings.Contains(string(md), ".svg)") {
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
	if !strings.Contains(string(svg), "<polyline") || !strings.Contains(string(svg), "3 tables, 40 rows/s") {
		t.Fatalf("SVG lacks the lag line:\n%s", svg)
	}
}

func TestTableLags(t *testing.T) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	commits := map[string][]time.Time{
		// Out of order, as connections report them: matched sorted.
		"a": {at(200), at(100), at(300)},
		"b": {at(150)},
		"c": {at(100)}, // never arrived: no lag
	}
	got := []arrival{
		{"a", at(1100), 2}, // the first two rows of a in one part
		{"b", at(900), 1},
		{"a", at(1500), 1},
	}
	all, perTable := tableLags(start, commits, got)
	want := []lagSample{{100 * time.Millisecond, time.Second}, {150 * time.Millisecond, 750 * time.Millisecond},
		{200 * time.Millisecond, 900 * time.Millisecond}, {300 * time.Millisecond, 1200 * time.Millisecond}}
	if len(all) != len(want) {
		t.Fatalf("got %v, want %v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("sample %d: got %v, want %v", i, all[i], want[i])
		}
	}
	if len(perTable) != 2 || len(perTable["a"]) != 3 || len(perTable["b"]) != 1 {
		t.Fatalf("per table: %v", perTable)
	}
	pts := arrivalSeries(start, at(1600), all, got)
	if len(pts) != 2 || pts[0].RowsPerSec != 1 || pts[1].RowsPerSec != 3 || pts[0].LagSeconds != 1.2 || pts[1].LagSeconds != -1 {
		t.Fatalf("series %+v", pts)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 1523
go_goroutines_other 7
binlog2ch_lag_seconds 1.25
binlog2ch_lag_seconds_total 9
`
	g, lag, ok := parseMetrics(strings.NewReader(text))
	if !ok || g != 1523 || lag != 1.25 {
		t.Fatalf("got %v %v %v", g, lag, ok)
	}
	if _, _, ok := parseMetrics(strings.NewReader("go_goroutines 3\n")); ok {
		t.Fatal("a page without the lag gauge parsed")
	}
}

func TestFindListen(t *testing.T) {
	log := `{"time":"x","level":"INFO","msg":"starting"}
not json
{"time":"x","level":"INFO","msg":"serving /metrics, /healthz and /readyz","listen":"127.0.0.1:41234"}
`
	if got := findListen([]byte(log)); got != "127.0.0.1:41234" {
		t.Fatalf("got %q", got)
	}
	if got := findListen([]byte(`{"msg":"starting"}`)); got != "" {
		t.Fatalf("got %q", got)
	}
}

func TestInsertPartNames(t *testing.T) {
	for name, want := range map[string]bool{
		"all_1_1_0": true, "201812_17_17_0": true, "a1b2c3_5_5_0": true,
		"all_1_5_1": false, "tmp_insert_all_1_1_0": false, "all_1_1_0_7": false, "detached": false, "format_version.txt": false,
	} {
		if got := insertPart.MatchString(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
