package schema

import "strings"

// A current-state view (clickhouse.current_views) reads a replicated
// table as MySQL holds it: MySQL's columns in MySQL's order, the newest
// version of each row, deleted rows left out. Readers then need neither
// FINAL nor the tombstone filter.

// ViewSuffix names a table's current-state view: db.t_current for db.t.
const ViewSuffix = "_current"

// ViewOf is the current-state view of ClickHouse table db.name.
func (o Options) ViewOf(db, name string) TableRef {
	return TableRef{Database: db, Name: name + ViewSuffix, Cluster: o.Cluster}
}

// IsMetaColumn reports whether a ClickHouse column is one binlog2ch adds
// (a view leaves them out).
func IsMetaColumn(name string) bool {
	return name == VersionColumn || name == IsDeletedColumn || name == OpColumn
}

// CreateViewSQL creates the view of table db.name with the table's own
// columns (in its order, without the meta columns), on every server in
// cluster mode, where it reads the Distributed table: every version of a
// key is on one shard, so each shard's FINAL sees them all.
func (o Options) CreateViewSQL(db, name string, columns []string) string {
	v := o.ViewOf(db, name)
	read := o.Table(db, name)
	if d, ok := read.Distributed(); ok {
		read = d
	}
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = QuoteIdent(c)
	}
	return "CREATE VIEW IF NOT EXISTS " + v.String() + v.OnCluster() + " AS SELECT " + strings.Join(quoted, ", ") +
		" FROM " + read.String() + " FINAL WHERE " + QuoteIdent(IsDeletedColumn) + " = 0"
}
