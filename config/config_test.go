package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const validConfig = `
mysql:
  addr: "127.0.0.1:3306"
  user: "repl"
  password: "${MYSQL_PASSWORD}"
  server_id: 4242
clickhouse:
  addr: ["127.0.0.1:9000"]
  user: "default"
  password: ""
  database_map: {shop: shop_replica}
tables:
  include: ["shop.*"]
  exclude: ["shop.tmp_*"]
state_dir: "/var/lib/binlog2ch"
metrics:
  listen: "127.0.0.1:9188"
`

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseValid(t *testing.T) {
	cfg, err := Parse([]byte(validConfig), "/etc/binlog2ch.yaml", env(map[string]string{"MYSQL_PASSWORD": "p$ss"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MySQL.Password.Reveal() != "p$ss" || cfg.MySQL.ServerID != 4242 || cfg.ClickHouse.Addr[0] != "127.0.0.1:9000" {
		t.Fatalf("got %+v", cfg)
	}
	if got := cfg.ClickHouseDatabase("shop"); got != "shop_replica" {
		t.Errorf("ClickHouseDatabase(shop) = %q", got)
	}
	if got := cfg.ClickHouseDatabase("other"); got != "other" {
		t.Errorf("ClickHouseDatabase(other) = %q", got)
	}
	for _, c := range []struct {
		db, table string
		want      bool
	}{{"shop", "orders", true}, {"shop", "tmp_x", false}, {"shopx", "orders", false}, {"other", "orders", false}} {
		if got := cfg.Replicates(c.db, c.table); got != c.want {
			t.Errorf("Replicates(%s.%s) = %v, want %v", c.db, c.table, got, c.want)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`
mysql: {addr: "db:3306", user: repl, server_id: 1}
clickhouse: {addr: ["ch:9000"]}
tables: {include: ["*.*"]}
state_dir: state
`), "/etc/b2c/binlog2ch.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClickHouse.User != "default" || cfg.Metrics.Listen != "127.0.0.1:9188" || cfg.ClickHouse.DatabaseMap == nil ||
		cfg.FullSync.ChunkRows != 50000 || cfg.FullSync.Workers != 4 || cfg.Replication.OnTableError != OnStop {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	if cfg.StateDir != "/etc/b2c/state" {
		t.Errorf("relative state_dir resolved to %q, want it under the config file's directory", cfg.StateDir)
	}
}

func TestSchemaAndOverrides(t *testing.T) {
	conf := strings.Replace(validConfig, "metrics:", `schema:
  datetime_zone: Europe/Berlin
  invalid_dates: clamp
metrics:`, 1)
	conf = strings.Replace(conf, "  exclude:", `  overrides:
    shop.orders: {name: orders_v2, mode: changelog, order_by: [id], exclude_columns: [secret]}
  exclude:`, 1)
	cfg, err := Parse([]byte(conf), "f.yaml", env(map[string]string{"MYSQL_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.SchemaOptions()
	if o.DateTimeZone.String() != "Europe/Berlin" || o.InvalidDates != "clamp" || o.TimeAs != "string" {
		t.Errorf("schema options %+v", o)
	}
	to := cfg.TableOptions("shop", "orders")
	if to.Name != "orders_v2" || to.Mode != "changelog" || to.Exclude[0] != "secret" || to.OrderBy[0] != "id" {
		t.Errorf("table options %+v", to)
	}
	if to := cfg.TableOptions("shop", "other"); to.Name != "" {
		t.Errorf("no override expected, got %+v", to)
	}
}

func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "binlog2ch.yaml")
	conf := strings.Replace(validConfig, `password: "${MYSQL_PASSWORD}"`, `password_file: pw`, 1)
	cfg, err := Parse([]byte(conf), file, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MySQL.Password.Reveal() != "from-file" {
		t.Errorf("password from file = %q", cfg.MySQL.Password.Reveal())
	}
}

// TestBadConfigs covers each class of bad input: the error names the key,
// the file and, where there is one, the line.
func TestBadConfigs(t *testing.T) {
	environ := env(map[string]string{"MYSQL_PASSWORD": "hunter2"})
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown key", "  server_id: 4242", "  server_id: 4242\n  serverid: 1", "config: mysql.serverid: unknown key (known here: addr, heartbeat_period, password, password_file, server_id, stall_timeout, tls, user) (binlog2ch.yaml:7)"},
		{"unknown section", "metrics:", "metric:\n  x: 1\nmetrics:", "config: metric: unknown key"},
		{"duplicate key", "  user: \"repl\"", "  user: \"repl\"\n  user: \"other\"", "config: mysql.user: set twice"},
		{"wrong type int", "server_id: 4242", "server_id: abc", `config: mysql.server_id: want an integer from 0 to 4294967295, got "abc" (binlog2ch.yaml:6)`},
		{"negative server id", "server_id: 4242", "server_id: -1", `config: mysql.server_id: want an integer from 0 to 4294967295, got "-1"`},
		{"wrong type list", `addr: ["127.0.0.1:9000"]`, `addr: "127.0.0.1:9000"`, "config: clickhouse.addr: want a list, got a scalar (binlog2ch.yaml:8)"},
		{"wrong type mapping", "tables:\n  include", "tables: [1]\nx:\n  include", "config: tables: want a mapping, got a list"},
		{"missing required", "  user: \"repl\"\n", "", "config: mysql.user: required (binlog2ch.yaml)"},
		{"missing section", "clickhouse:\n  addr: [\"127.0.0.1:9000\"]", "clickhouse:", "config: clickhouse.addr: required"},
		{"zero server id", "server_id: 4242", "server_id: 0", "config: mysql.server_id: must be > 0"},
		{"bad address", `addr: "127.0.0.1:3306"`, `addr: "localhost"`, `config: mysql.addr: must be host:port, got "localhost" (binlog2ch.yaml:3)`},
		{"bad port", `addr: "127.0.0.1:3306"`, `addr: "127.0.0.1:99999"`, `config: mysql.addr: port must be a number from 1 to 65535, got "99999"`},
		{"bad pattern", `include: ["shop.*"]`, `include: ["shop"]`, `config: tables.include[0]: must be a db.table pattern such as "shop.*", got "shop"`},
		{"bad glob", `include: ["shop.*"]`, `include: ["shop.[a"]`, `config: tables.include[0]: bad glob "[a"`},
		{"empty include", `include: ["shop.*"]`, `include: []`, "config: tables.include: required"},
		{"bad database map", "{shop: shop_replica}", "{shop: \"a.b\"}", "config: clickhouse.database_map.shop: ClickHouse database name must not contain"},
		{"unset env var", "${MYSQL_PASSWORD}", "${NO_SUCH_VAR}", "config: mysql.password: environment variable NO_SUCH_VAR is not set (binlog2ch.yaml:5)"},
		{"password and file", `password: "${MYSQL_PASSWORD}"`, "password: x\n  password_file: /x", "config: mysql.password_file: set either password or password_file, not both"},
		{"missing password file", `password: "${MYSQL_PASSWORD}"`, "password_file: /nonexistent/pw", "config: mysql.password_file: cannot read /nonexistent/pw: no such file or directory"},
		{"syntax error", "tables:", "tables: [", "config: not valid YAML"},
		{"empty file", validConfig, "", "config: the file is empty (binlog2ch.yaml)"},
		{"bad zone", "metrics:", "schema:\n  datetime_zone: Mars/Olympus\nmetrics:", `config: schema.datetime_zone: want an IANA zone name such as UTC or Europe/Berlin, got "Mars/Olympus" (binlog2ch.yaml:17)`},
		{"bad policy", "metrics:", "schema:\n  invalid_dates: guess\nmetrics:", `config: schema.invalid_dates: want one of error, clamp, null, got "guess"`},
		{"override glob", "  exclude:", "  overrides: {\"shop.*\": {}}\n  exclude:", "config: tables.overrides.shop.*: must be an exact db.table name"},
		{"override not included", "  exclude:", "  overrides: {other.t: {}}\n  exclude:", "config: tables.overrides.other.t: this table is not selected"},
		{"override bad mode", "  exclude:", "  overrides: {shop.t: {mode: append}}\n  exclude:", `config: tables.overrides.shop.t.mode: want replacing or changelog, got "append"`},
		{"bad override type", "  exclude:", "  overrides: {shop.t: {columns: {v: Float64}}}\n  exclude:", `config: tables.overrides.shop.t.columns.v: type "Float64" cannot be an override`},
		{"bad inflight", "metrics:", "batch: {max_inflight: 0}\nmetrics:", "config: batch.max_inflight: must be from 1 to 16"},
		{"bad chunk rows", "metrics:", "fullsync: {chunk_rows: 0}\nmetrics:", "config: fullsync.chunk_rows: must be from 1 to 10000000"},
		{"bad workers", "metrics:", "fullsync: {workers: 65}\nmetrics:", "config: fullsync.workers: must be from 1 to 64"},
		{"fullsync unknown key", "metrics:", "fullsync: {chunk: 5}\nmetrics:", "config: fullsync.chunk: unknown key (known here: chunk_rows, workers)"},
		{"stall shorter than two heartbeats", "server_id: 4242", "server_id: 4242\n  heartbeat_period: 2s\n  stall_timeout: 3s", "config: mysql.stall_timeout: must be at least two heartbeat periods (4s)"},
		{"bad ready lag", `listen: "127.0.0.1:9188"`, "listen: \"127.0.0.1:9188\"\n  ready_max_lag: 10ms", "config: metrics.ready_max_lag: must be >= 1s"},
		{"bad retention margin", `listen: "127.0.0.1:9188"`, "listen: \"127.0.0.1:9188\"\n  binlog_retention_margin: 30s", "config: metrics.binlog_retention_margin: must be >= 1m (the headroom is read every 30s)"},
		{"port zero elsewhere", `addr: "127.0.0.1:3306"`, `addr: "127.0.0.1:0"`, `config: mysql.addr: port must be a number from 1 to 65535, got "0"`},
		{"cluster path without table", "  database_map:", "  cluster: c1\n  replicated_path: /ch/{shard}\n  database_map:", `config: clickhouse.replicated_path: must contain {table} (each table needs its own ZooKeeper path), got "/ch/{shard}" (binlog2ch.yaml:12)`},
		{"cluster distributed name", "  database_map:", "  cluster: c1\n  distributed_table: dist\n  database_map:", `config: clickhouse.distributed_table: must contain {table} and differ from it`},
		{"cluster insert unknown", "  database_map:", "  cluster: c1\n  cluster_insert: async\n  database_map:", `config: clickhouse.cluster_insert: want shards or distributed, got "async" (binlog2ch.yaml:12)`},
		{"cluster hosts bad key", "  database_map:", "  cluster: c1\n  cluster_hosts: {ch1: \"10.0.0.1:9000\"}\n  database_map:", `config: clickhouse.cluster_hosts: must be host:port, got "ch1"`},
		{"cluster hosts bad value", "  database_map:", "  cluster: c1\n  cluster_hosts: {\"ch1:9000\": \"10.0.0.1\"}\n  database_map:", `config: clickhouse.cluster_hosts.ch1:9000: must be host:port, got "10.0.0.1"`},
		{"cluster hosts without cluster", "  database_map:", "  cluster_hosts: {\"ch1:9000\": \"10.0.0.1:9000\"}\n  database_map:", "config: clickhouse.cluster_hosts: needs clickhouse.cluster"},
		{"cluster bad name", "  database_map:", "  cluster: a.b\n  database_map:", "config: clickhouse.cluster: cluster name must not contain"},
		{"cluster keys without cluster", "  database_map:", "  distributed_table: x_{table}\n  database_map:", "config: clickhouse.distributed_table: needs clickhouse.cluster"},
		{"bad table error policy", "metrics:", "replication: {on_table_error: skip}\nmetrics:", `config: replication.on_table_error: want stop or skip_table, got "skip" (binlog2ch.yaml:16)`},
		{"override unknown key", "  exclude:", "  overrides: {shop.t: {engin: x}}\n  exclude:", "config: tables.overrides.shop.t.engin: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conf := strings.Replace(validConfig, c.from, c.to, 1)
			if conf == validConfig && c.from != validConfig {
				t.Fatalf("test case did not change the config: %q not found", c.from)
			}
			_, err := Parse([]byte(conf), "binlog2ch.yaml", environ)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

func TestConfigErrorsAreCollected(t *testing.T) {
	conf := strings.NewReplacer("server_id: 4242", "server_id: x", `listen: "127.0.0.1:9188"`, "listen: [1]").Replace(validConfig)
	_, err := Parse([]byte(conf), "f.yaml", env(map[string]string{"MYSQL_PASSWORD": "pw"}))
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("want two problems, one a line, got: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("/nonexistent/binlog2ch.yaml")
	if err == nil || err.Error() != "config: cannot read the file: no such file or directory (/nonexistent/binlog2ch.yaml)" {
		t.Fatalf("got %v", err)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	cfg, err := Parse([]byte(validConfig), "f.yaml", env(map[string]string{"MYSQL_PASSWORD": "hunter2"}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "mysql", cfg.MySQL, "password", cfg.MySQL.Password)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", cfg, "password", cfg.MySQL.Password)
	for _, s := range []string{
		fmt.Sprintf("%v %+v %#v %s %q", cfg, cfg, cfg, cfg.MySQL.Password, cfg.MySQL.Password),
		fmt.Sprint(cfg.MySQL),
		logs.String(),
	} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("password printed: %s", s)
		}
	}
	if !strings.Contains(fmt.Sprint(cfg.MySQL), redacted) {
		t.Errorf("want %s in %v", redacted, cfg.MySQL)
	}
}

func TestExpandEnv(t *testing.T) {
	e := env(map[string]string{"A": "x", "EMPTY": ""})
	for in, want := range map[string]string{
		"plain":        "plain",
		"${A}":         "x",
		"a${A}b${A}c":  "axbxc",
		"${EMPTY}":     "",
		"p$ss$":        "p$ss$",
		"$${A}":        "${A}",
		"pre$${A}post": "pre${A}post",
	} {
		got, err := expandEnv(in, e)
		if err != nil || got != want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${", "${A", "${1X}", "${}", "${UNSET}"} {
		if _, err := expandEnv(in, e); err == nil {
			t.Errorf("expandEnv(%q) accepted", in)
		}
	}
}

// TestExampleConfigIsValid keeps deploy/binlog2ch.example.yaml loadable.
func TestExampleConfigIsValid(t *testing.T) {
	t.Setenv("MYSQL_PASSWORD", "example")
	if _, err := Load("../deploy/binlog2ch.example.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsListenPortZero: a free port, for tests and ad-hoc runs.
func TestMetricsListenPortZero(t *testing.T) {
	cfg, err := Parse([]byte(strings.Replace(validConfig, `listen: "127.0.0.1:9188"`, `listen: "127.0.0.1:0"`, 1)), "binlog2ch.yaml", env(map[string]string{"MYSQL_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics.Listen != "127.0.0.1:0" || cfg.Metrics.ReadyMaxLag != time.Minute || cfg.Metrics.BinlogRetentionMargin != 6*time.Hour {
		t.Fatalf("metrics config %+v", cfg.Metrics)
	}
}

func TestClusterConfig(t *testing.T) {
	conf := strings.Replace(validConfig, "  database_map:", "  cluster: c1\n  database_map:", 1)
	cfg, err := Parse([]byte(conf), "binlog2ch.yaml", env(map[string]string{"MYSQL_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.SchemaOptions().Cluster
	if c == nil || c.Name != "c1" || c.ZooKeeperPath != "/clickhouse/tables/{shard}/{database}/{table}" || c.Replica != "{replica}" || c.Distributed != "{table}_all" {
		t.Fatalf("cluster options: %+v", c)
	}
	if cfg, err = Parse([]byte(validConfig), "binlog2ch.yaml", env(map[string]string{"MYSQL_PASSWORD": "x"})); err != nil || cfg.SchemaOptions().Cluster != nil {
		t.Fatalf("no cluster configured: %v %+v", err, cfg.SchemaOptions().Cluster)
	}
}

func TestStateConfig(t *testing.T) {
	parse := func(state string) (*Config, error) {
		return Parse([]byte(validConfig+state), "f.yaml", env(map[string]string{"MYSQL_PASSWORD": "pw"}))
	}
	cfg, err := parse("")
	if err != nil || cfg.State.Store != StoreFile || cfg.State.Lease != LeaseNone {
		t.Fatalf("default state: %+v, %v", cfg.State, err)
	}
	cfg, err = parse("state: {store: clickhouse, name: shop, lease: zookeeper, zookeeper: [\"127.0.0.1:2181\"]}\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.State.LeasePath != "/binlog2ch/leases/shop" || cfg.State.Table != defaultStateTable || cfg.State.SessionTimeout != 10*time.Second {
		t.Errorf("defaults: %+v", cfg.State)
	}
	for state, want := range map[string]string{
		"state: {store: clickhouse, name: shop}\n":                                                       "state.lease: store clickhouse needs lease zookeeper",
		"state: {store: s3}\n":                                                                           `state.store: want file or clickhouse, got "s3"`,
		"state: {lease: zookeeper, name: shop}\n":                                                        "state.zookeeper: required",
		"state: {lease: zookeeper, zookeeper: [\"z:2181\"]}\n":                                           "state.name: required",
		"state: {zookeeper: [\"z:2181\"]}\n":                                                             "state.lease: state.zookeeper and state.lease_path need lease zookeeper",
		"state: {insert_quorum: 2}\n":                                                                    "state.store: state.table and state.insert_quorum need store clickhouse",
		"state: {lease: zookeeper, name: s, zookeeper: [\"z:2181\"], lease_path: \"x/\"}\n":              "state.lease_path: want an absolute ZooKeeper path",
		"state: {lease: zookeeper, name: s, zookeeper: [\"z:2181\"], session_timeout: 10ms}\n":           "state.session_timeout: must be from 1s to 5m",
		"state: {store: clickhouse, name: s, lease: zookeeper, zookeeper: [\"z:2181\"], table: nodot}\n": `state.table: want db.table, got "nodot"`,
		"state: {bogus: 1}\n":                                                                            "state.bogus",
	} {
		if _, err := parse(state); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", strings.TrimSpace(state), err, want)
		}
	}
}
