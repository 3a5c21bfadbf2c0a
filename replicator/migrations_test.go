package replicator

import (
	"reflect"
	"testing"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestMigrationsOf: the names gh-ost and pt-online-schema-change give
// their new and old tables map to the migrated table; gh-ost's changelog
// and checkpoint tables and other names do not.
func TestMigrationsOf(t *testing.T) {
	g := func(base string, isNew bool) migration {
		return migration{Base: base, Tool: metrics.ToolGhost, New: isNew}
	}
	p := func(base string, isNew bool) migration {
		return migration{Base: base, Tool: metrics.ToolPTOSC, New: isNew}
	}
	for _, c := range []struct {
		name string
		want []migration
	}{
		{"_orders_gho", []migration{g("orders", true)}},
		{"_orders_del", []migration{g("orders", false)}},
		{"_orders_20240102030405_del", []migration{g("orders", false), g("orders_20240102030405", false)}},
		{"_orders_rev_del", []migration{g("orders", false), g("orders_rev", false)}},
		{"_orders_20240102030405_rev_del", []migration{g("orders", false), g("orders_20240102030405", false), g("orders_20240102030405_rev", false)}},
		{"_my_table_gho", []migration{g("my_table", true)}},
		{"_orders_new", []migration{p("orders", true)}},
		{"_orders_old", []migration{p("orders", false)}},
		{"__orders_new", []migration{p("_orders", true), p("orders", true)}},
		{"___orders_old", []migration{p("__orders", false), p("_orders", false), p("orders", false)}},
		{"_orders_ghc", nil}, // gh-ost's changelog: heartbeats, no rows of orders
		{"_orders_ghk", nil}, // gh-ost's checkpoint table
		{"orders_new", nil},  // pt-osc's --new-table-name without the prefix: not its default
		{"orders", nil},
		{"_gho", nil},
		{"__gho", nil},
		{"_new", nil},
		{"__new", nil},
		{"_orders_2024_del", []migration{g("orders_2024", false)}}, // not a timestamp
	} {
		if got := migrationsOf(c.name); !reflect.DeepEqual(got, c.want) {
			t.Errorf("migrationsOf(%q) = %+v, want %+v", c.name, got, c.want)
		}
	}
	// Eleven underscores: more than pt-osc's ten tries give.
	if got := migrationsOf("___________orders_new"); len(got) != ptoscMaxPrefix || got[len(got)-1].Base != "_orders" {
		t.Errorf("migrationsOf with 11 underscores = %+v, want 10 bases down to _orders", got)
	}
}

// TestReplicatesMigrationTables: with only shop.orders selected, its
// migrations' new and old tables replicate, those of other tables and
// gh-ost's changelog do not, and an exclude of the table itself wins.
func TestReplicatesMigrationTables(t *testing.T) {
	r := &Replicator{cfg: &config.Config{Tables: config.TablesConfig{Include: []string{"shop.orders", "shop.skip*"}, Exclude: []string{"shop.skip*"}}}}
	for name, want := range map[string]bool{
		"orders": true, "_orders_gho": true, "_orders_del": true, "_orders_20240102030405_del": true,
		"_orders_new": true, "__orders_new": true, "_orders_old": true, "__orders_old": true,
		"_orders_ghc": false, "_orders_ghk": false, "_other_gho": false, "_other_new": false, "other": false,
		"_skipped_gho": false, // its table is excluded
	} {
		if got := r.replicates(schema.TableName{Database: "shop", Table: name}); got != want {
			t.Errorf("replicates(shop.%s) = %v, want %v", name, got, want)
		}
	}
	if r.replicates(schema.TableName{Database: "other", Table: "_orders_gho"}) {
		t.Error("other._orders_gho replicates: its orders is another database's")
	}
	if r.replicates(schema.TableName{Database: "mysql", Table: "_user_gho"}) {
		t.Error("a system database's table replicates")
	}
}
