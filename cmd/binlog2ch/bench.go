package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/binlog2ch/binlog2ch/bench"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
)

// benchCmd runs the benchmark scenarios against throwaway servers (or the
// given ones) and writes the report.
func benchCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "bench", "[-short] [-mysql URL -clickhouse URL] [flags]")
	short := fs.Bool("short", false, "small sizes: 200k catch-up rows, 10 s live phases at 5000 rows/s (under two minutes)")
	d := bench.Defaults(false)
	rows := fs.Int("rows", 0, fmt.Sprintf("catch-up rows (default %d, -short %d)", d.CatchUpRows, bench.Defaults(true).CatchUpRows))
	rate := fs.Float64("live-rate", 0, fmt.Sprintf("rows/s of the fixed-rate live phase (default %.0f)", d.LiveRate))
	dur := fs.Duration("live-duration", 0, fmt.Sprintf("length of each live phase (default %s)", d.LiveDuration))
	maxLen := fs.Int("max-len", d.MaxLen, "cap on string and blob lengths (8: rows the size of Bifrost's insertDataTest rows)")
	conns := fs.Int("conn", d.Conns, "loadgen connections")
	mysqlURL := fs.String("mysql", "", "use this server instead of a throwaway one: mysql://user:password@host:port")
	chURL := fs.String("clickhouse", "", "use this server instead of a throwaway one: clickhouse://user:password@host:port (native port)")
	out := fs.String("out", "bench-results", "directory for the JSON, Markdown and SVG reports")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	o := bench.Defaults(*short)
	if *rows > 0 {
		o.CatchUpRows = *rows
	}
	if *rate > 0 {
		o.LiveRate = *rate
	}
	if *dur > 0 {
		o.LiveDuration = *dur
	}
	o.MaxLen, o.Conns = *maxLen, *conns
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
		return exitError
	}
	o.Daemon = func(config string) *exec.Cmd {
		return exec.Command(self, "run", "-config", config, "-log-format", "json")
	}
	if o.Dir, err = os.MkdirTemp("", "binlog2ch-bench-"); err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
		return exitError
	}
	defer os.RemoveAll(o.Dir)
	o.Progress = e.stderr

	var servers localserver.Servers
	if (*mysqlURL == "") != (*chURL == "") {
		fmt.Fprintln(e.stderr, "binlog2ch bench: give both -mysql and -clickhouse, or neither (throwaway servers)")
		return exitUsage
	}
	if *mysqlURL != "" {
		if servers.MySQL, err = localserver.External("-mysql", *mysqlURL); err == nil {
			servers.ClickHouse, err = localserver.External("-clickhouse", *chURL)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
			return exitUsage
		}
	} else {
		fmt.Fprintln(e.stderr, "starting throwaway MariaDB and ClickHouse servers...")
		sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		s, err := localserver.Start(sctx)
		cancel()
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
			return exitError
		}
		defer s.Stop()
		servers = *s
	}
	o.MySQL, o.ClickHouse = servers.MySQL.Endpoint, servers.ClickHouse.Endpoint
	rep, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
		return exitError
	}
	rep.Binlog2ch = buildVersion()
	fmt.Fprintln(e.stdout)
	rep.Table(e.stdout)
	paths, err := rep.WriteFiles(*out)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch bench: write the report: %v\n", err)
		return exitError
	}
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", p)
	}
	return exitOK
}
