package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/bench"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestBenchShort runs `binlog2ch bench -short` end to end, the daemon a
// child process, and checks the report is complete and consistent.
func TestBenchShort(t *testing.T) {
	srv := servertest.Need(t)
	t.Setenv(envAsMain, "1") // the daemon child is this test binary
	out := t.TempDir()
	my := "mysql://" + srv.MySQL.User + ":" + srv.MySQL.Password + "@" + srv.MySQL.Addr()
	ch := "clickhouse://" + srv.ClickHouse.User + ":" + srv.ClickHouse.Password + "@" + srv.ClickHouse.Addr()
	code, stdout, stderr := runCLI(t, "bench", "-short", "-scenario", "catch-up,catch-up-excluded,catch-up-varied,live", "-mysql", my, "-clickhouse", ch, "-out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"catch-up", "live, 5000 rows/s", "live, max rate", "of ClickHouse's own insert of the same",
		"catch-up-excluded: reading past 200000 rows of an excluded table", "of applying the catch-up's rows", "CPU-s per million rows, the median of", "catch-up-varied: loadgen's varied rows", "of its per-byte floor", "wrote "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	rep := readReport(t, out)
	if len(rep.Scenarios) != 5 || rep.Scenarios[0].Rows != uint64(bench.Defaults(true).CatchUpRows) {
		t.Fatalf("scenarios: %+v", rep.Scenarios)
	}
	checkScenarios(t, rep)
}

// TestBenchCluster runs the benchmark against a throwaway cluster of two
// shards: rows are counted through the Distributed tables and parts over
// the cluster.
func TestBenchCluster(t *testing.T) {
	servertest.Need(t)
	t.Setenv(envAsMain, "1")
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "bench", "-cluster-shards", "2", "-rows", "20000", "-live-rate", "2000", "-live-duration", "3s", "-out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rep := readReport(t, out)
	if len(rep.Scenarios) != 3 || rep.Scenarios[0].Rows != 20000 || !strings.Contains(rep.Settings, "ClickHouse cluster binlog2ch") {
		t.Fatalf("report: %+v", rep)
	}
	checkScenarios(t, rep)
}

// TestBenchManyTables runs the many-tables scenario alone, tiny, on
// throwaway servers (so ClickHouse's pid is known): every row arrives and
// every figure is filled and consistent. No speed is checked.
func TestBenchManyTables(t *testing.T) {
	servertest.Need(t)
	t.Setenv(envAsMain, "1")
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "bench", "-scenario", "many-tables", "-tables", "3", "-rate", "30", "-duration", "3s", "-out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"1 table, 30 rows/s", "3 tables, 30 rows/s", "wrote "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	rep := readReport(t, out)
	if len(rep.Scenarios) != 0 || len(rep.ManyTables) != 2 || rep.ManyTables[0].Tables != 1 || rep.ManyTables[1].Tables != 3 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.ManyTables {
		if r.LoadRows == 0 || r.TablesDiffering != 0 || r.RowsInCH != r.RowsInMySQL || r.RowsInMySQL != r.LoadRows+uint64(r.Tables) {
			t.Errorf("%s: %d rows loaded, %d in MySQL, %d in ClickHouse, %d tables differ", r.Name, r.LoadRows, r.RowsInMySQL, r.RowsInCH, r.TablesDiffering)
		}
		if r.Seconds <= 0 || r.CHInserts == 0 || r.CHInsertsPerSec <= 0 || r.PartsCreated == 0 || r.PartsActive == 0 ||
			r.DaemonCPUSeconds <= 0 || r.DaemonPeakRSSMiB <= 0 || r.DaemonGoroutines <= 0 || r.CHSystemCPUSeconds > r.CHCPUSeconds ||
			!strings.Contains(r.CHCPUSource, "process") || len(r.Series) == 0 {
			t.Errorf("%s: a figure is missing: %+v", r.Name, r)
		}
		// inotify times every row of every table.
		if r.Lag == nil || r.Lag.Samples != int(r.LoadRows) || r.LagTables != r.Tables || r.Lag.P50 > r.Lag.P99 || r.Lag.P99 > r.Lag.Max ||
			r.WorstTableP99 < r.Lag.P99 || !strings.Contains(r.LagSource, "inotify") || r.DaemonLag == nil {
			t.Errorf("%s: lag not measured: %+v %+v", r.Name, r.Lag, r.DaemonLag)
		}
	}
	if one := rep.ManyTables[0].CHCPUSeconds; one > 0 && rep.ManyTablesCPURatio != rep.ManyTables[1].CHCPUSeconds/one {
		t.Errorf("ratio %v of %v and %v", rep.ManyTablesCPURatio, rep.ManyTables[1].CHCPUSeconds, one)
	}
}

func readReport(t *testing.T, dir string) *bench.Report {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("reports: %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// checkCeiling checks the catch-up's ceiling: three inserts of the
// client's, three catch-ups (the scenario's first), the ratio the
// fastest's.
func checkCeiling(t *testing.T, s bench.Scenario, c *bench.Ceiling) {
	t.Helper()
	if c == nil || c.Rows != s.RowsInCH || c.RowsPerMin <= 0 || len(c.RunSeconds) != 3 || len(c.CatchUps) != 3 ||
		c.CatchUps[0].RowsPerMin != s.RowsPerMin || c.FirstRatio != s.RowsPerMin/c.RowsPerMin {
		t.Fatalf("%s: ceiling %+v", s.Name, c)
	}
	best := 0.0
	for _, run := range c.CatchUps {
		if run.RowsPerMin <= 0 || run.Seconds <= 0 || run.CPUPerMRows <= 0 {
			t.Errorf("%s: a catch-up's figure is not positive: %+v", s.Name, run)
		}
		best = max(best, run.RowsPerMin)
	}
	if c.Ratio != best/c.RowsPerMin {
		t.Errorf("%s: ratio %.3f; want the fastest catch-up's, %.3f", s.Name, c.Ratio, best/c.RowsPerMin)
	}
}

// checkScenarios checks every scenario replicated all its rows and has
// every figure.
func checkScenarios(t *testing.T, rep *bench.Report) {
	t.Helper()
	for _, s := range rep.Scenarios {
		if s.Name == bench.ScenarioExcluded {
			// Nothing reaches ClickHouse (the scenario checks it holds no row).
			if e := s.Excluded; s.Rows == 0 || s.RowsInCH != 0 || s.Seconds <= 0 || s.CPUPerMRows <= 0 || s.BinlogBytesPerRow <= 0 ||
				e == nil || e.Ratio <= 0 || e.Ratio != s.CPUPerMRows/e.AppliedCPUPerMRows {
				t.Errorf("%s: %+v, %+v", s.Name, s, e)
			}
			continue
		}
		if s.Rows == 0 || s.RowsInCH != s.Rows {
			t.Errorf("%s: %d rows written, %d in ClickHouse", s.Name, s.Rows, s.RowsInCH)
		}
		if s.Seconds <= 0 || s.RowsPerMin <= 0 || s.CPUPerMRows <= 0 || s.PeakRSSMiB <= 0 || s.Parts == 0 || len(s.Series) == 0 {
			t.Errorf("%s: a figure is not positive: %+v", s.Name, s)
		}
		if c := s.Ceiling; s.Name == "catch-up" && s.NoCeiling == "" {
			checkCeiling(t, s, c)
		}
		if strings.HasPrefix(s.Name, "catch-up") != (s.BinlogBytesPerRow > 0) {
			t.Errorf("%s: %.0f binlog bytes a row", s.Name, s.BinlogBytesPerRow)
		}
		if !strings.HasPrefix(s.Name, "catch-up") && (s.Lag == nil || s.Lag.Samples == 0 || s.Lag.Max < s.Lag.P50 || s.KeptUp == nil || s.LoadRowsPerMin <= 0) {
			t.Errorf("%s: lag not measured: %+v", s.Name, s)
		}
	}
}

// TestBenchScenarioFlag: an unknown scenario, and many-tables on a
// cluster, are usage errors, found before any server starts.
func TestBenchScenarioFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "live,nope"}, `no scenario "nope"`},
		{[]string{"-scenario", "many-tables", "-cluster-shards", "2"}, "does not run on a cluster"},
	} {
		code, _, stderr := runCLI(t, append([]string{"bench"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
	}
}
