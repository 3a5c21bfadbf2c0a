package replicator

import (
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The tables the daemon replicates: those tables.include and exclude
// select, a selection a reload replaces while the daemon runs (the stream
// and the router read it; neither holds its own copy).

// selection is the current tables.include and exclude.
func (r *Replicator) selection() *config.TablesConfig {
	if t := r.tables.Load(); t != nil {
		return t
	}
	return &r.cfg.Tables
}

// replicates reports whether a table's rows go to ClickHouse: a table
// the selection selects, and the new and old tables of an online schema
// migration of one (migrations.go).
func (r *Replicator) replicates(t schema.TableName) bool { return r.selects(r.selection(), t) }

// selects reports whether sel selects a table, or it is a migration's
// table followed (of a table the current selection selects).
func (r *Replicator) selects(sel *config.TablesConfig, t schema.TableName) bool {
	if schema.SystemDatabase(t.Database) {
		return false
	}
	return sel.Selects(t.Database, t.Table) || r.followsMigration(t)
}
