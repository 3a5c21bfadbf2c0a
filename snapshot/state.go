package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// State files of the two snapshot users: `binlog2ch fullsync` and the
// initial snapshot of `binlog2ch run`. They never share a file, so a
// fullsync run next to the daemon cannot disturb its snapshot.
const (
	FullSyncFile = "fullsync.json"
	InitialFile  = "snapshot.json" // the initial snapshot's
)

// ShadowName is the ClickHouse table an online copy of table fills, to
// be swapped in for it once complete: readers never see the table
// emptied for a copy.
func ShadowName(table string) string { return table + "__b2c_shadow" }

// State is the durable progress of a full copy: where the binlog was
// before any table was read (every snapshot row's version comes from it)
// and, per table, which key ranges are confirmed in ClickHouse.
type State struct {
	Server   string          `json:"server"`
	Position source.Position `json:"position"`
	// FileOffset is the version offset of the binlog history Position is
	// on (source.RowVersion); 0 on the first history.
	FileOffset int64 `json:"file_offset,omitempty"`
	// GTID is the server's executed GTID set at Position ("" without
	// GTIDs), for the checkpoint the copy hands over to.
	GTID    string    `json:"gtid,omitempty"`
	Started time.Time `json:"started"`
	// Tables is keyed by MySQL db.table.
	Tables   map[string]*TableProgress `json:"tables"`
	Complete bool                      `json:"complete"`
	// List is the tables an initial snapshot copies: those that existed
	// when it began.
	List []schema.TableName `json:"list,omitempty"`
	// Recreate marks a `fullsync -recreate` copy.
	Recreate bool `json:"recreate,omitempty"`
	// Partitions are the partition layouts as of Position, for the
	// checkpoint the copy hands over to (nil: not read at Position).
	Partitions *state.PartitionState `json:"partitions,omitempty"`
}

// Version is the version every row of the copy gets, and F, the file
// part of it: at or above every event ending at or before Position, below
// every later one.
func (st *State) Version() (version uint64, f uint32, err error) {
	idx, err := source.FileIndex(st.Position.File)
	if err != nil {
		return 0, 0, err
	}
	f, ok := source.VersionFile(idx, st.FileOffset)
	if !ok {
		return 0, 0, fmt.Errorf("copy position %s with version offset %d is outside the 20 bits row versions hold", st.Position, st.FileOffset)
	}
	return source.RowVersion(f, st.Position.Pos, source.MaxVersionRow), f, nil
}

// TableProgress is one table's confirmed progress.
type TableProgress struct {
	// Key names the columns the ranges are in; a resume with another key
	// (the primary key changed) starts the table over.
	Key []string `json:"key,omitempty"`
	// Done are the key ranges whose rows ClickHouse has, in key order,
	// adjacent ones merged.
	Done []keyRange `json:"done,omitempty"`
	// ScanStarted marks a table copied by one scan (no usable key) that
	// was begun: its rows may be partly in ClickHouse.
	ScanStarted bool `json:"scan_started,omitempty"`
	// Recreated: -recreate dropped and recreated the target in this copy.
	Recreated bool   `json:"recreated,omitempty"`
	Rows      uint64 `json:"rows"`   // rows confirmed so far
	Chunks    uint64 `json:"chunks"` // chunks confirmed so far
	Complete  bool   `json:"complete"`
}

// keyRange is the key range (Lo, Hi]; a nil bound is open. Key values are
// as MySQL prints them (binary for binary columns).
type keyRange struct {
	Lo [][]byte `json:"lo"`
	Hi [][]byte `json:"hi"`
}

func equalKey(a, b [][]byte) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// gaps are the ranges not yet done, in key order. done must be in key order
// with adjacent ranges merged.
func gaps(done []keyRange) []keyRange {
	if len(done) == 0 {
		return []keyRange{{}}
	}
	var out []keyRange
	if done[0].Lo != nil {
		out = append(out, keyRange{Hi: done[0].Lo})
	}
	for i := 1; i < len(done); i++ {
		out = append(out, keyRange{Lo: done[i-1].Hi, Hi: done[i].Lo})
	}
	if last := done[len(done)-1]; last.Hi != nil {
		out = append(out, keyRange{Lo: last.Hi})
	}
	return out
}

// mergeAdjacent merges ranges, in key order, where one ends at the next's
// start.
func mergeAdjacent(rs []keyRange) []keyRange {
	var out []keyRange
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Hi != nil && equalKey(out[n-1].Hi, r.Lo) {
			out[n-1].Hi = r.Hi
			continue
		}
		out = append(out, r)
	}
	return out
}

// covered reports whether done is the whole key space.
func covered(done []keyRange) bool {
	return len(done) == 1 && done[0].Lo == nil && done[0].Hi == nil
}

// Load reads a state file; nil without error when there is none.
func Load(dir, name string) (*State, error) {
	var st State
	found, err := state.ReadFile(dir, name, &st)
	var corrupt *state.CorruptError
	switch {
	case errors.As(err, &corrupt):
		return nil, fmt.Errorf("%s is corrupt (%v); delete it to start the copy over", corrupt.Path, corrupt.Err)
	case !found || err != nil:
		return nil, err
	}
	path := filepath.Join(dir, name)
	if _, err := source.FileIndex(st.Position.File); err != nil {
		return nil, fmt.Errorf("%s is corrupt (position %s); delete it to start the copy over", path, st.Position)
	}
	if st.Tables == nil {
		st.Tables = map[string]*TableProgress{}
	}
	return &st, nil
}

// Save writes a state file atomically and durably, like the
// checkpoint: a reader after a crash sees the old or the new state, never
// a torn one, and never a state newer than what ClickHouse confirmed.
func Save(dir, name string, st *State) error {
	data, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	return state.WriteFile(dir, name, append(data, '\n'))
}
