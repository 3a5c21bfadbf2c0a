// Package retention is the source server's binlog retention as binlog2ch
// sees it coming: when the server may purge the binlog file that holds a
// position (the checkpoint's), from its purge settings, its files' sizes
// and the times their format description events hold. It only reads: it
// must never purge, change a server setting or read more of a binlog file
// than its first events.
//
// What the servers do (MariaDB's and MySQL's sql/log.cc,
// MYSQL_BIN_LOG::purge_logs_before_date and the size purge of MariaDB's
// MDEV-31404): at start, at each rotation (max_binlog_size, FLUSH BINARY
// LOGS) and, for the size limit, when the binlog is written or the limit
// changed, the server deletes files oldest first, never the active one:
//   - by age, while the file's modification time (stat's st_mtime, in
//     seconds) is before now minus binlog_expire_logs_seconds (MariaDB
//     10.6+, MySQL 8; MariaDB keeps expire_logs_days in step with it,
//     MySQL uses expire_logs_days only when the seconds are 0, and MySQL
//     8.0.29+ not at all with binlog_expire_logs_auto_purge OFF);
//   - by size (MariaDB 11.4+'s max_binlog_total_size, Percona's
//     binlog_space_limit), while the files' total is over the limit.
//
// A closed file's modification time is when the server closed it, which
// SQL does not show; the next file's format description event was written
// as it was opened, the same second. After a server start the file before
// it may have been closed long before (a shutdown, a crash): its own
// first event, when it was opened, is used then, which can only make the
// headroom shorter than the server's.
package retention

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Settings are a server's automatic purge settings.
type Settings struct {
	// Expire is the age past which a closed file may be purged; 0: files
	// are never purged by age.
	Expire time.Duration
	// ExpireSetting names the variable Expire comes from, for messages.
	ExpireSetting string
	// SizeLimit is the total size of the files past which the oldest
	// are purged; 0: none.
	SizeLimit uint64
	// SizeSetting names the variable SizeLimit comes from.
	SizeSetting string
}

// Unlimited: the server purges no file by itself.
func (s Settings) Unlimited() bool { return s.Expire == 0 && s.SizeLimit == 0 }

// ReadSettings reads the purge settings of the server db is connected to.
func ReadSettings(ctx context.Context, db *sql.DB) (Settings, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN "+
		"('binlog_expire_logs_seconds', 'expire_logs_days', 'binlog_expire_logs_auto_purge', 'max_binlog_total_size', 'binlog_space_limit')")
	if err != nil {
		return Settings{}, fmt.Errorf("reading the binlog purge settings: %w", err)
	}
	defer rows.Close()
	vars := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return Settings{}, fmt.Errorf("reading the binlog purge settings: %w", err)
		}
		vars[name] = value
	}
	if err := rows.Err(); err != nil {
		return Settings{}, fmt.Errorf("reading the binlog purge settings: %w", err)
	}
	return settingsOf(vars)
}

func settingsOf(vars map[string]string) (Settings, error) {
	var s Settings
	if v, ok := vars["binlog_expire_logs_seconds"]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("binlog_expire_logs_seconds = %q: %w", v, err)
		}
		s.Expire, s.ExpireSetting = time.Duration(n)*time.Second, "binlog_expire_logs_seconds"
	}
	if v, ok := vars["expire_logs_days"]; ok && s.Expire == 0 {
		// MariaDB's is a DOUBLE, MySQL's an integer.
		d, err := strconv.ParseFloat(v, 64)
		if err != nil || d < 0 {
			return s, fmt.Errorf("expire_logs_days = %q: not a number of days", v)
		}
		s.Expire, s.ExpireSetting = time.Duration(math.Round(d*86400))*time.Second, "expire_logs_days"
	}
	if v := vars["binlog_expire_logs_auto_purge"]; v == "OFF" || v == "0" || s.Expire == 0 {
		s.Expire, s.ExpireSetting = 0, ""
	}
	for _, name := range []string{"max_binlog_total_size", "binlog_space_limit"} {
		v, ok := vars[name]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("%s = %q: %w", name, v, err)
		}
		if n > 0 {
			s.SizeLimit, s.SizeSetting = n, name
			break
		}
	}
	return s, nil
}

// File is one binlog file as SHOW BINARY LOGS lists it.
type File struct {
	Name string
	Size uint64
}

// ListFiles is SHOW BINARY LOGS: the server's files, oldest first, the
// last the active one.
func ListFiles(ctx context.Context, db *sql.DB) ([]File, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("SHOW BINARY LOGS (needs BINLOG MONITOR on MariaDB, REPLICATION CLIENT on MySQL): %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var files []File
	for rows.Next() {
		// Log_name, File_size, and on MySQL 8 Encrypted.
		var f File
		dest := []any{&f.Name, &f.Size}
		for range len(cols) - 2 {
			dest = append(dest, new(sql.RawBytes))
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
		}
		files = append(files, f)
	}
	return files, rows.Err()
}

// Limits that may purge a file, Estimate.By.
const (
	ByAge  = "age"
	BySize = "size"
)

// Estimate is when the server may purge one binlog file.
type Estimate struct {
	File string
	// Unlimited: nothing foreseen purges the file (At is zero): no
	// setting of the server's, or only the size limit (Setting) while the
	// binlog does not grow or the file is the active one.
	Unlimited bool
	// Gone: the server no longer lists the file.
	Gone bool
	// At is the earliest time the server may purge the file: after it,
	// its next check deletes it (the next rotation for an age limit). In
	// the past when the file is already due.
	At time.Time
	// By is the limit that purges it first (ByAge, BySize), Setting its
	// variable.
	By, Setting string
	// Active: the file is the one the server writes, which it never
	// purges; it is closed some time from now, so At is a lower bound.
	Active bool
}

// Headroom is how long from now until the file may be purged: +Inf when
// nothing purges it, -Inf when it is gone.
func (e Estimate) Headroom(now time.Time) float64 {
	switch {
	case e.Gone:
		return math.Inf(-1)
	case e.Unlimited:
		return math.Inf(1)
	}
	return e.At.Sub(now).Seconds()
}

// Compute estimates when the server may purge file, given its files
// (ListFiles), when file was closed (zero while it is the active one),
// and the rate the binlog grows at in bytes a second (0: not known, or
// idle; the size limit then counts as not reached).
func Compute(s Settings, files []File, file string, closed, now time.Time, rate float64) Estimate {
	e := Estimate{File: file}
	i := indexOf(files, file)
	if i < 0 {
		e.Gone = true
		return e
	}
	e.Active = i == len(files)-1
	e.Unlimited = true
	if s.Expire > 0 {
		// The server deletes the file once st_mtime < now - expire; the
		// active file's clock starts when it is closed, not yet.
		from := closed
		if e.Active {
			from = now
		}
		e.At, e.By, e.Setting, e.Unlimited = from.Add(s.Expire), ByAge, s.ExpireSetting, false
	}
	if s.SizeLimit > 0 && !e.Active {
		// The files before it go first; it goes once it and the files
		// after it are over the limit on their own.
		var from uint64
		for _, f := range files[i:] {
			from += f.Size
		}
		var at time.Time
		switch {
		case from > s.SizeLimit:
			at = now
		case rate > 0:
			at = now.Add(time.Duration(float64(s.SizeLimit-from) / rate * float64(time.Second)))
		}
		if !at.IsZero() && (e.Unlimited || at.Before(e.At)) {
			e.At, e.By, e.Setting, e.Unlimited = at, BySize, s.SizeSetting, false
		}
	}
	if e.Unlimited && s.SizeLimit > 0 {
		e.By, e.Setting = BySize, s.SizeSetting
	}
	return e
}

func indexOf(files []File, name string) int {
	for i, f := range files {
		if f.Name == name {
			return i
		}
	}
	return -1
}
