package migration

import (
	"reflect"
	"testing"
)

// TestMigrationsOf: the names gh-ost and pt-online-schema-change give
// their new and old tables map to the migrated table; gh-ost's changelog
// and checkpoint tables and other names do not.
func TestMigrationsOf(t *testing.T) {
	g := func(base string, isNew bool) Table {
		return Table{Base: base, Tool: Ghost, New: isNew}
	}
	p := func(base string, isNew bool) Table {
		return Table{Base: base, Tool: PTOSC, New: isNew}
	}
	for _, c := range []struct {
		name string
		want []Table
	}{
		{"_orders_gho", []Table{g("orders", true)}},
		{"_orders_del", []Table{g("orders", false)}},
		{"_orders_20240102030405_del", []Table{g("orders", false), g("orders_20240102030405", false)}},
		{"_orders_rev_del", []Table{g("orders", false), g("orders_rev", false)}},
		{"_orders_20240102030405_rev_del", []Table{g("orders", false), g("orders_20240102030405", false), g("orders_20240102030405_rev", false)}},
		{"_my_table_gho", []Table{g("my_table", true)}},
		{"_orders_new", []Table{p("orders", true)}},
		{"_orders_old", []Table{p("orders", false)}},
		{"__orders_new", []Table{p("_orders", true), p("orders", true)}},
		{"___orders_old", []Table{p("__orders", false), p("_orders", false), p("orders", false)}},
		{"_orders_ghc", nil}, // gh-ost's changelog: heartbeats, no rows of orders
		{"_orders_ghk", nil}, // gh-ost's checkpoint table
		{"orders_new", nil},  // pt-osc's --new-table-name without the prefix: not its default
		{"orders", nil},
		{"_gho", nil},
		{"__gho", nil},
		{"_new", nil},
		{"__new", nil},
		{"_orders_2024_del", []Table{g("orders_2024", false)}}, // not a timestamp
	} {
		if got := Of(c.name); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Of(%q) = %+v, want %+v", c.name, got, c.want)
		}
	}
	// Eleven underscores: more than pt-osc's ten tries give.
	if got := Of("___________orders_new"); len(got) != PTOSCMaxPrefix || got[len(got)-1].Base != "_orders" {
		t.Errorf("migrationsOf with 11 underscores = %+v, want 10 bases down to _orders", got)
	}
}
