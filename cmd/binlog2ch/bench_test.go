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
	files, _ := filepath.Glob(filepath.Join(out, "*.json"))
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
	if len(rep.Scenarios) != 3 || rep.Scenarios[0].Rows != uint64(bench.Defaults(true).CatchUpRows) {
		t.Fatalf("scenarios: %+v", rep.Scenarios)
	}
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
