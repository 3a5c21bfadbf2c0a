package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/binlog2ch/binlog2ch/bench"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
)

// benchCmd runs the benchmark scenarios against throwaway servers (or the
// given ones) and writes the report.
func benchCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "bench", "[-short] [-scenario LIST] [-mysql URL -clickhouse URL [-cluster NAME]] [-cluster-shards N] [flags]")
	short := fs.Bool("short", false, "small sizes: 200k catch-up rows, 10 s live phases at 5000 rows/s, 50 tables at 100 rows/s for 10 s")
	d, ds := bench.Defaults(false), bench.Defaults(true)
	daemon := fs.String("daemon", "", "run this binlog2ch binary as the daemon instead of this one (to compare two builds side by side)")
	scenarios := fs.String("scenario", "", fmt.Sprintf("comma-separated scenarios to run, of %s (default all; %s and %s on a cluster)",
		strings.Join(bench.Scenarios, ", "), bench.ScenarioCatchUp, bench.ScenarioLive))
	tables := fs.Int("tables", 0, fmt.Sprintf("many-tables: tables (default %d, -short %d)", d.Tables, ds.Tables))
	tablesRate := fs.Float64("rate", 0, fmt.Sprintf("many-tables: single-row INSERTs per second over all the tables, and into the one table of the companion run (default %.0f, -short %.0f)", d.TablesRate, ds.TablesRate))
	tablesDur := fs.Duration("duration", 0, fmt.Sprintf("many-tables: length of each run (default %s, -short %s)", d.TablesDuration, ds.TablesDuration))
	rows := fs.Int("rows", 0, fmt.Sprintf("catch-up rows (default %d, -short %d)", d.CatchUpRows, ds.CatchUpRows))
	rate := fs.Float64("live-rate", 0, fmt.Sprintf("rows/s of the fixed-rate live phase (default %.0f)", d.LiveRate))
	dur := fs.Duration("live-duration", 0, fmt.Sprintf("length of each live phase (default %s)", d.LiveDuration))
	maxLen := fs.Int("max-len", d.MaxLen, "cap on string and blob lengths (8: rows the size of Bifrost's insertDataTest rows)")
	conns := fs.Int("conn", d.Conns, "loadgen connections")
	mysqlURL := fs.String("mysql", "", "use this server instead of a throwaway one: mysql://user:password@host:port")
	chURL := fs.String("clickhouse", "", "use this server instead of a throwaway one: clickhouse://user:password@host:port (native port)")
	cluster := fs.String("cluster", "", "with -clickhouse: replicate into this cluster of its remote_servers (rows counted through the Distributed tables)")
	shards := fs.Int("cluster-shards", 0, "instead of a throwaway ClickHouse server, a throwaway cluster of this many shards (1 replica each) and a ZooKeeper")
	clusterInsert := fs.String("cluster-insert", "", "the daemon's clickhouse.cluster_insert in a cluster: shards (default) or distributed")
	out := fs.String("out", "bench-results", "directory for the JSON, Markdown and SVG reports")
	batch := fs.String("daemon-batch", "", "the daemon's batch settings instead of its defaults, as YAML flow keys: -daemon-batch 'live_flush_interval: 100ms, max_inflight: 4'")
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
	if *tables > 0 {
		o.Tables = *tables
	}
	if *tablesRate > 0 {
		o.TablesRate = *tablesRate
	}
	if *tablesDur > 0 {
		o.TablesDuration = *tablesDur
	}
	o.MaxLen, o.Conns, o.DaemonBatch = *maxLen, *conns, *batch
	clustered := *cluster != "" || *shards > 0
	if *scenarios != "" {
		for _, s := range strings.Split(*scenarios, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(bench.Scenarios, s) {
				fmt.Fprintf(e.stderr, "binlog2ch bench: -scenario: no scenario %q (there are %s)\n", s, strings.Join(bench.Scenarios, ", "))
				return exitUsage
			}
			o.Scenarios = append(o.Scenarios, s)
		}
		if clustered && slices.Contains(o.Scenarios, bench.ScenarioManyTables) {
			fmt.Fprintln(e.stderr, "binlog2ch bench: the many-tables scenario measures one ClickHouse server; it does not run on a cluster")
			return exitUsage
		}
	} else if clustered {
		o.Scenarios = []string{bench.ScenarioCatchUp, bench.ScenarioLive}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
		return exitError
	}
	if *daemon != "" {
		self = *daemon // another build, measured by this one's scenarios
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
	switch {
	case *cluster != "" && *chURL == "":
		fmt.Fprintln(e.stderr, "binlog2ch bench: -cluster needs -clickhouse (a server of that cluster); -cluster-shards starts a throwaway one")
		return exitUsage
	case *shards > 0 && *chURL != "":
		fmt.Fprintln(e.stderr, "binlog2ch bench: -cluster-shards starts throwaway servers; with -clickhouse, use -cluster")
		return exitUsage
	case *shards < 0 || *shards > 8:
		fmt.Fprintln(e.stderr, "binlog2ch bench: -cluster-shards must be from 1 to 8")
		return exitUsage
	case *clusterInsert != "" && *cluster == "" && *shards == 0:
		fmt.Fprintln(e.stderr, "binlog2ch bench: -cluster-insert applies to a cluster (-cluster or -cluster-shards)")
		return exitUsage
	}
	o.Cluster, o.ClusterInsert = *cluster, *clusterInsert
	limitNote := ""
	if *mysqlURL == "" {
		limitNote = raiseOpenFiles(e)
	}
	if *mysqlURL != "" {
		if servers.MySQL, err = localserver.External("-mysql", *mysqlURL); err == nil {
			servers.ClickHouse, err = localserver.External("-clickhouse", *chURL)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
			return exitUsage
		}
	} else if *shards > 0 {
		fmt.Fprintf(e.stderr, "starting throwaway MariaDB, ZooKeeper and a ClickHouse cluster of %d shards...\n", *shards)
		sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		my, err := localserver.StartMariaDB(sctx)
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
			return exitError
		}
		defer my.Stop()
		c, err := localserver.StartCluster(sctx, *shards, 1)
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
			return exitError
		}
		defer c.Stop()
		servers.MySQL, servers.ClickHouse = my, c.Shards[0][0]
		o.Cluster = c.Name
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
	o.ClickHousePid = servers.ClickHouse.Pid() // 0 for an external server
	rep, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch bench: %v\n", err)
		return exitError
	}
	rep.Binlog2ch = buildVersion()
	if *daemon != "" {
		rep.Binlog2ch += ", the daemon " + *daemon
	}
	rep.Settings += limitNote
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

// serverOpenFiles is the open-files limit the throwaway servers get when
// this process may raise it: systemd's default hard limit, which
// ClickHouse raises its own soft limit to at start when run as a service.
// Each concurrent insert holds two files per column open (a 30-column
// part: 60), so hundreds of tables flushing at once exhaust a sandbox's
// lower limit (20000 on the development machine: "Too many open files",
// and the daemon stops), which a service would not meet.
const serverOpenFiles = 524288

// raiseOpenFiles raises this process's open-files limit, which the
// servers it starts inherit, to serverOpenFiles (as far as
// /proc/sys/fs/nr_open allows), and returns a note for the report's
// settings ("" when it was already that high or may not be raised).
func raiseOpenFiles(e *env) string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	want := uint64(serverOpenFiles)
	if data, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil {
			want = min(want, n)
		}
	}
	if lim.Max >= want {
		return ""
	}
	was := lim.Max
	// Raising the hard limit needs CAP_SYS_RESOURCE; without it the
	// servers keep the limit they have.
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: want}); err != nil {
		fmt.Fprintf(e.stderr, "the throwaway servers keep the open-files limit %d (raising it to %d: %v)\n", was, want, err)
		return fmt.Sprintf("; throwaway servers' open-files limit %d", was)
	}
	return fmt.Sprintf("; throwaway servers' open-files limit raised to %d (systemd's default; was %d)", want, was)
}
