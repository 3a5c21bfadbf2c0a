package schema_test

import (
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

func clusterOptions() schema.Options {
	o := schema.DefaultOptions()
	o.Cluster = &schema.Cluster{Name: "c1", ZooKeeperPath: schema.DefaultZooKeeperPath, Replica: schema.DefaultReplica, Distributed: schema.DefaultDistributedTable}
	return o
}

func TestClusterMapping(t *testing.T) {
	tb := &schema.Table{Database: "shop", Name: "orders", Columns: []schema.Column{schematest.Col(t, "tenant", "int(11)", false), schematest.Col(t, "id", "bigint(20)", false), schematest.Col(t, "note", "varchar(10)", true)},
		PrimaryKey: []int{0, 1}}
	target, err := schema.Map(tb, "shop", schema.ClickHouse18, clusterOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CREATE TABLE IF NOT EXISTS `shop`.`orders` ON CLUSTER `c1`\n(",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', `_version`)",
	} {
		if got := target.CreateTableSQL(); !strings.Contains(got, want) {
			t.Errorf("CreateTableSQL:\n%s\nwant it to contain %s", got, want)
		}
	}
	if got, want := target.ShardingKey(), "cityHash64(`tenant`, `id`)"; got != want {
		t.Errorf("ShardingKey = %s, want %s", got, want)
	}
	if got, want := target.CreateDistributedSQL([]string{"`tenant` Int32"}, ""),
		"CREATE TABLE IF NOT EXISTS `shop`.`orders_all` ON CLUSTER `c1`\n(\n    `tenant` Int32\n)\nENGINE = Distributed(`c1`, `shop`, `orders`, cityHash64(`tenant`, `id`))"; got != want {
		t.Errorf("CreateDistributedSQL:\n%s\nwant\n%s", got, want)
	}
	if got := target.InsertSQL(); !strings.HasPrefix(got, "INSERT INTO `shop`.`orders_all` (") {
		t.Errorf("InsertSQL = %s, want the Distributed table", got)
	}

	// 18.16's cityHash64 refuses Decimal: such key columns shard by the
	// stored integer's bytes there.
	dec := &schema.Table{Database: "shop", Name: "prices", Columns: []schema.Column{schematest.Col(t, "sku", "int(11)", false), schematest.Col(t, "price", "decimal(10,2)", false)},
		PrimaryKey: []int{0, 1}}
	for _, c := range []struct {
		caps schema.Capabilities
		want string
	}{
		{schema.ClickHouse18, "cityHash64(`sku`, reinterpretAsString(`price`))"},
		{schema.ClickHouseModern, "cityHash64(`sku`, `price`)"},
	} {
		dt, err := schema.Map(dec, "shop", c.caps, clusterOptions(), schema.TableOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := dt.ShardingKey(); got != c.want {
			t.Errorf("%s: ShardingKey = %s, want %s", c.caps.Version, got, c.want)
		}
	}

	// Without a key (changelog mode) rows have no versions to co-locate.
	tb.PrimaryKey = nil
	target, err = schema.Map(tb, "shop", schema.ClickHouse18, clusterOptions(), schema.TableOptions{Mode: schema.ModeChangelog})
	if err != nil {
		t.Fatal(err)
	}
	if target.ShardingKey() != "rand()" || !strings.Contains(target.Engine, "ReplicatedMergeTree('/clickhouse") {
		t.Errorf("changelog: sharding %s, engine %s", target.ShardingKey(), target.Engine)
	}

	// Outside a cluster nothing changes.
	tb.PrimaryKey = []int{1}
	target, err = schema.Map(tb, "shop", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if target.OnCluster() != "" || target.ReadName() != "orders" || strings.Contains(target.CreateTableSQL(), "Replicated") {
		t.Errorf("single server: %s", target.CreateTableSQL())
	}
}
