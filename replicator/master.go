package replicator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// checkpointFile is the checkpoint's name in state_dir.
const checkpointFile = "checkpoint.json"

// Position is a binlog position: the file and the offset of the next event.
type Position struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
}

func (p Position) String() string { return p.File + ":" + strconv.FormatUint(uint64(p.Pos), 10) }

// Before orders positions on one server: by the file's numeric suffix,
// then the offset. A file name without one counts as the first file.
func (p Position) Before(q Position) bool {
	pi, _ := fileIndex(p.File)
	qi, _ := fileIndex(q.File)
	return pi < qi || pi == qi && p.Pos < q.Pos
}

// fileIndex is the numeric suffix of a binlog file name, binlog.000123 ->
// 123: it orders files and is part of every row version.
func fileIndex(file string) (uint32, error) {
	i := strings.LastIndexByte(file, '.')
	if i < 0 || i == len(file)-1 {
		return 0, fmt.Errorf("binlog file name %q has no numeric suffix", file)
	}
	n, err := strconv.ParseUint(file[i+1:], 10, 32)
	if err != nil || n >= 1<<versionFileBits {
		return 0, fmt.Errorf("binlog file name %q: suffix is not a number below %d", file, 1<<versionFileBits)
	}
	return uint32(n), nil
}

// Checkpoint is the position binlog2ch resumes from: every row of every
// transaction before it is in ClickHouse.
type Checkpoint struct {
	Position
	// ServerUUID identifies the source server the position belongs to
	// (server_uuid on MySQL, server_id on MariaDB), so a checkpoint is never
	// applied to another server's binlog.
	Server  string    `json:"server"`
	SavedAt time.Time `json:"saved_at"`
}

// LoadCheckpoint reads the checkpoint from dir. It returns nil and no error
// when there is none; a file that exists but cannot be read or parsed is an
// error, never a silent restart from scratch.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	path := filepath.Join(dir, checkpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	var cp Checkpoint
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s is corrupt (%v); restore it from a backup, or delete it to start over from the current binlog position (rows written since the lost position are then missing until a full sync)", path, err)
	}
	if _, err := fileIndex(cp.File); err != nil || cp.Pos < 4 {
		return nil, fmt.Errorf("checkpoint %s is corrupt (position %s); restore it from a backup, or delete it to start over", path, cp.Position)
	}
	return &cp, nil
}

// SaveCheckpoint writes the checkpoint atomically and durably: a temporary
// file, fsynced, renamed over the old one, and the directory fsynced.
func SaveCheckpoint(dir string, cp Checkpoint) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state_dir %s: %w", dir, err)
	}
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, checkpointFile)
	tmp, err := os.CreateTemp(dir, checkpointFile+".tmp*")
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("save checkpoint: fsync %s: %w", dir, err)
	}
	return nil
}

// Row versions come from binlog coordinates, so a replay writes the same
// versions and a later change always has a larger one:
// file index (20 bits) | event end position (32 bits) | row in event (12 bits).
const (
	versionFileBits = 20
	versionRowBits  = 12
	maxVersionRow   = 1<<versionRowBits - 1
)

// version is the _version of row `row` of the event ending at pos in the
// binlog file with index file. Rows beyond the 4095th of one event share the
// last version; such events need binlog_row_event_max_size far above its
// default, and two changes of one key within one event are rarer still.
func version(file, pos uint32, row int) uint64 {
	if row > maxVersionRow {
		row = maxVersionRow
	}
	return uint64(file)<<(32+versionRowBits) | uint64(pos)<<versionRowBits | uint64(row)
}
