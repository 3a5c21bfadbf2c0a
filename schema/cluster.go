package schema

import (
	"strings"
)

// Cluster places the tables in a ClickHouse cluster (the servers'
// remote_servers): replicated engines, ON CLUSTER DDL and a Distributed
// table for reading.
type Cluster struct {
	// Name is the cluster as remote_servers names it.
	Name string
	// ZooKeeperPath and Replica are the replicated engine's first two
	// arguments; ClickHouse expands the macros ({shard}, {replica},
	// {database}, {table}) on each server.
	ZooKeeperPath string
	Replica       string
	// Distributed is the Distributed table's name, {table} standing for the
	// local table's.
	Distributed string
}

// Cluster defaults.
const (
	DefaultZooKeeperPath    = "/clickhouse/tables/{shard}/{database}/{table}"
	DefaultReplica          = "{replica}"
	DefaultDistributedTable = "{table}_all"
)

// OnCluster is " ON CLUSTER `name`" for a DDL statement in cluster mode,
// "" otherwise.
func (t *Target) OnCluster() string {
	if t.Options.Cluster == nil {
		return ""
	}
	return " ON CLUSTER " + QuoteIdent(t.Options.Cluster.Name)
}

// DistributedName is the Distributed table over local table name, or ""
// outside cluster mode.
func (o Options) DistributedName(name string) string {
	if o.Cluster == nil {
		return ""
	}
	return strings.ReplaceAll(o.Cluster.Distributed, "{table}", name)
}

// ReadName is the table to read the whole of the target from: the
// Distributed table in cluster mode, the table itself otherwise.
func (t *Target) ReadName() string {
	if d := t.Options.DistributedName(t.Name); d != "" {
		return d
	}
	return t.Name
}

// replicated turns a MergeTree-family engine into its Replicated variant
// with the cluster's ZooKeeper path and replica name first. An engine that
// is Replicated already, or not of the family, is left as the user wrote it.
func (c *Cluster) replicated(engine string) string {
	name, args, _ := strings.Cut(engine, "(")
	name = strings.TrimSpace(name)
	if !strings.HasSuffix(name, "MergeTree") || strings.HasPrefix(name, "Replicated") {
		return engine
	}
	args = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(args), ")"))
	out := "Replicated" + name + "(" + QuoteString(c.ZooKeeperPath) + ", " + QuoteString(c.Replica)
	if args != "" {
		out += ", " + args
	}
	return out + ")"
}

// ShardingKey is the Distributed table's sharding expression: a hash of the
// row's key, so every version of a row (its insert, updates and delete)
// lands on the same shard, where FINAL collapses them. A table without a key
// (changelog mode) has no versions to collapse: rand().
func (t *Target) ShardingKey() string {
	key := t.Source.PrimaryKey
	if len(key) == 0 {
		key = t.Source.UniqueKey
	}
	if len(key) == 0 {
		return "rand()"
	}
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = QuoteIdent(t.Source.Columns[k].Name)
		// A server whose cityHash64 refuses Decimal (18.16) hashes the
		// stored integer's bytes instead.
		if j := t.SourceToTarget[k]; j >= 0 && t.Columns[j].Type.Kind == CHDecimal && !t.Caps.HashDecimal {
			cols[i] = "reinterpretAsString(" + cols[i] + ")"
		}
	}
	return "cityHash64(" + strings.Join(cols, ", ") + ")"
}

// CreateDistributedSQL is the CREATE TABLE of the Distributed table over the
// target's local tables, with the given column definitions ("`a` Int32",
// as the local table has them), sharded by key ("": ShardingKey; a table
// recreated keeps the key it had, or rows of a key written before would
// sit on another shard than the new ones).
func (t *Target) CreateDistributedSQL(columns []string, key string) string {
	c := t.Options.Cluster
	if key == "" {
		key = t.ShardingKey()
	}
	return "CREATE TABLE IF NOT EXISTS " + QuoteIdent(t.Database) + "." + QuoteIdent(t.ReadName()) + t.OnCluster() +
		"\n(\n    " + strings.Join(columns, ",\n    ") + "\n)\nENGINE = Distributed(" + QuoteIdent(c.Name) + ", " +
		QuoteIdent(t.Database) + ", " + QuoteIdent(t.Name) + ", " + key + ")"
}
