package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlog2ch/binlog2ch/loadgen"
)

// loadgenCmd fills MySQL tables like Bifrost's insertDataTest: its flags
// keep that tool's names and meaning.
func loadgenCmd(ctx context.Context, e *env, args []string) int {
	o, code, done := loadgenOptions(e, args)
	if done {
		return code
	}
	o.Progress = e.stdout
	_, err := loadgen.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch loadgen: %v\n", err)
		var oe *loadgen.OptionsError
		if errors.As(err, &oe) {
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// loadgenOptions parses the flags; done is true when the command must
// return code (after -h or a bad flag).
func loadgenOptions(e *env, args []string) (o loadgen.Options, code int, done bool) {
	fs := newFlagSet(e, "loadgen", "-schema DB [-table T] [-count N] [flags]")
	var intervalMS int
	fs.StringVar(&o.Host, "host", "127.0.0.1", "MySQL host")
	fs.IntVar(&o.Port, "port", 3306, "MySQL port")
	fs.StringVar(&o.User, "user", "root", "MySQL user")
	fs.StringVar(&o.Password, "pwd", "", "MySQL password")
	fs.StringVar(&o.Schema, "schema", "", "database (required)")
	fs.StringVar(&o.Table, "table", "binlog_field_test_1", "table to fill (binlog_field_test's columns)")
	fs.IntVar(&o.Count, "count", 100000, "rows to insert per table (0 with -duration: no limit)")
	fs.IntVar(&o.BatchSize, "batchsize", 1000, "rows per INSERT statement")
	fs.IntVar(&o.Conns, "conn", 4, "connections, each writing to every table in turn")
	fs.IntVar(&intervalMS, "time_interval", 0, "pause between statements per connection, in milliseconds")
	fs.BoolVar(&o.Create, "create", false, "create the table (testdata/binlog_field_test.sql) and any missing extra columns")
	fs.BoolVar(&o.Drop, "drop", false, "drop and recreate the table first")
	fs.IntVar(&o.Tables, "tables", 1, "fill N tables, -count rows each, every connection writing to each in turn: the -table name's prefix with _1 .. _N")
	fs.Float64Var(&o.UpdateRatio, "update-ratio", 0, "share of statements that update one existing random row (0 to 1)")
	fs.Float64Var(&o.DeleteRatio, "delete-ratio", 0, "share of statements that delete one existing random row (0 to 1)")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (e.g. 60s), even before -count")
	fs.Float64Var(&o.Rate, "rate", 0, "target inserted rows per second over all connections (0: as fast as possible)")
	fs.IntVar(&o.ExtraColumns, "extra-columns", 0, "add N nullable VARCHAR(64) columns extra_1 .. extra_N (a wider table)")
	fs.IntVar(&o.MaxLen, "max-len", 0, "cap every string and blob at N characters (8: Bifrost-sized rows; 0: realistic long tail)")
	fs.BoolVar(&o.FullRange, "full-range", false, "DATE and DATETIME values over MySQL's whole range (years 1000-9999), most outside ClickHouse's types, to exercise schema.invalid_dates (default: years 1971-2105, which every ClickHouse target holds)")
	var seed uint64
	fs.Uint64Var(&seed, "seed", 0, "random seed (0: from the clock); the same seed writes the same rows")
	if code, done := parseFlags(e, fs, args); done {
		return o, code, true
	}
	o.Interval = time.Duration(intervalMS) * time.Millisecond
	o.Seed = seed
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return o, exitOK, false
}
