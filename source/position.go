// Package source is the stream: it follows one server's binlog in binlog
// order and hands a Handler its Rows, Statements and Commits. It owns the
// reading's state: positions and their order, reconnects and backoff, the
// binlog history a checkpoint was saved on, GTID sets and what a server
// lacks of them, XA transactions held until their outcome, row versions,
// and the schema of each table map as of its event. It also connects to the
// server and checks what the stream needs of it (Inspect). It must not know
// of ClickHouse, batching or how positions are stored; the bytes of the
// wire are the binlog package's, the meaning of a statement the ddl
// package's.
package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Position is a binlog position: the file and the offset of the next event.
type Position struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
}

func (p Position) String() string { return p.File + ":" + strconv.FormatUint(uint64(p.Pos), 10) }

// Before orders positions on one server: by the file's numeric suffix,
// then the offset. A file name without one counts as the first file.
func (p Position) Before(q Position) bool {
	pi, _ := FileIndex(p.File)
	qi, _ := FileIndex(q.File)
	return pi < qi || pi == qi && p.Pos < q.Pos
}

// MaxFileIndex is the largest binlog file suffix binlog2ch follows: row
// versions hold it in 20 bits.
const MaxFileIndex = 1<<20 - 1

// FileIndex is the numeric suffix of a binlog file name, binlog.000123 ->
// 123: it orders files and is part of every row version.
func FileIndex(file string) (uint32, error) {
	i := strings.LastIndexByte(file, '.')
	if i < 0 || i == len(file)-1 {
		return 0, fmt.Errorf("binlog file name %q has no numeric suffix", file)
	}
	n, err := strconv.ParseUint(file[i+1:], 10, 32)
	if err != nil || n > MaxFileIndex {
		return 0, fmt.Errorf("binlog file name %q: suffix is not a number below %d", file, MaxFileIndex+1)
	}
	return uint32(n), nil
}

// MustFileIndex is FileIndex for a name already checked (0 otherwise).
func MustFileIndex(file string) uint32 {
	i, _ := FileIndex(file)
	return i
}

// CurrentPosition reads a server's current binlog position.
func CurrentPosition(ctx context.Context, db *sql.DB) (Position, error) {
	p, _, err := currentPosition(ctx, db)
	return p, err
}

// currentPosition reads SHOW MASTER STATUS: the position and, on MySQL,
// the executed GTID set (its fifth column).
func currentPosition(ctx context.Context, db *sql.DB) (Position, string, error) {
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		if rows, err = db.QueryContext(ctx, "SHOW BINARY LOG STATUS"); err != nil {
			return Position{}, "", fmt.Errorf("read the binlog position: %w", err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Position{}, "", err
	}
	if !rows.Next() {
		return Position{}, "", errors.New("SHOW MASTER STATUS is empty: is the binary log on, and does the user have REPLICATION CLIENT?")
	}
	var p Position
	var gtids sql.NullString
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	dest[0], dest[1] = &p.File, &p.Pos
	if len(cols) >= 5 && strings.EqualFold(cols[4], "Executed_Gtid_Set") {
		dest[4] = &gtids
	}
	if err := rows.Scan(dest...); err != nil {
		return Position{}, "", err
	}
	return p, gtids.String, rows.Err()
}
