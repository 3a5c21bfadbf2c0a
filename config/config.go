// Package config is binlog2ch's configuration file: the YAML model, strict
// decoding that reports every problem with its file and line, validation,
// and the TLS material the file names. It must not open a connection to
// a server, and reads nothing but the file, the files it names (passwords,
// certificates) and the environment variables it references; what a
// setting does belongs to the packages that act on it.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Config is binlog2ch's configuration file. deploy/binlog2ch.example.yaml
// documents every key with its default.
type Config struct {
	MySQL      MySQLConfig      `yaml:"mysql"`
	ClickHouse ClickHouseConfig `yaml:"clickhouse"`
	Tables     TablesConfig     `yaml:"tables"`
	// StateDir holds the checkpoint and the progress of snapshots and
	// fullsync. A relative path is
	// taken relative to the config file's directory.
	StateDir   string           `yaml:"state_dir"`
	Metrics    MetricsConfig    `yaml:"metrics"`
	Schema     SchemaConfig     `yaml:"schema"`
	Batch      BatchConfig      `yaml:"batch"`
	Checkpoint CheckpointConfig `yaml:"checkpoint"`
	FullSync   FullSyncConfig   `yaml:"fullsync"`
	State      StateConfig      `yaml:"state"`
	// Replication decides what happens to rows a statement changed
	// without row events.
	Replication ReplicationConfig `yaml:"replication"`
}

// ReplicationConfig: what the daemon does when the binlog shows that a
// replicated table's rows changed without row events.
type ReplicationConfig struct {
	// OnStatementDML is for INSERT/UPDATE/DELETE logged as SQL text
	// (binlog_format STATEMENT or MIXED in a session): OnStop or OnRecopy.
	OnStatementDML string `yaml:"on_statement_dml"`
	// OnPartitionMaintenance is for TRUNCATE/DROP/EXCHANGE/REORGANIZE/
	// COALESCE/CONVERT PARTITION: OnStop, OnApply, OnRecopy or OnKeep.
	OnPartitionMaintenance string `yaml:"on_partition_maintenance"`
	// OnTableError is for a table whose rows cannot be applied (a value
	// that cannot be converted, a type without a mapping, its ClickHouse
	// table changed by hand): OnStop, or OnSkipTable, which marks the table
	// failed in the copy state and goes on with the others.
	OnTableError string `yaml:"on_table_error"`
}

// What to do with rows changed without row events.
const (
	OnStop   = "stop"   // stop the daemon, naming the statement and the ways out (the default)
	OnRecopy = "recopy" // copy the table again from MySQL, then go on
	OnKeep   = "keep"   // leave ClickHouse's rows as they are (an archive)
	OnApply  = "apply"  // delete the partition's rows in ClickHouse by its bounds
	// OnSkipTable (replication.on_table_error): the table is marked failed,
	// its events are skipped until it is copied again, the others go on.
	OnSkipTable = "skip_table"
)

// FullSyncConfig sets how tables are copied (`fullsync` and the initial
// snapshot of `run`): key ranges of ChunkRows rows, read over Workers
// MySQL connections.
type FullSyncConfig struct {
	ChunkRows int `yaml:"chunk_rows"`
	Workers   int `yaml:"workers"`
}

// CheckpointConfig sets how often the binlog position is saved.
type CheckpointConfig struct {
	Interval time.Duration `yaml:"interval"`
}

// SchemaConfig holds the type mapping choices; see schema.Options.
type SchemaConfig struct {
	DateTimeZone string `yaml:"datetime_zone"`
	TimeAs       string `yaml:"time_as"`
	EnumAs       string `yaml:"enum_as"`
	SetAs        string `yaml:"set_as"`
	TinyInt1As   string `yaml:"tinyint1_as"`
	InvalidDates string `yaml:"invalid_dates"`

	options schema.Options // parsed at load
}

// SchemaOptions are the validated mapping options.
func (c *Config) SchemaOptions() schema.Options { return c.Schema.options }

// TableOverride is per-table configuration, keyed by db.table.
type TableOverride struct {
	Name           string   `yaml:"name"`
	Engine         string   `yaml:"engine"`
	OrderBy        []string `yaml:"order_by"`
	PartitionBy    string   `yaml:"partition_by"`
	ExcludeColumns []string `yaml:"exclude_columns"`
	Mode           string   `yaml:"mode"`
	// Columns overrides ClickHouse column types, column -> type.
	Columns map[string]string `yaml:"columns"`
}

// TableOptions are the schema overrides for MySQL table db.table.
func (c *Config) TableOptions(db, table string) schema.TableOptions {
	o, ok := c.Tables.Overrides[db+"."+table]
	if !ok {
		return schema.TableOptions{}
	}
	return schema.TableOptions{Name: o.Name, Engine: o.Engine, OrderBy: o.OrderBy, PartitionBy: o.PartitionBy,
		Exclude: o.ExcludeColumns, Mode: schema.Mode(o.Mode), Types: o.Columns}
}

// MySQLConfig is the source server.
type MySQLConfig struct {
	Addr         string `yaml:"addr"`
	User         string `yaml:"user"`
	Password     Secret `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	// ServerID is the replica id binlog2ch presents to the server; it must
	// be unique among the server's replicas.
	ServerID uint32    `yaml:"server_id"`
	TLS      TLSConfig `yaml:"tls"`
	// HeartbeatPeriod is how often the server sends a heartbeat on an idle
	// binlog stream.
	HeartbeatPeriod time.Duration `yaml:"heartbeat_period"`
	// StallTimeout is how long the stream may stay silent (no event, no
	// heartbeat) before it counts as dead and is reconnected.
	StallTimeout time.Duration `yaml:"stall_timeout"`
}

// ClickHouseConfig is the target server.
type ClickHouseConfig struct {
	Addr         []string `yaml:"addr"`
	User         string   `yaml:"user"`
	Password     Secret   `yaml:"password"`
	PasswordFile string   `yaml:"password_file"`
	// DatabaseMap maps a MySQL database to a ClickHouse database; databases
	// not in it keep their name.
	DatabaseMap map[string]string `yaml:"database_map"`
	// TLS is for the secure native port (tcp_port_secure, usually 9440),
	// which addr must then name.
	TLS TLSConfig `yaml:"tls"`
	// Cluster names a cluster of the servers' remote_servers: DDL runs ON
	// CLUSTER, tables are Replicated*MergeTree with a Distributed table over
	// them. Empty: a single server.
	Cluster string `yaml:"cluster"`
	// ReplicatedPath and ReplicaName are the replicated engine's ZooKeeper
	// path and replica name (server macros allowed).
	ReplicatedPath string `yaml:"replicated_path"`
	ReplicaName    string `yaml:"replica_name"`
	// DistributedTable names the Distributed table, {table} standing for
	// the local table's name.
	DistributedTable string `yaml:"distributed_table"`
	// ClusterInsert is how rows reach the shards: "shards" (straight into
	// the shards' local tables, routed here by the Distributed table's
	// sharding key) or "distributed" (through the Distributed table,
	// synchronously).
	ClusterInsert string `yaml:"cluster_insert"`
	// ClusterHosts rewrites the shard addresses system.clusters lists
	// (host:port as remote_servers names them) to ones this host reaches,
	// for cluster_insert: shards behind NAT or in containers.
	ClusterHosts map[string]string `yaml:"cluster_hosts"`
	// CurrentViews gives each replicated table with a key a view,
	// db.t_current, with MySQL's columns and only its current rows (FINAL
	// and the tombstone filter inside), which binlog2ch keeps in step with
	// the table's DDL.
	CurrentViews bool `yaml:"current_views"`
	// Compression is how inserts travel: auto, lz4, zstd, none or
	// lz4-adaptive (compression.go).
	Compression string `yaml:"compression"`
}

// TablesConfig selects the replicated tables with db.table glob patterns.
type TablesConfig struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// Overrides are per-table settings, keyed by exact db.table.
	Overrides map[string]TableOverride `yaml:"overrides"`
}

// MetricsConfig is the Prometheus endpoint.
type MetricsConfig struct {
	// Listen is host:port for /metrics, /healthz and /readyz (port 0: a
	// free port, logged).
	Listen string `yaml:"listen"`
	// ReadyMaxLag is the largest binlog2ch_lag_seconds /readyz calls
	// ready.
	ReadyMaxLag time.Duration `yaml:"ready_max_lag"`
	// BinlogRetentionMargin: a headroom before the source may purge the
	// checkpoint's binlog file below it is logged at WARN (and alerted
	// on, binlog2ch_source_binlog_retention_margin_seconds).
	BinlogRetentionMargin time.Duration `yaml:"binlog_retention_margin"`
}

// Secret is a string that never prints: fmt, slog and YAML output show
// "<redacted>" instead, so a password cannot reach a log line or an error.
type Secret string

const redacted = "<redacted>"

func (s Secret) String() string                { return redactedUnlessEmpty(s) }
func (s Secret) GoString() string              { return strconv.Quote(redactedUnlessEmpty(s)) }
func (s Secret) LogValue() slog.Value          { return slog.StringValue(redactedUnlessEmpty(s)) }
func (s Secret) MarshalYAML() (any, error)     { return redactedUnlessEmpty(s), nil }
func (s Secret) MarshalText() ([]byte, error)  { return []byte(redactedUnlessEmpty(s)), nil }
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redactedUnlessEmpty(s))) }

// Reveal returns the secret itself, for the one place that needs it: the
// connection to the server.
func (s Secret) Reveal() string { return string(s) }

func redactedUnlessEmpty(s Secret) string {
	if s == "" {
		return ""
	}
	return redacted
}

// defaultConfig is the configuration before the file is applied.
func defaultConfig() Config {
	return Config{
		MySQL: MySQLConfig{HeartbeatPeriod: time.Second, StallTimeout: 5 * time.Second},
		ClickHouse: ClickHouseConfig{User: "default", DatabaseMap: map[string]string{},
			ReplicatedPath: schema.DefaultZooKeeperPath, ReplicaName: schema.DefaultReplica,
			DistributedTable: schema.DefaultDistributedTable, ClusterInsert: ClusterInsertShards, Compression: CompressionAuto},
		Metrics: MetricsConfig{Listen: "127.0.0.1:9188", ReadyMaxLag: time.Minute, BinlogRetentionMargin: 6 * time.Hour},
		Batch: BatchConfig{MaxRows: 100000, MaxBytes: 64 << 20, FlushInterval: time.Second, MaxInFlight: 2, MaxInsertsPerSecond: 30, LiveFlushInterval: 200 * time.Millisecond, MaxBufferBytes: 256 << 20,
			MaxInsertRows: 0, MaxInsertBytes: 32 << 20},
		Checkpoint:  CheckpointConfig{Interval: time.Second},
		FullSync:    FullSyncConfig{ChunkRows: 50000, Workers: 4},
		Replication: ReplicationConfig{OnStatementDML: OnStop, OnPartitionMaintenance: OnStop, OnTableError: OnStop},
		State:       StateConfig{Store: StoreFile, Lease: LeaseNone, Table: defaultStateTable, SessionTimeout: 10 * time.Second},
		Schema: SchemaConfig{
			DateTimeZone: "UTC",
			TimeAs:       schema.TimeAsString,
			EnumAs:       schema.EnumAsEnum,
			SetAs:        schema.SetAsString,
			TinyInt1As:   schema.TinyInt1AsInt,
			InvalidDates: schema.InvalidError,
		},
	}
}

// Error lists everything wrong with a config file, one problem a line.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one bad key.
type Problem struct {
	Key  string // dotted path, e.g. mysql.server_id; "" for the file as a whole
	Line int    // 0 when the key is missing
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("config: ")
		if p.Key != "" {
			b.WriteString(p.Key)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
		b.WriteString(" (")
		b.WriteString(e.File)
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// Load reads, expands and validates the config file at file.
func Load(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &Error{File: file, Problems: []Problem{{Msg: "cannot read the file: " + errors.Unwrap(err).Error()}}}
	}
	return Parse(data, file, os.LookupEnv)
}

// Parse parses a config file's contents. file names it in errors and
// anchors relative paths; lookupEnv expands ${VAR} references.
func Parse(data []byte, file string, lookupEnv func(string) (string, bool)) (*Config, error) {
	d := &decoder{lookupEnv: lookupEnv, lines: map[string]int{}}
	cfg := defaultConfig()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, &Error{File: file, Problems: []Problem{{Msg: "not valid YAML: " + msg}}}
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: file, Problems: []Problem{{Msg: "the file is empty"}}}
	}
	d.decode(root.Content[0], &cfg, "")
	if len(d.problems) == 0 {
		cfg.validate(d, filepath.Dir(file))
	}
	if len(d.problems) > 0 {
		return nil, &Error{File: file, Problems: d.problems}
	}
	return &cfg, nil
}

// validate checks required keys and impossible values, reads password files
// and resolves relative paths against dir.
func (c *Config) validate(d *decoder, dir string) {
	d.hostPort("mysql.addr", c.MySQL.Addr, true, false)
	d.required("mysql.user", c.MySQL.User)
	c.MySQL.Password = d.password("mysql", c.MySQL.Password, c.MySQL.PasswordFile, dir)
	if c.MySQL.ServerID == 0 {
		d.problem("mysql.server_id", "must be > 0")
	}
	if c.MySQL.HeartbeatPeriod < 100*time.Millisecond || c.MySQL.HeartbeatPeriod > time.Minute {
		d.problem("mysql.heartbeat_period", "must be from 100ms to 1m")
	}
	if c.MySQL.StallTimeout < 2*c.MySQL.HeartbeatPeriod {
		d.problem("mysql.stall_timeout", fmt.Sprintf("must be at least two heartbeat periods (%s), or every quiet moment would count as a dead stream", 2*c.MySQL.HeartbeatPeriod))
	}
	// go-mysql's binlog connection, unlike the SQL driver, does not fill in
	// the name to verify: set it here for both.
	c.MySQL.TLS.validate(d, "mysql", dir, hostOf(c.MySQL.Addr))

	if len(c.ClickHouse.Addr) == 0 {
		d.problem("clickhouse.addr", "required: at least one host:port (native protocol, usually port 9000)")
	}
	for i, a := range c.ClickHouse.Addr {
		d.hostPort(fmt.Sprintf("clickhouse.addr[%d]", i), a, true, false)
	}
	d.required("clickhouse.user", c.ClickHouse.User)
	c.ClickHouse.Password = d.password("clickhouse", c.ClickHouse.Password, c.ClickHouse.PasswordFile, dir)
	c.ClickHouse.TLS.validate(d, "clickhouse", dir, "")
	for from, to := range c.ClickHouse.DatabaseMap {
		key := "clickhouse.database_map." + from
		if err := checkDatabaseName(from); err != nil {
			d.problem(key, "MySQL database name "+err.Error())
		}
		if err := checkDatabaseName(to); err != nil {
			d.problem(key, "ClickHouse database name "+err.Error())
		}
	}

	c.validateCluster(d)
	c.validateCompression(d)
	c.validateState(d)
	if p := c.Replication.OnStatementDML; p != OnStop && p != OnRecopy {
		d.problem("replication.on_statement_dml", fmt.Sprintf("want %s or %s, got %q", OnStop, OnRecopy, p))
	}
	if p := c.Replication.OnTableError; p != OnStop && p != OnSkipTable {
		d.problem("replication.on_table_error", fmt.Sprintf("want %s or %s, got %q", OnStop, OnSkipTable, p))
	}
	switch p := c.Replication.OnPartitionMaintenance; p {
	case OnStop, OnApply, OnRecopy, OnKeep:
	default:
		d.problem("replication.on_partition_maintenance", fmt.Sprintf("want %s, %s, %s or %s, got %q", OnStop, OnApply, OnRecopy, OnKeep, p))
	}

	if len(c.Tables.Include) == 0 {
		d.problem("tables.include", `required: at least one db.table pattern, e.g. "shop.*"`)
	}
	for i, p := range c.Tables.Include {
		d.pattern(fmt.Sprintf("tables.include[%d]", i), p)
	}
	for i, p := range c.Tables.Exclude {
		d.pattern(fmt.Sprintf("tables.exclude[%d]", i), p)
	}

	for key, o := range c.Tables.Overrides {
		prefix := "tables.overrides." + key
		db, table, ok := strings.Cut(key, ".")
		if !ok || db == "" || table == "" || strings.ContainsAny(key, "*?[") {
			d.problem(prefix, "must be an exact db.table name")
			continue
		}
		if !c.Replicates(db, table) {
			d.problem(prefix, "this table is not selected by tables.include/exclude")
		}
		switch schema.Mode(o.Mode) {
		case "", schema.ModeReplacing, schema.ModeChangelog:
		default:
			d.problem(prefix+".mode", fmt.Sprintf("want %s or %s, got %q", schema.ModeReplacing, schema.ModeChangelog, o.Mode))
		}
		if o.Name != "" {
			if err := checkDatabaseName(o.Name); err != nil {
				d.problem(prefix+".name", "table name "+err.Error())
			}
		}
		for col, typ := range o.Columns {
			if _, err := schema.ParseCHType(typ); err != nil {
				d.problem(prefix+".columns."+col, err.Error())
			}
		}
	}
	c.Schema.validate(d)
	c.Schema.options.CurrentViews = c.ClickHouse.CurrentViews
	if c.ClickHouse.Cluster != "" {
		c.Schema.options.Cluster = &schema.Cluster{Name: c.ClickHouse.Cluster, ZooKeeperPath: c.ClickHouse.ReplicatedPath,
			Replica: c.ClickHouse.ReplicaName, Distributed: c.ClickHouse.DistributedTable}
	}
	c.Batch.validate(d)
	if c.Checkpoint.Interval < time.Millisecond {
		d.problem("checkpoint.interval", "must be >= 1ms")
	}
	if c.FullSync.ChunkRows < 1 || c.FullSync.ChunkRows > 10_000_000 {
		d.problem("fullsync.chunk_rows", "must be from 1 to 10000000")
	}
	if c.FullSync.Workers < 1 || c.FullSync.Workers > 64 {
		d.problem("fullsync.workers", "must be from 1 to 64")
	}

	if d.required("state_dir", c.StateDir) && !filepath.IsAbs(c.StateDir) {
		c.StateDir = filepath.Join(dir, c.StateDir)
	}
	d.hostPort("metrics.listen", c.Metrics.Listen, false, true)
	if c.Metrics.ReadyMaxLag < time.Second {
		d.problem("metrics.ready_max_lag", "must be >= 1s")
	}
	if c.Metrics.BinlogRetentionMargin < time.Minute {
		d.problem("metrics.binlog_retention_margin", "must be >= 1m (the headroom is read every 30s)")
	}
}

func (s *SchemaConfig) validate(d *decoder) {
	loc, err := time.LoadLocation(s.DateTimeZone)
	if err != nil || s.DateTimeZone == "" || s.DateTimeZone == "Local" {
		d.problem("schema.datetime_zone", fmt.Sprintf("want an IANA zone name such as UTC or Europe/Berlin, got %q", s.DateTimeZone))
		loc = time.UTC
	}
	s.options = schema.Options{DateTimeZone: loc, TimeAs: s.TimeAs, EnumAs: s.EnumAs, SetAs: s.SetAs,
		TinyInt1As: s.TinyInt1As, InvalidDates: s.InvalidDates}
	if err := s.options.Validate(); err != nil {
		key, msg, _ := strings.Cut(err.Error(), ": ")
		d.problem("schema."+key, msg)
	}
}

// ClickHouseDatabase is the ClickHouse database that MySQL database db
// replicates into.
func (c *Config) ClickHouseDatabase(db string) string {
	if to, ok := c.ClickHouse.DatabaseMap[db]; ok {
		return to
	}
	return db
}

// Replicates reports whether table db.table is selected by tables.include
// and not by tables.exclude.
func (c *Config) Replicates(db, table string) bool { return c.Tables.Selects(db, table) }

// SelectsDatabase reports whether tables.include may select tables of
// database db.
func (c *Config) SelectsDatabase(db string) bool {
	for _, p := range c.Tables.Include {
		pdb, _, _ := strings.Cut(p, ".")
		if ok, _ := path.Match(pdb, db); ok {
			return true
		}
	}
	return false
}

// Selects reports whether table db.table is selected by Include and not by
// Exclude.
func (t *TablesConfig) Selects(db, table string) bool {
	return matchAny(t.Include, db, table) && !matchAny(t.Exclude, db, table)
}

// MatchPatterns reports whether db.table matches one of patterns, each a
// db.table glob as tables.include takes them (checked by CheckPattern).
func MatchPatterns(patterns []string, db, table string) bool { return matchAny(patterns, db, table) }

func matchAny(patterns []string, db, table string) bool {
	for _, p := range patterns {
		pdb, ptable, _ := strings.Cut(p, ".")
		// Validated at load, so Match cannot fail here.
		if okDB, _ := path.Match(pdb, db); okDB {
			if okTable, _ := path.Match(ptable, table); okTable {
				return true
			}
		}
	}
	return false
}

func checkDatabaseName(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case len(name) > 64:
		return errors.New("is longer than 64 characters")
	case strings.ContainsAny(name, "`\x00./"):
		return errors.New("must not contain a backquote, dot, slash or NUL")
	}
	return nil
}

func (d *decoder) problem(key, msg string) {
	d.problems = append(d.problems, Problem{Key: key, Line: d.lines[key], Msg: msg})
}

func (d *decoder) required(key, v string) bool {
	if v == "" {
		d.problem(key, "required")
		return false
	}
	return true
}

// hostPort checks a host:port address; a required one must also be present.
func (d *decoder) hostPort(key, v string, required, portZero bool) {
	if v == "" {
		if required {
			d.problem(key, "required: host:port")
		} else {
			d.problem(key, "must be host:port")
		}
		return
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		d.problem(key, fmt.Sprintf("must be host:port, got %q", v))
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 && !(portZero && n == 0) || n > 65535 {
		d.problem(key, fmt.Sprintf("port must be a number from 1 to 65535, got %q", port))
	}
}

// password returns the password from the inline value or the file, which
// are mutually exclusive. Errors never show the password.
func (d *decoder) password(section string, inline Secret, file, dir string) Secret {
	if file == "" {
		return inline
	}
	if inline != "" {
		d.problem(section+".password_file", "set either password or password_file, not both")
		return inline
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		d.problem(section+".password_file", fmt.Sprintf("cannot read %s: %v", file, err))
		return ""
	}
	return Secret(strings.TrimRight(string(data), "\r\n"))
}

// pattern checks a db.table glob pattern.
func (d *decoder) pattern(key, p string) {
	if err := CheckPattern(p); err != nil {
		d.problem(key, err.Error())
	}
}

// CheckPattern checks a db.table pattern as tables.include and -tables
// flags take it: a glob (path.Match's) for each of the database and the
// table.
func CheckPattern(p string) error {
	db, table, ok := strings.Cut(p, ".")
	if !ok || db == "" || table == "" || strings.Contains(table, ".") {
		return fmt.Errorf(`must be a db.table pattern such as "shop.*", got %q`, p)
	}
	for _, glob := range []string{db, table} {
		if _, err := path.Match(glob, ""); err != nil {
			return fmt.Errorf("bad glob %q: %w", glob, err)
		}
	}
	return nil
}

// How rows reach a cluster's shards (clickhouse.cluster_insert).
const (
	// ClusterInsertShards routes each row to its shard here and inserts
	// into the shards' local tables, in parallel.
	ClusterInsertShards = "shards"
	// ClusterInsertDistributed inserts through the Distributed table,
	// synchronously.
	ClusterInsertDistributed = "distributed"
)

// validateCluster checks the clickhouse.cluster keys.
func (c *Config) validateCluster(d *decoder) {
	ch := &c.ClickHouse
	if ch.Cluster == "" {
		// The cluster keys mean nothing without a cluster: say so rather
		// than ignore them.
		def := defaultConfig().ClickHouse
		for _, k := range []struct {
			key string
			set bool
		}{{"replicated_path", ch.ReplicatedPath != def.ReplicatedPath}, {"replica_name", ch.ReplicaName != def.ReplicaName},
			{"distributed_table", ch.DistributedTable != def.DistributedTable}, {"cluster_insert", ch.ClusterInsert != def.ClusterInsert},
			{"cluster_hosts", len(ch.ClusterHosts) > 0}} {
			if k.set {
				d.problem("clickhouse."+k.key, "needs clickhouse.cluster (it applies to a cluster only)")
			}
		}
		return
	}
	if err := checkDatabaseName(ch.Cluster); err != nil {
		d.problem("clickhouse.cluster", "cluster name "+err.Error())
	}
	// Every table needs its own ZooKeeper path, or the second table created
	// would join the first one's replicas.
	if !strings.Contains(ch.ReplicatedPath, "{table}") {
		d.problem("clickhouse.replicated_path", fmt.Sprintf("must contain {table} (each table needs its own ZooKeeper path), got %q", ch.ReplicatedPath))
	}
	if ch.ReplicaName == "" {
		d.problem("clickhouse.replica_name", "must not be empty (default {replica}, a server macro)")
	}
	if !strings.Contains(ch.DistributedTable, "{table}") || ch.DistributedTable == "{table}" {
		d.problem("clickhouse.distributed_table", fmt.Sprintf("must contain {table} and differ from it, e.g. {table}_all; got %q", ch.DistributedTable))
	} else if err := checkDatabaseName(strings.ReplaceAll(ch.DistributedTable, "{table}", "t")); err != nil {
		d.problem("clickhouse.distributed_table", "table name "+err.Error())
	}
	switch ch.ClusterInsert {
	case ClusterInsertShards, ClusterInsertDistributed:
	default:
		d.problem("clickhouse.cluster_insert", fmt.Sprintf("want shards or distributed, got %q", ch.ClusterInsert))
	}
	for _, from := range slices.Sorted(maps.Keys(ch.ClusterHosts)) {
		d.hostPort("clickhouse.cluster_hosts", from, true, false)
		d.hostPort("clickhouse.cluster_hosts."+from, ch.ClusterHosts[from], true, false)
	}
}
