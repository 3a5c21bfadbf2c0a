// Package state keeps what replication must remember across restarts and
// hosts: the checkpoint (a file in state_dir, or a replicated ClickHouse
// table) and the ZooKeeper lease that lets one daemon at a time move it. It
// must not read the binlog or write replicated rows: it stores the
// positions its callers hand it.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/source"
)

// CheckpointFile is the checkpoint's name in state_dir.
const CheckpointFile = "checkpoint.json"

// Checkpoint is the position binlog2ch resumes from: every row of every
// transaction before it is in ClickHouse.
type Checkpoint struct {
	source.Position
	// ServerUUID identifies the source server the position belongs to
	// (server_uuid on MySQL, server_id on MariaDB), so a checkpoint is never
	// applied to another server's binlog.
	Server  string    `json:"server"`
	SavedAt time.Time `json:"saved_at"`
	StreamState
}

// StreamState is what the stream needs beside the position to resume it,
// also after a change of binlog history (a failover to another server,
// RESET MASTER): GTIDs, the history, row versions, the keys of the time.
type StreamState struct {
	// GTID is the executed GTID set at the position ("" when the server
	// writes none).
	GTID string `json:"gtid,omitempty"`
	// ReadGTID is what the reader had read when this was saved: rows of
	// the transactions between GTID and it may be in ClickHouse already.
	ReadGTID string `json:"read_gtid,omitempty"`
	// History identifies the binlog the position is on.
	History source.History `json:"history,omitzero"`
	// Offset is the history's row-version offset (source.RowVersion).
	Offset int64 `json:"version_offset,omitempty"`
	// Ceiling bounds the versions written: every row in ClickHouse has F
	// below it. A new history starts there.
	Ceiling uint32 `json:"version_ceiling,omitempty"`
	// TableGTIDs is, per table, the newest transaction of each GTID origin
	// that changed it (gtid.Tables).
	TableGTIDs gtid.Tables `json:"touched,omitempty"`
	// ResumeByGTID: read on from GTID, not from the position, which is
	// only where a copy was taken (the repair of a GTID gap after a
	// failover; Offset is then the new history's).
	ResumeByGTID bool `json:"resume_by_gtid,omitempty"`
	// ForeignKeys are the keys of the replicated tables as of the position
	// (cascade.KeyState): a restart replays the binlog with the keys of its
	// time, which information_schema no longer shows after DDL since.
	ForeignKeys *cascade.KeyState `json:"foreign_keys,omitempty"`
	// Partitions are the partition layouts as of the position, with
	// on_partition_maintenance: apply (nil: not kept then; partitions.go).
	Partitions *PartitionState `json:"partitions,omitempty"`
	// Selection is the tables selected at the position (nil: saved before
	// it was kept; the config's then), and Tables those of them
	// ClickHouse does not hold whole, by MySQL db.table (tables.go).
	Selection *Selection            `json:"selection,omitempty"`
	Tables    map[string]*TableCopy `json:"tables,omitempty"`
	// Stored is, by MySQL db.table, how far the tables whose rows were in
	// ClickHouse past the position were stored: the first version of the
	// last rows event of each (sink.Writer.StoredVersion). A restart
	// skips those rows events rather than send a second copy.
	Stored map[string]uint64 `json:"stored,omitempty"`
}

// LoadFile reads the checkpoint from dir. It returns nil and no error
// when there is none; a file that exists but cannot be read or parsed is an
// error, never a silent restart from scratch.
func LoadFile(dir string) (*Checkpoint, error) {
	var cp Checkpoint
	found, err := ReadFile(dir, CheckpointFile, &cp)
	var corrupt *CorruptError
	switch {
	case errors.As(err, &corrupt):
		return nil, fmt.Errorf("checkpoint %s is corrupt (%v); restore it from a backup, or delete it to start over from the current binlog position (rows written since the lost position are then missing until a full sync)", corrupt.Path, corrupt.Err)
	case !found || err != nil:
		return nil, err
	}
	if _, err := source.FileIndex(cp.File); err != nil || cp.Pos < 4 {
		return nil, fmt.Errorf("checkpoint %s is corrupt (position %s); restore it from a backup, or delete it to start over", filepath.Join(dir, CheckpointFile), cp.Position)
	}
	return &cp, nil
}

// CorruptError is a state file that exists but does not decode.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s is corrupt: %v", e.Path, e.Err) }

func (e *CorruptError) Unwrap() error { return e.Err }

// ReadFile decodes the JSON file dir/name into v, strictly: an unknown
// field is an error, not a silently ignored one. found is false, without an
// error, when there is no file; content that does not decode is a
// *CorruptError.
func ReadFile(dir, name string, v any) (found bool, err error) {
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s: %w", p, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return true, &CorruptError{Path: p, Err: err}
	}
	return true, nil
}

// SaveFile writes the checkpoint atomically and durably (WriteFile).
func SaveFile(dir string, cp Checkpoint) error {
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(dir, CheckpointFile, append(data, '\n'))
}

// WriteFile replaces dir/name atomically and durably: a temporary file,
// fsynced, renamed over the old one, and the directory fsynced. A reader
// after a crash sees the old or the new content, never a torn one.
func WriteFile(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state_dir %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("save %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("save %s: fsync %s: %w", name, dir, err)
	}
	return nil
}
