package main

import (
	"context"
	"fmt"

	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/verify"
)

// verifyCmd compares MySQL and ClickHouse table by table: exit 0 when every
// table matches, 1 on a mismatch or an extra ClickHouse table, 2 on errors (bad flags or config, a
// server that cannot be reached, a missing table).
func verifyCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "verify", "-config FILE [-tables 'db.*,db2.t'] [-chunk N] [-json]")
	var cf configFlags
	cf.register(fs)
	tables := fs.String("tables", "", "comma-separated db.table patterns to compare, globs as tables.include takes them: shop.*,crm.users (default: every replicated table)")
	chunk := fs.Int("chunk", 100000, "rows per key range compared at once")
	asJSON := fs.Bool("json", false, "print a JSON report instead of tables")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	if *chunk < 1 {
		fmt.Fprintln(e.stderr, "binlog2ch verify: -chunk must be >= 1")
		return exitUsage
	}
	logger, cfg, code := cf.load(e, "verify")
	if code != exitOK {
		return code
	}
	var patterns []string
	if *tables != "" {
		var err error
		if patterns, err = tablePatterns(*tables); err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch verify: %v\n", err)
			return exitUsage
		}
		// A name without a glob that is not replicated is refused here; a
		// pattern matching no MySQL table still checks ClickHouse for
		// extra tables.
		db, err := source.OpenMySQL(ctx, cfg, logger)
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch verify: %v\n", err)
			return exitUsage
		}
		_, err = selectTables(ctx, cfg, db, *tables)
		db.Close()
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch verify: %v\n", err)
			return exitUsage
		}
	}
	rep, err := verify.Run(ctx, cfg, verify.Options{Patterns: patterns, Chunk: *chunk, Log: logger})
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch verify: %v\n", err)
		if *asJSON {
			// A machine reading stdout still gets a report.
			_ = (&verify.Report{Error: err.Error(), Tables: []*verify.TableReport{}}).WriteJSON(e.stdout)
		}
		return exitUsage
	}
	if *asJSON {
		err = rep.WriteJSON(e.stdout)
	} else {
		err = rep.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch verify: %v\n", err)
		return exitUsage
	}
	switch {
	case rep.Errors > 0:
		return exitUsage
	case rep.Mismatches > 0 || len(rep.ExtraTables) > 0:
		return exitError
	}
	return exitOK
}
