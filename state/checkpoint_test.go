package state

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/source"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if cp, err := LoadFile(dir); cp != nil || err != nil {
		t.Fatalf("no file: got %v, %v", cp, err)
	}
	want := Checkpoint{Position: source.Position{File: "binlog.000042", Pos: 1234}, Server: "uuid:x", SavedAt: time.Unix(1, 0).UTC(),
		StreamState: StreamState{GTID: "0-7-12", ReadGTID: "0-7-14", History: source.History{FileCreated: 17, LastType: 16, LastTime: 18, LastSize: 31},
			Offset: -3, Ceiling: 40, TableGTIDs: gtid.Tables{"db.t": {"0": 14}}}}
	if err := SaveFile(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(dir)
	if err != nil || !reflect.DeepEqual(*got, want) {
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
		if err := os.WriteFile(filepath.Join(dir, CheckpointFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := LoadFile(dir)
		if err == nil || !strings.Contains(err.Error(), "is corrupt") {
			t.Errorf("%q: got %v, %v; want a corrupt-checkpoint error", content, cp, err)
		}
	}
}
