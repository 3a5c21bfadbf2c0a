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
	fs := newFlagSet(e, "bench", "[-short] [-mysql URL -clickhouse URL [-cluster NAME]] [-cluster-shards N] [flags]")
	short := fs.Bool("short", false, "small sizes: 200k catch-up rows, 10 s live phases at 5000 rows/s (under two minutes)")
	d := bench.Defaults(false)
	rows := fs.Int("rows", 0, fmt.Sprintf("catch-up rows (default %d, -short %d)", d.CatchUpRows, bench.Defaults(true).CatchUpRows))
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
