package router

// Online schema migrations (gh-ost, pt-online-schema-change) fill a new
// table from the old one and keep it current, all of it row events of the
// new table in a ROW binlog, then swap it in with a RENAME: binlog2ch
// follows the new and old tables of a table it replicates (package
// migration knows them by name) as tables of its own, so the cut-over is a
// same-database rename of two replicated tables (statements.go) and the
// table needs no copy.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/migration"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// migrations is what the reader knows of the migration tables it follows.
type migrations struct {
	// known are the migration tables whose every row is in ClickHouse or
	// on its way: their CREATE TABLE was read, they were renamed from a
	// replicated table, or ClickHouse held them from before a restart.
	// Only the reader's goroutine uses it.
	known map[schema.TableName]migration.Table
	// statement is the statement the router is acting on (nil: none), for
	// the migrationStatement hook.
	statement atomic.Pointer[source.Statement]
}

// followedMigration is the migration of a table the selection does not
// select itself but replicates as the new or old table of an online
// schema migration of a table it does select.
func (l *Selection) followedMigration(t schema.TableName) (migration.Table, bool) {
	sel := l.Current()
	for _, m := range migration.Of(t.Table) {
		if sel.Selects(t.Database, m.Base) {
			return m, true
		}
	}
	return migration.Table{}, false
}

// followsMigration is Replicates for a table the selection does not
// select itself.
func (l *Selection) followsMigration(t schema.TableName) bool {
	_, ok := l.followedMigration(t)
	if f := l.followed.Load(); ok && f != nil {
		(*f)(t)
	}
	return ok
}

// followMigrations is the stream's handler: the router, with the
// migration tables' rows and statements checked and followed on the way.
func (s *Router) followMigrations() source.Handler {
	s.migrations = &migrations{known: map[schema.TableName]migration.Table{}}
	if hook := s.hooks.MigrationStatement; hook != nil {
		f := func(t schema.TableName) {
			if st := s.migrations.statement.Load(); st != nil {
				hook(*st, t)
			}
		}
		s.sel.followed.Store(&f)
	}
	return migrationHandler{s}
}

// migrationHandler is the router with migrations followed (Rows,
// Statement); every other event goes straight to the router.
type migrationHandler struct{ *Router }

// Rows has a migration table ClickHouse may not hold whole copied online:
// swapped in at the cut-over, it would otherwise lack the rows written
// before.
func (h migrationHandler) Rows(ctx context.Context, e source.Rows) error {
	if err := h.Router.checkMigrationTable(ctx, h.Router, e.Table, e.At, "rows of"); err != nil {
		return err
	}
	return h.Router.Rows(ctx, e)
}

// Statement checks a cut-over before the router applies it, and follows
// the migration tables it creates, renames and drops after.
func (h migrationHandler) Statement(ctx context.Context, st source.Statement) error {
	r := h.Router
	for _, ef := range st.Effects {
		if ef.Kind == ddl.RenameTable && r.replicates(ef.NewTable) {
			if err := r.checkMigrationTable(ctx, h.Router, ef.Table, st.At, "a RENAME into "+ef.NewTable.String()+" of"); err != nil {
				return err
			}
		}
	}
	if h.touchesMigration(st) {
		if err := h.settle(ctx); err != nil {
			return err
		}
	}
	r.migrations.statement.Store(&st)
	err := h.Router.Statement(ctx, st)
	r.migrations.statement.Store(nil)
	if err != nil {
		return err
	}
	known := r.migrations.known
	for _, ef := range st.Effects {
		switch ef.Kind {
		case ddl.Create:
			// IF NOT EXISTS is logged also when the table was there:
			// whether ClickHouse holds it is for its rows to tell.
			m, ok := r.followedMigration(ef.Table)
			if !ok || ef.IfNotExists {
				continue
			}
			known[ef.Table] = m
			if m.New {
				r.m.MigrationTables.WithLabelValues(m.Tool).Inc()
				r.log.Info("following an online schema migration: its new table replicates like the table until the cut-over swaps it in",
					"table", ef.Table.String(), "migration_of", schema.TableName{Database: ef.Table.Database, Table: m.Base}.String(), "tool", m.Tool, "binlog", st.At.String())
			}
		case ddl.Drop:
			delete(known, ef.Table)
		case ddl.RenameTable:
			from, wasKnown := known[ef.Table]
			delete(known, ef.Table)
			if m, ok := r.followedMigration(ef.NewTable); ok && r.replicates(ef.Table) {
				known[ef.NewTable] = m // a replicated table's rows, under a migration's name
			}
			if wasKnown && ef.NewTable.Database == ef.Table.Database && ef.NewTable.Table == from.Base {
				r.log.Info("online schema migration cut over: its "+from.Role()+" table is the table now, with every row in ClickHouse",
					"table", ef.NewTable.String(), "from", ef.Table.String(), "tool", from.Tool, "binlog", st.At.String())
			}
		}
	}
	return nil
}

// touchesMigration reports whether a statement creates, drops or renames
// a migration table followed (a cut-over, its sentry, the old table's
// drop).
func (h migrationHandler) touchesMigration(st source.Statement) bool {
	for _, ef := range st.Effects {
		if ef.Kind != ddl.Create && ef.Kind != ddl.Drop && ef.Kind != ddl.RenameTable {
			continue
		}
		if _, ok := h.Router.followedMigration(ef.Table); ok {
			return true
		}
		if _, ok := h.Router.followedMigration(ef.NewTable); ok && ef.Kind == ddl.RenameTable {
			return true
		}
	}
	return false
}

// settle waits until every writer has stored what it was sent, then saves
// the checkpoint there, before a migration's DDL: a restart then never
// reads rows of its tables before it again once ClickHouse has renamed or
// dropped them, which would bring the table's old name back as a new,
// partial table and the DDL's replay would move or drop the wrong one.
func (h migrationHandler) settle(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for n := 1; h.Router.pending(); n++ {
		if n%1000 == 0 {
			h.Router.checkIn() // still alive, waiting on the writers
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return h.Router.checkpoint(false)
}

// checkMigrationTable has a followed migration table copied online at
// what (rows, or a rename into a replicated name) when ClickHouse may not
// hold all its rows: its CREATE TABLE was not read (binlog2ch started, or
// began selecting its table, while the migration ran). ClickHouse holding
// the table binlog2ch created for it tells it was followed before a
// restart.
func (r *Router) checkMigrationTable(ctx context.Context, s *Router, t schema.TableName, at source.Position, what string) error {
	if _, ok := r.migrations.known[t]; ok {
		return nil
	}
	m, ok := r.followedMigration(t)
	if !ok {
		return nil
	}
	held, err := r.sink.Holds(ctx, t)
	if err != nil {
		return fmt.Errorf("binlog %s: %s: reading whether ClickHouse holds the table: %w", at, t, err)
	}
	base := schema.TableName{Database: t.Database, Table: m.Base}
	if held {
		r.migrations.known[t] = m
		r.log.Info("following an online schema migration's table again: ClickHouse holds it from before the restart", "table", t.String(), "migration_of", base.String(), "tool", m.Tool)
		return nil
	}
	// binlog2ch started, or began selecting the table, while the
	// migration was under way: ClickHouse lacks the rows it got before,
	// and swapping it in at the cut-over would lose them. It is copied
	// online, as a table entering the set is.
	r.migrations.known[t] = m
	r.log.Info("an online schema migration's table was not followed from its CREATE TABLE (binlog2ch started, or began selecting its table, while the migration ran): copying it online",
		"table", t.String(), "migration_of", base.String(), "tool", m.Tool, "binlog", at.String(), "seen_at", what)
	return s.requestCopy(ctx, t, state.ReasonMigration)
}
