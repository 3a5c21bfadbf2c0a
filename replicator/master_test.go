package replicator

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if cp, err := LoadCheckpoint(dir); cp != nil || err != nil {
		t.Fatalf("no file: got %v, %v", cp, err)
	}
	want := Checkpoint{Position: Position{File: "binlog.000042", Pos: 1234}, Server: "uuid:x", SavedAt: time.Unix(1, 0).UTC()}
	if err := SaveCheckpoint(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCheckpoint(dir)
	if err != nil || *got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestCorruptCheckpointIsAnError(t *testing.T) {
	for _, content := range []string{"", "{", `{"file": "binlog.000001", "pos": 4, "extra": 1}`, `{"file": "nonumber", "pos": 4}`, `{"file": "binlog.000001", "pos": 0}`} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, checkpointFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := LoadCheckpoint(dir)
		if err == nil || !strings.Contains(err.Error(), "is corrupt") {
			t.Errorf("%q: got %v, %v; want a corrupt-checkpoint error", content, cp, err)
		}
	}
}

// TestVersionsOrder: a later event, or a later row of one event, always
// has a larger version; file rotation included.
func TestVersionsOrder(t *testing.T) {
	cases := [][3]int{{1, 4, 0}, {1, 4, 1}, {1, 4, 4095}, {1, 5, 0}, {1, 1 << 31, 0}, {1, 1<<32 - 1, 4095}, {2, 4, 0}, {1<<20 - 1, 4, 0}}
	for i := 1; i < len(cases); i++ {
		a, b := cases[i-1], cases[i]
		va, vb := version(uint32(a[0]), uint32(a[1]), a[2]), version(uint32(b[0]), uint32(b[1]), b[2])
		if va >= vb {
			t.Errorf("version%v = %d is not below version%v = %d", a, va, b, vb)
		}
	}
	if version(1, 4, 5000) != version(1, 4, 4095) {
		t.Error("rows past 4095 must share the last version of their event")
	}
	if _, err := fileIndex("binlog.000123"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"binlog", "binlog.", "binlog.x1", "binlog.99999999"} {
		if _, err := fileIndex(bad); err == nil {
			t.Errorf("fileIndex(%q) accepted", bad)
		}
	}
}

// TestStartRefusesWrongOrPurgedPositions: a checkpoint from another server
// and a position whose binlog is gone stop the daemon with a message.
func TestStartRefusesWrongOrPurgedPositions(t *testing.T) {
	h := newHarness(t, 1, "")
	r := h.newReplicator(io.Discard)
	server := r.server
	r.Close()

	if err := SaveCheckpoint(h.cfg.StateDir, Checkpoint{Position: Position{File: "binlog.000001", Pos: 4}, Server: "uuid:another"}); err != nil {
		t.Fatal(err)
	}
	r = h.newReplicator(io.Discard)
	err := r.Run(context.Background())
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "belongs to MySQL server uuid:another") {
		t.Fatalf("checkpoint of another server: %v", err)
	}

	if err := SaveCheckpoint(h.cfg.StateDir, Checkpoint{Position: Position{File: "binlog.000999", Pos: 4}, Server: server}); err != nil {
		t.Fatal(err)
	}
	r = h.newReplicator(io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = r.Run(ctx)
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "cannot send the binlog from binlog.000999:4") || !strings.Contains(err.Error(), "re-snapshot") {
		t.Fatalf("purged position: %v", err)
	}
}

func TestPositionBefore(t *testing.T) {
	pos := func(f string, p uint32) Position { return Position{File: f, Pos: p} }
	if !pos("binlog.000009", 900).Before(pos("binlog.000010", 4)) || pos("binlog.000010", 4).Before(pos("binlog.000009", 900)) ||
		pos("binlog.000010", 4).Before(pos("binlog.000010", 4)) || !pos("binlog.000010", 4).Before(pos("binlog.000010", 5)) {
		t.Error("positions misordered")
	}
}
