package router

import (
	"context"
	"fmt"
	"slices"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// System-versioned tables (MariaDB's WITH SYSTEM VERSIONING) are not
// replicated: a DELETE or UPDATE of one writes the old row again as
// history, and ClickHouse would show those rows as current. The binlog's
// ALTER TABLE ... ADD SYSTEM VERSIONING stops the stream (statements.go);
// a table already versioned when it enters the replicated set (at the
// initial snapshot, at a start or reload that selects it, at an online
// copy: renamed in, resynced) is refused here, the same way: the daemon
// stops, or with replication.on_table_error: skip_table the table alone
// is marked failed.

// VersionedError is the error for table t, system-versioned, entering
// the replicated set at binlog position at ("" where none is known yet).
func VersionedError(t schema.TableName, at string, where string) error {
	pos := ""
	if at != "" {
		pos = "binlog " + at + ": "
	}
	return fmt.Errorf("%s%s: the table is system-versioned (WITH SYSTEM VERSIONING: information_schema.TABLES.TABLE_TYPE is 'SYSTEM VERSIONED') and %s; binlog2ch does not replicate such tables: MariaDB keeps each row's history in the table (a DELETE or UPDATE writes the old row again, with row_start and row_end), and ClickHouse would show those rows as current. Remove the table from the replicated set (tables.exclude) and start binlog2ch again; or, to keep it, remove the versioning in MySQL (ALTER TABLE %s DROP SYSTEM VERSIONING) and then %s",
		pos, t, where, t, Recopy)
}

// refuseVersioned takes the system-versioned tables among those entering
// the set at where: it returns the error that stops the daemon, or, with
// skip_table, marks each failed and returns nil. A table foreign-key
// cascades write into cannot be skipped: the daemon stops.
func (s *Router) refuseVersioned(versioned []schema.TableName, at, where string) error {
	for _, t := range versioned {
		err := VersionedError(t, at, where)
		if !s.skipTables() || s.cascadeChild(t) {
			return err
		}
		s.markFailed(t, s.writers[t], err) // its copy's entry, if any, is replaced: that copy saves into none
	}
	return nil
}

// versionedAtStart refuses the system-versioned tables the selection
// selects when the daemon starts, before the stream reads an event: a
// table included since the last start, or one the initial snapshot left
// out (catalog.ListTables lists base tables only).
func (s *Router) versionedAtStart(ctx context.Context) error {
	cfg := *s.cfg
	cfg.Tables = *s.selection()
	versioned, err := catalog.ListVersioned(ctx, s.my, &cfg)
	if err != nil {
		return err
	}
	versioned = slices.DeleteFunc(versioned, func(t schema.TableName) bool { return s.skipping[t] || !s.replicates(t) })
	return s.refuseVersioned(versioned, s.opt.Start.Position.String(), "is selected by tables.include/exclude at start")
}

// versionedSelected is the system-versioned tables sel selects that was
// does not (a reload's).
func (s *Router) versionedSelected(ctx context.Context, was, sel *config.TablesConfig) ([]schema.TableName, error) {
	cfg := *s.cfg
	cfg.Tables = *sel
	versioned, err := catalog.ListVersioned(ctx, s.my, &cfg)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(versioned, func(t schema.TableName) bool { return s.selects(was, t) }), nil
}

// versionedInBatch refuses the system-versioned tables of an online copy
// about to start, and returns the others.
func (s *Router) versionedInBatch(ctx context.Context, tables []schema.TableName, at string) ([]schema.TableName, error) {
	versioned, err := catalog.Versioned(ctx, s.my, tables)
	if err != nil || len(versioned) == 0 {
		return tables, err
	}
	if err := s.refuseVersioned(versioned, at, "is to be copied online"); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(tables, func(t schema.TableName) bool { return slices.Contains(versioned, t) }), nil
}
