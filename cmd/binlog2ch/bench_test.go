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
	code, stdout, stderr := runCLI(t, "bench", "-short", "-mysql", my, "-clickhouse", ch, "-out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"catch-up", "live, 5000 rows/s", "live, max rate", "wrote "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	rep := readReport(t, out)
	if len(rep.Scenarios) != 3 || rep.Scenarios[0].Rows != uint64(bench.Defaults(true).CatchUpRows) {
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

// checkScenarios checks every scenario replicated all its rows and has
// every figure.
func checkScenarios(t *testing.T, rep *bench.Report) {
	t.Helper()
	for _, s := range rep.Scenarios {
		if s.Rows == 0 || s.RowsInCH != s.Rows {
			t.Errorf("%s: %d rows written, %d in ClickHouse", s.Name, s.Rows, s.RowsInCH)
		}
		if s.Seconds <= 0 || s.RowsPerMin <= 0 || s.CPUPerMRows <= 0 || s.PeakRSSMiB <= 0 || s.Parts == 0 || len(s.Series) == 0 {
			t.Errorf("%s: a figure is not positive: %+v", s.Name, s)
		}
		if s.Name != "catch-up" && (s.Lag == nil || s.Lag.Samples == 0 || s.Lag.Max < s.Lag.P50 || s.KeptUp == nil || s.LoadRowsPerMin <= 0) {
			t.Errorf("%s: lag not measured: %+v", s.Name, s)
		}
	}
}
