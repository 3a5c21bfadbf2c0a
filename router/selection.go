package router

import (
	"sync"
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
	// memo holds what the current selection's patterns say of each table
	// met: every rows event asks, and each asking matched every include
	// and exclude pattern (path.Match) over again.
	memo atomic.Pointer[selectionMemo]
}

// selectionMemo is what one selection's patterns say of tables. The
// selection it is for is never changed in place (a reload sets another),
// so the answers stay true while it is current.
type selectionMemo struct {
	tables *config.TablesConfig
	mu     sync.Mutex
	of     map[schema.TableName]uint8 // memoSelected | memoMigration
}

const (
	memoSelected  = 1 << iota // the patterns select the table
	memoMigration             // an online migration's table of one they select
	// memoMax bounds a memo: names churned by DDL (gh-ost's tables are
	// new names each run) start it over.
	memoMax = 100_000
)

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
	cur := l.Current()
	if sel != cur {
		return sel.Selects(t.Database, t.Table) || l.followsMigration(t)
	}
	m := l.memo.Load()
	if m == nil || m.tables != cur {
		m = &selectionMemo{tables: cur, of: map[schema.TableName]uint8{}}
		l.memo.Store(m)
	}
	m.mu.Lock()
	v, ok := m.of[t]
	m.mu.Unlock()
	if !ok {
		if sel.Selects(t.Database, t.Table) {
			v = memoSelected
		} else if _, follows := l.followedMigration(t); follows {
			v = memoMigration
		}
		m.mu.Lock()
		if len(m.of) >= memoMax {
			clear(m.of)
		}
		m.of[t] = v
		m.mu.Unlock()
	}
	if v == memoMigration {
		if f := l.followed.Load(); f != nil {
			(*f)(t)
		}
	}
	return v != 0
}
