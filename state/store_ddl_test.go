package state

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/ddl/checkpoint.sql")

// TestGoldenCheckpointDDL pins the checkpoint table's DDL, alone and in a
// cluster. It is the same for every server profile (its types are
// 18.16's), so one file holds it. Run with -update after a deliberate
// change.
func TestGoldenCheckpointDDL(t *testing.T) {
	var b strings.Builder
	for _, cluster := range []string{"", "c1"} {
		create, addExt := checkpointDDL("binlog2ch", "checkpoint", cluster)
		if cluster == "" {
			b.WriteString("-- state.store: clickhouse, state.table: binlog2ch.checkpoint\n\n")
		} else {
			b.WriteString("-- the same with clickhouse.cluster: c1\n\n")
		}
		for _, s := range create {
			b.WriteString(s + ";\n\n")
		}
		b.WriteString("-- only to a table made before the column ext existed\n" + addExt + ";\n\n")
	}
	got := strings.TrimSuffix(b.String(), "\n")
	path := filepath.Join("..", "testdata", "ddl", "checkpoint.sql")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./state -run TestGoldenCheckpointDDL -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("differs from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
