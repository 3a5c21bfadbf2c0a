// Package bench runs binlog2ch's benchmark: it fills MySQL with loadgen,
// runs the daemon as a child process, and measures rows/minute, lag, the
// daemon's CPU and memory, and the parts ClickHouse created, in three
// scenarios: catch-up (the rows are in the binlog before the daemon starts),
// live (the daemon follows loadgen at a fixed rate, then at full speed) and
// many-tables (single-row inserts spread over hundreds of tables, against
// the same rate into one table: what ClickHouse spends, see tables.go).
// It measures the binary from outside, as a user runs it, and must not
// import the packages that replicate (source, sink, snapshot, replicator).
package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/loadgen"
	"github.com/binlog2ch/binlog2ch/schema"

	"github.com/binlog2ch/binlog2ch/hostcost"
)

// Options size the benchmark and say where it runs.
type Options struct {
	MySQL, ClickHouse localserver.Endpoint
	// Daemon returns the command that runs `binlog2ch run` on a config.
	Daemon func(config string) *exec.Cmd
	Dir    string // for the daemon's config, state and log
	// DaemonBatch, when set, is the daemon's batch section (flow-style
	// YAML keys, e.g. "live_flush_interval: 100ms") instead of defaults.
	DaemonBatch string

	CatchUpRows  int           // rows in the binlog before the daemon starts
	LiveRate     float64       // rows/s of the fixed-rate live phase
	LiveDuration time.Duration // of each live phase
	MaxLen       int           // string and blob cap, see loadgen
	Conns        int           // loadgen connections
	Progress     io.Writer     // what is going on, line by line
	// Cluster, when set, names the ClickHouse cluster (remote_servers) to
	// replicate into, ClickHouse being one of its servers; rows are
	// counted through the Distributed tables and parts over the cluster.
	Cluster string
	// ClusterInsert is the daemon's clickhouse.cluster_insert ("": its
	// default).
	ClusterInsert string

	// Scenarios are the scenarios to run, of ScenarioCatchUp, ScenarioLive
	// and ScenarioManyTables (none: all three).
	Scenarios []string
	// Tables, TablesRate and TablesDuration size the many-tables scenario:
	// TablesRate single-row INSERTs per second in all, spread evenly over
	// Tables tables, for TablesDuration (and as many into one table).
	Tables         int
	TablesRate     float64
	TablesDuration time.Duration
	// ClickHousePid is the clickhouse-server process, when known (a
	// private server), for its CPU time; 0: from system.events instead.
	ClickHousePid int
}

// The scenarios, as Options.Scenarios and `binlog2ch bench -scenario` name
// them.
const (
	ScenarioCatchUp    = "catch-up"
	ScenarioExcluded   = "catch-up-excluded"
	ScenarioVaried     = "catch-up-varied"
	ScenarioLive       = "live"
	ScenarioManyTables = "many-tables"
)

// Scenarios are every scenario, in the order they run.
var Scenarios = []string{ScenarioCatchUp, ScenarioExcluded, ScenarioVaried, ScenarioLive, ScenarioManyTables}

// runs says whether the scenario is to run.
func (o *Options) runs(name string) bool {
	return len(o.Scenarios) == 0 || slices.Contains(o.Scenarios, name)
}

// Defaults are the full benchmark's sizes; Short ones take under two
// minutes.
func Defaults(short bool) Options {
	o := Options{CatchUpRows: 2_000_000, LiveRate: 20000, LiveDuration: 60 * time.Second, MaxLen: 8, Conns: 4,
		Tables: 500, TablesRate: 400, TablesDuration: 60 * time.Second}
	if short {
		o.CatchUpRows, o.LiveRate, o.LiveDuration = 200_000, 5000, 10*time.Second
		o.Tables, o.TablesRate, o.TablesDuration = 50, 100, 10*time.Second
	}
	return o
}

// Scenario is one measured phase.
type Scenario struct {
	Name       string  `json:"name"`
	Rows       uint64  `json:"rows"` // rows inserted into MySQL
	RowsInCH   uint64  `json:"rows_in_clickhouse"`
	Seconds    float64 `json:"seconds"`      // until ClickHouse held them all
	RowsPerMin float64 `json:"rows_per_min"` // replicated
	// LoadRowsPerMin is loadgen's rate (live scenarios).
	LoadRowsPerMin float64 `json:"load_rows_per_min,omitempty"`
	Lag            *Lag    `json:"lag,omitempty"`
	// SampledLag is the lag from ClickHouse's count sampled every
	// sampleEvery, where Lag is timed by each row's part (the figure
	// earlier reports gave).
	SampledLag  *Lag    `json:"sampled_lag,omitempty"`
	KeptUp      *bool   `json:"kept_up,omitempty"`
	CPUPerMRows float64 `json:"daemon_cpu_seconds_per_million_rows"`
	PeakRSSMiB  float64 `json:"daemon_peak_rss_mib"`
	// SystemCPUSeconds (of the daemon's CPU) and MinorFaults: mostly its
	// first touch of fresh memory (catch-up scenarios).
	SystemCPUSeconds float64 `json:"daemon_system_cpu_seconds,omitempty"`
	MinorFaults      uint64  `json:"daemon_minor_faults,omitempty"`
	// ReadBytesPerRow and WrittenBytesPerRow (catch-up scenarios) are what
	// the daemon read and wrote through system calls, per row.
	ReadBytesPerRow    float64 `json:"daemon_read_bytes_per_row,omitempty"`
	WrittenBytesPerRow float64 `json:"daemon_written_bytes_per_row,omitempty"`
	Parts              uint64  `json:"clickhouse_parts_created"`
	// CHCPUSeconds is what ClickHouse spent during a live phase or the
	// catch-up (its count queries included), as chCPU reads it.
	CHCPUSeconds float64 `json:"clickhouse_cpu_seconds,omitempty"`
	// CHMergedRows and CHMergeSeconds (catch-up scenarios) are the rows
	// ClickHouse's background merges read meanwhile and their merge
	// threads' time (system.events MergedRows, MergesTimeMilliseconds):
	// work the ceiling's insert, its merges stopped, does not do.
	CHMergedRows   uint64  `json:"clickhouse_merged_rows,omitempty"`
	CHMergeSeconds float64 `json:"clickhouse_merge_seconds,omitempty"`
	Series         []Point `json:"series"`
	// MySQLRows are the rows written to MySQL by the end of each second
	// of Series.
	MySQLRows []uint64 `json:"mysql_rows,omitempty"`
	// BinlogBytesPerRow (catch-up scenarios) is what the rows grew the
	// binlog by, per row.
	BinlogBytesPerRow float64 `json:"binlog_bytes_per_row,omitempty"`
	// Excluded (catch-up-excluded) compares the excluded table's rows with
	// the catch-up's applied ones.
	Excluded *Excluded `json:"excluded,omitempty"`
	// Floor (catch-up-varied) is the varied rows' per-byte floor against
	// the catch-up's rows.
	Floor *hostcost.PerByteFloor `json:"floor,omitempty"`
	// Ceiling (catch-up) is ClickHouse's own client inserting the same
	// rows from a Native dump (ceiling.go); NoCeiling says why there is
	// none.
	Ceiling   *Ceiling `json:"ceiling,omitempty"`
	NoCeiling string   `json:"no_ceiling,omitempty"`
}

// Lag is the time from a row's commit in MySQL to its visibility in
// ClickHouse, over the phase's samples.
type Lag struct {
	P50     float64 `json:"p50_seconds"`
	P99     float64 `json:"p99_seconds"`
	Max     float64 `json:"max_seconds"`
	Samples int     `json:"samples"`
	Source  string  `json:"source,omitempty"` // how the rows' arrivals were observed
}

// Point is one second of a scenario.
type Point struct {
	T          float64 `json:"t"`               // seconds since the phase started
	RowsPerSec float64 `json:"rows_per_second"` // replicated in that second
	LagSeconds float64 `json:"lag_seconds"`     // lag of the rows committed then (-1: none)
}

// Report is a whole benchmark run.
type Report struct {
	Date       time.Time  `json:"date"`
	Host       string     `json:"host"`
	MySQL      string     `json:"mysql_version"`
	ClickHouse string     `json:"clickhouse_version"`
	Binlog2ch  string     `json:"binlog2ch_version"`
	Settings   string     `json:"settings"`
	Scenarios  []Scenario `json:"scenarios"`
	// ManyTables are the many-tables scenario's runs: one table, then
	// Options.Tables; ManyTablesCPURatio is ClickHouse's CPU seconds of
	// the second over the first's.
	ManyTables         []TablesRun `json:"many_tables,omitempty"`
	ManyTablesCPURatio float64     `json:"many_tables_clickhouse_cpu_ratio,omitempty"`
}

// keptUpLag is the largest lag at which a live phase counts as kept up:
// flush_interval (1s) plus an insert, with room for a merge's slowdown.
const keptUpLag = 5 * time.Second

// sampleEvery is the resolution of the measurements.
const sampleEvery = 100 * time.Millisecond

// run is one benchmark in progress.
type run struct {
	o      Options
	my     *sql.DB
	ch     driver.Conn
	db     string
	daemon *exec.Cmd
	exited chan struct{}
	log    io.Writer
	// logOffset is the daemon log's size when the daemon last started:
	// its lines from there on are that process's.
	logOffset int64
}

// Run runs the scenarios and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	for _, s := range o.Scenarios {
		if !slices.Contains(Scenarios, s) {
			return nil, fmt.Errorf("no scenario %q (there are %s)", s, strings.Join(Scenarios, ", "))
		}
	}
	if o.Cluster != "" && o.runs(ScenarioManyTables) {
		return nil, errors.New("the many-tables scenario measures one ClickHouse server's CPU: it does not run on a cluster")
	}
	r := &run{o: o, db: "b2c_bench_" + strconv.FormatInt(time.Now().Unix(), 36), log: o.Progress}
	var err error
	if r.my, err = loadgen.Open(r.loadOptions()); err != nil {
		return nil, err
	}
	defer r.my.Close()
	if r.ch, err = clickhouse.Open(&clickhouse.Options{Addr: []string{o.ClickHouse.Addr()},
		Auth: clickhouse.Auth{Username: o.ClickHouse.User, Password: o.ClickHouse.Password}}); err != nil {
		return nil, err
	}
	defer r.ch.Close()
	rep := &Report{Date: time.Now().UTC(), Host: hostcost.Description(),
		Settings: fmt.Sprintf("binlog_field_test, strings capped at %d characters, loadgen %d connections x 1000-row INSERTs; daemon defaults (batch.max_rows 100000, flush_interval 1s, max_inflight 2)", o.MaxLen, o.Conns)}
	if o.DaemonBatch != "" {
		rep.Settings += "; daemon batch: {" + o.DaemonBatch + "}"
	}
	if o.Cluster != "" {
		insert := o.ClusterInsert
		if insert == "" {
			insert = "default"
		}
		rep.Settings += fmt.Sprintf("; ClickHouse cluster %s, cluster_insert %s", o.Cluster, insert)
	}
	if err := r.my.QueryRowContext(ctx, "SELECT VERSION()").Scan(&rep.MySQL); err != nil {
		return nil, fmt.Errorf("MySQL %s: %w", o.MySQL.Addr(), err)
	}
	if err := r.ch.QueryRow(ctx, "SELECT version()").Scan(&rep.ClickHouse); err != nil {
		return nil, fmt.Errorf("ClickHouse %s: %w", o.ClickHouse.Addr(), err)
	}
	if _, err := r.my.ExecContext(ctx, "CREATE DATABASE "+r.db); err != nil {
		return nil, err
	}
	defer r.cleanup()
	if err := r.writeConfig(); err != nil {
		return nil, err
	}
	// The daemon starts once before the tables exist, so its checkpoint is
	// before every row, then stops while the catch-up rows go in.
	if err := r.startDaemon(ctx); err != nil {
		return nil, err
	}
	if err := r.stopDaemon(); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		name string
		run  func(context.Context) (Scenario, error)
	}{{ScenarioCatchUp, r.catchUp}, {ScenarioExcluded, func(ctx context.Context) (Scenario, error) { return r.excluded(ctx, rep) }}, {ScenarioVaried, func(ctx context.Context) (Scenario, error) { return r.varied(ctx, rep) }}} {
		if !o.runs(c.name) || o.Cluster != "" && c.name != ScenarioCatchUp && !slices.Contains(o.Scenarios, c.name) {
			continue // the companions run on a cluster only when asked for
		}
		s, err := c.run(ctx)
		if err != nil {
			return nil, err
		}
		rep.Scenarios = append(rep.Scenarios, s)
	}
	if o.runs(ScenarioLive) {
		if r.daemon == nil { // catch-up leaves it running
			if err := r.startDaemon(ctx); err != nil {
				return nil, err
			}
		}
		for i, rate := range []float64{o.LiveRate, 0} {
			s, err := r.live(ctx, "binlog_field_test_"+strconv.Itoa(i+2), rate)
			if err != nil {
				return nil, err
			}
			rep.Scenarios = append(rep.Scenarios, s)
		}
	}
	if err := r.stopDaemon(); err != nil {
		return nil, err
	}
	if o.runs(ScenarioManyTables) {
		if err := r.manyTables(ctx, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func (r *run) loadOptions() *loadgen.Options {
	return &loadgen.Options{Host: r.o.MySQL.Host, Port: r.o.MySQL.Port, User: r.o.MySQL.User, Password: r.o.MySQL.Password,
		Schema: r.db, BatchSize: 1000, Conns: r.o.Conns, MaxLen: r.o.MaxLen, Create: true, Seed: 1}
}

func (r *run) cleanup() {
	if r.daemon != nil {
		_ = r.stopDaemon()
	}
	ctx := context.Background()
	_, _ = r.my.ExecContext(ctx, "DROP DATABASE IF EXISTS "+r.db)
	_ = r.ch.Exec(ctx, "DROP DATABASE IF EXISTS "+r.db+r.onCluster())
}

func (r *run) onCluster() string {
	if r.o.Cluster == "" {
		return ""
	}
	return " ON CLUSTER " + schema.QuoteIdent(r.o.Cluster)
}

func (r *run) writeConfig() error {
	conf := fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4243}
clickhouse: {addr: [%q], user: %q, password: %q%s}
tables: {include: ["%s.*"], exclude: ["%s.%s"]}
state_dir: state
metrics: {listen: "127.0.0.1:0"}
`, r.o.MySQL.Addr(), r.o.MySQL.User, r.o.MySQL.Password, r.o.ClickHouse.Addr(), r.o.ClickHouse.User, r.o.ClickHouse.Password, r.clusterKeys(), r.db, r.db, excludedTable)
	if r.o.DaemonBatch != "" {
		conf += "batch: {" + r.o.DaemonBatch + "}\n"
	}
	return os.WriteFile(r.configPath(), []byte(conf), 0o600)
}

// clusterKeys are the daemon's clickhouse cluster settings, in flow style.
func (r *run) clusterKeys() string {
	if r.o.Cluster == "" {
		return ""
	}
	keys := fmt.Sprintf(", cluster: %q", r.o.Cluster)
	if r.o.ClusterInsert != "" {
		keys += fmt.Sprintf(", cluster_insert: %q", r.o.ClusterInsert)
	}
	return keys
}

func (r *run) configPath() string { return filepath.Join(r.o.Dir, "binlog2ch.yaml") }

// startDaemon starts `binlog2ch run` and waits until it has a checkpoint.
func (r *run) startDaemon(ctx context.Context) error {
	logFile, err := os.OpenFile(filepath.Join(r.o.Dir, "daemon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if st, err := logFile.Stat(); err == nil {
		r.logOffset = st.Size()
	}
	cmd := r.o.Daemon(r.configPath())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start the daemon: %w", err)
	}
	r.daemon, r.exited = cmd, make(chan struct{})
	exited := r.exited
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
	state := filepath.Join(r.o.Dir, "state", "checkpoint.json")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(state); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the daemon exited at start; its log: %s", r.logTail())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the daemon saved no checkpoint within a minute; its log: %s", r.logTail())
		}
	}
}

func (r *run) stopDaemon() error {
	if r.daemon == nil {
		return nil
	}
	_ = r.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(60 * time.Second):
		_ = r.daemon.Process.Kill()
		<-r.exited
		r.daemon = nil
		return errors.New("the daemon did not stop within 60s of SIGTERM")
	}
	state := r.daemon.ProcessState
	r.daemon = nil
	if !state.Success() {
		return fmt.Errorf("the daemon exited with %v; its log: %s", state, r.logTail())
	}
	return nil
}

func (r *run) logTail() string {
	data, _ := os.ReadFile(filepath.Join(r.o.Dir, "daemon.log"))
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

func (r *run) alive() error {
	select {
	case <-r.exited:
		return fmt.Errorf("the daemon exited; its log: %s", r.logTail())
	default:
		return nil
	}
}
