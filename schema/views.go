package schema

import "strings"

// A current-state view (clickhouse.current_views) reads a replicated
// table as MySQL holds it: MySQL's columns in MySQL's order, the newest
// version of each row, deleted rows left out. Readers then need neither
// FINAL nor the tombstone filter.

// ViewSuffix names a table's current-state view: db.t_current for db.t.
const ViewSuffix = "_current"

// View is the target's current-state view; ok is false when it has none:
// the option is off, the table is a changelog (an event log, nothing to
// collapse), or the target is not a table readers see (an online copy's
// shadow).
func (t *Target) View() (v TableRef, ok bool) {
	if !t.Options.CurrentViews || t.Mode != ModeReplacing || t.NoView {
		return TableRef{}, false
	}
	return t.Options.ViewOf(t.Database, t.Name), true
}

// ViewOf is the view of ClickHouse table db.name, for statements about a
// table whose columns are not at hand (a MySQL DROP or RENAME).
func (o Options) ViewOf(db, name string) TableRef {
	return TableRef{Database: db, Name: name + ViewSuffix, Cluster: o.Cluster}
}

// ViewColumns are the columns the view has: the target's own, in order,
// without the meta columns.
func (t *Target) ViewColumns() []TargetColumn {
	cols := make([]TargetColumn, 0, len(t.Columns))
	for _, c := range t.Columns {
		if c.Meta == MetaNone {
			cols = append(cols, c)
		}
	}
	return cols
}

// CreateViewSQL creates the view, on every server in cluster mode, where
// it reads the Distributed table: every version of a key is on one shard,
// so each shard's FINAL sees them all.
func (t *Target) CreateViewSQL() string {
	v, _ := t.View()
	cols := t.ViewColumns()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = QuoteIdent(c.Name)
	}
	return "CREATE VIEW IF NOT EXISTS " + v.String() + v.OnCluster() + " AS SELECT " + strings.Join(names, ", ") +
		" FROM " + t.ReadRef().String() + " FINAL WHERE " + QuoteIdent(IsDeletedColumn) + " = 0"
}
