package router

import (
	"testing"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestReplicatesMigrationTables: with only shop.orders selected, its
// migrations' new and old tables replicate, those of other tables and
// gh-ost's changelog do not, and an exclude of the table itself wins.
func TestReplicatesMigrationTables(t *testing.T) {
	r := NewSelection(&config.Config{Tables: config.TablesConfig{Include: []string{"shop.orders", "shop.skip*"}, Exclude: []string{"shop.skip*"}}})
	for name, want := range map[string]bool{
		"orders": true, "_orders_gho": true, "_orders_del": true, "_orders_20240102030405_del": true,
		"_orders_new": true, "__orders_new": true, "_orders_old": true, "__orders_old": true,
		"_orders_ghc": false, "_orders_ghk": false, "_other_gho": false, "_other_new": false, "other": false,
		"_skipped_gho": false, // its table is excluded
	} {
		if got := r.Replicates(schema.TableName{Database: "shop", Table: name}); got != want {
			t.Errorf("replicates(shop.%s) = %v, want %v", name, got, want)
		}
	}
	if r.Replicates(schema.TableName{Database: "other", Table: "_orders_gho"}) {
		t.Error("other._orders_gho replicates: its orders is another database's")
	}
	if r.Replicates(schema.TableName{Database: "mysql", Table: "_user_gho"}) {
		t.Error("a system database's table replicates")
	}
}
