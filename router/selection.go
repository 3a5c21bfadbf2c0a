package router

import (
	"sync/atomic"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Selection is the tables the daemon replicates: those tables.include and
// exclude select, a selection a reload replaces while the daemon runs, and
// the new and old tables of an online schema migration of one
// (migrations.go). The stream, the router and the daemon read this one; none
// holds its own copy.
type Selection struct {
	cfg    *config.Config
	tables atomic.Pointer[config.TablesConfig] // a reload's (nil: cfg.Tables)
	// followed, when set, is called with each migration table the
	// selection follows (the router's test hook).
	followed atomic.Pointer[func(schema.TableName)]
}

// NewSelection is cfg's selection, until a reload.
func NewSelection(cfg *config.Config) *Selection { return &Selection{cfg: cfg} }

// Current is the current tables.include and exclude.
func (l *Selection) Current() *config.TablesConfig {
	if t := l.tables.Load(); t != nil {
		return t
	}
	return &l.cfg.Tables
}

func (l *Selection) set(t *config.TablesConfig) { l.tables.Store(t) }

// Replicates reports whether a table's rows go to ClickHouse.
func (l *Selection) Replicates(t schema.TableName) bool { return l.selects(l.Current(), t) }

// selects reports whether sel selects a table, or it is a migration's
// table followed (of a table the current selection selects).
func (l *Selection) selects(sel *config.TablesConfig, t schema.TableName) bool {
	if schema.SystemDatabase(t.Database) {
		return false
	}
	return sel.Selects(t.Database, t.Table) || l.followsMigration(t)
}
