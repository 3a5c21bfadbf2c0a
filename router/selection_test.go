package router

import (
	"fmt"
	"testing"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestSelectionMemo: answers remembered for one selection give way to a
// reload's, an older selection asked explicitly is not answered from the
// current one's memo, and the migration hook hears every asking, the
// remembered ones too.
func TestSelectionMemo(t *testing.T) {
	l := NewSelection(&config.Config{Tables: config.TablesConfig{Include: []string{"shop.*"}, Exclude: []string{"shop.tmp*"}}})
	orders, tmp, gho := schema.TableName{Database: "shop", Table: "orders"}, schema.TableName{Database: "shop", Table: "tmp1"}, schema.TableName{Database: "shop", Table: "_orders_gho"}
	var heard []schema.TableName
	hook := func(t schema.TableName) { heard = append(heard, t) }
	l.followed.Store(&hook)
	for range 3 {
		if !l.Replicates(orders) || l.Replicates(tmp) {
			t.Fatal("the first selection's answers")
		}
	}
	was := l.Current()
	l.set(&config.TablesConfig{Include: []string{"shop.tmp*", "shop.orders"}, Exclude: []string{"shop._*"}})
	if !l.Replicates(tmp) || !l.Replicates(orders) {
		t.Error("a reload's selection answered from the memo of the one before")
	}
	if l.selects(was, tmp) || !l.selects(was, orders) {
		t.Error("the selection before the reload, asked explicitly, answered from the current one's memo")
	}
	// shop._orders_gho: excluded by name, followed as orders' migration.
	heard = nil
	for range 3 {
		if !l.Replicates(gho) {
			t.Fatal("orders' migration table does not replicate")
		}
	}
	if len(heard) != 3 {
		t.Errorf("the migration hook heard %d of 3 askings", len(heard))
	}
	l.set(&config.TablesConfig{Include: []string{"shop.orders"}, Exclude: []string{"shop.orders"}})
	if l.Replicates(gho) || l.Replicates(orders) {
		t.Error("a reload excluding orders still replicates it or its migration table")
	}
}

// BenchmarkReplicates is a rows event's asking with 20 include and 20
// exclude patterns: remembered (the daemon's), and the patterns matched
// every time (as before the memo).
func BenchmarkReplicates(b *testing.B) {
	var tables config.TablesConfig
	for i := range 20 {
		tables.Include = append(tables.Include, fmt.Sprintf("db%d.t*", i))
		tables.Exclude = append(tables.Exclude, fmt.Sprintf("db%d.tmp%d_*", i, i))
	}
	l := NewSelection(&config.Config{Tables: tables})
	name := schema.TableName{Database: "db19", Table: "t_orders"}
	b.Run("memo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !l.Replicates(name) {
				b.Fatal("not selected")
			}
		}
	})
	b.Run("patterns", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !tables.Selects(name.Database, name.Table) {
				b.Fatal("not selected")
			}
		}
	})
}
