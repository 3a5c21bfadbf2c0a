package source

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// ExecutedGTIDs reads what the server's binlog holds, as a GTID set:
// @@gtid_executed on MySQL (empty with gtid_mode OFF); on MariaDB
// @@gtid_binlog_pos with @@gtid_binlog_state (a promoted replica's include
// what it replicated, with log_slave_updates).
func ExecutedGTIDs(ctx context.Context, db *sql.DB, flavor string) (gtid.Set, error) {
	if flavor != mysql.MariaDBFlavor {
		var s sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&s); err != nil {
			return gtid.Set{}, fmt.Errorf("read the server's GTIDs (@@gtid_executed): %w", err)
		}
		return gtid.Parse(flavor, s.String)
	}
	var pos, state sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_binlog_state").Scan(&pos, &state); err != nil {
		return gtid.Set{}, fmt.Errorf("read the server's GTIDs (@@gtid_binlog_pos, @@gtid_binlog_state): %w", err)
	}
	return gtid.ParseMariaDBState(pos.String, state.String)
}

// PurgedGTIDs reads what the server executed but no longer has in its
// binlog: @@gtid_purged on MySQL. MariaDB has no such variable (it says
// so when asked for a GTID it no longer has): an empty set.
func PurgedGTIDs(ctx context.Context, db *sql.DB, flavor string) (gtid.Set, error) {
	if flavor == mysql.MariaDBFlavor {
		return gtid.NewSet(flavor), nil
	}
	var s sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_purged").Scan(&s); err != nil {
		return gtid.Set{}, fmt.Errorf("read @@gtid_purged: %w", err)
	}
	return gtid.Parse(flavor, s.String)
}

// CheckHistory compares a checkpoint's position with the server's binlog
// files (SHOW BINARY LOGS): a file shorter than the position, a file
// newer than the server's newest or a file of another basename means the
// binlog history restarted. A file older than the oldest is left to the
// stream, which reports it purged.
func CheckHistory(ctx context.Context, db *sql.DB, p Position) error {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	type file struct {
		name string
		size uint64
	}
	var files []file
	for rows.Next() {
		var f file
		dest := make([]any, len(cols))
		for i := range dest {
			dest[i] = new(sql.RawBytes)
		}
		dest[0], dest[1] = &f.name, &f.size
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("SHOW BINARY LOGS: %w", err)
		}
		files = append(files, f)
	}
	if err := rows.Err(); err != nil || len(files) == 0 {
		return err
	}
	base := func(name string) string { return name[:max(0, strings.LastIndexByte(name, '.'))] }
	newest := files[len(files)-1]
	if base(newest.name) != base(p.File) {
		return &HistoryError{At: p, Reason: fmt.Sprintf("the server's binlog files are named %s.*, the checkpoint's %s.*", base(newest.name), base(p.File))}
	}
	for _, f := range files {
		if f.name == p.File {
			if f.size < uint64(p.Pos) {
				return &HistoryError{At: p, Reason: fmt.Sprintf("the server's %s has only %d bytes", f.name, f.size)}
			}
			return nil
		}
	}
	if MustFileIndex(p.File) > MustFileIndex(newest.name) {
		return &HistoryError{At: p, Reason: fmt.Sprintf("the server's newest binlog file is %s", newest.name)}
	}
	return nil
}

// GTIDsAt is the executed GTID set at a binlog position, where the server
// can tell: MariaDB's BINLOG_GTID_POS. ok is false on MySQL, which has no
// such function (a stream learns it at the next file's header).
func GTIDsAt(ctx context.Context, db *sql.DB, flavor string, p Position) (gtids string, ok bool, err error) {
	if flavor != mysql.MariaDBFlavor {
		return "", false, nil
	}
	var g sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", p.File, p.Pos).Scan(&g); err != nil {
		return "", false, fmt.Errorf("BINLOG_GTID_POS(%s): %w", p, err)
	}
	return g.String, g.Valid, nil
}

// CurrentGTIDPosition is the server's binlog position with the executed
// GTID set there, read together: SHOW MASTER STATUS's Executed_Gtid_Set
// on MySQL, BINLOG_GTID_POS of the position on MariaDB.
func CurrentGTIDPosition(ctx context.Context, db *sql.DB, flavor string) (Position, string, error) {
	p, executed, err := currentPosition(ctx, db)
	if err != nil || flavor != mysql.MariaDBFlavor {
		return p, strings.Join(strings.Fields(executed), ""), err
	}
	g, _, err := GTIDsAt(ctx, db, flavor, p)
	return p, g, err
}

// OldestBinlogFile is the first file SHOW BINARY LOGS lists.
func OldestBinlogFile(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return "", fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	if !rows.Next() {
		return "", fmt.Errorf("SHOW BINARY LOGS lists no file: %w", rows.Err())
	}
	var name string
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	dest[0] = &name
	if err := rows.Scan(dest...); err != nil {
		return "", err
	}
	return name, nil
}

// learnGTIDs takes the executed set from a file's header, which the
// server writes with the set before the file: MySQL's previous GTIDs,
// MariaDB's GTID list (its binlog state, whose last number per domain is
// the position). The stream started without a set knows it from here.
func (s *Stream) learnGTIDs(e replication.Event) {
	switch e := e.(type) {
	case *replication.PreviousGTIDsEvent:
		if g, err := gtid.Parse(mysql.MySQLFlavor, e.GTIDSets); err == nil && s.srv.Flavor != mysql.MariaDBFlavor {
			s.gtids, s.gtidsKnown = g, true
		}
	case *replication.MariadbGTIDListEvent:
		if s.srv.Flavor == mysql.MariaDBFlavor {
			s.gtids, s.gtidsKnown = gtid.FromMariaDBList(e.GTIDs), true
		}
	}
}
