package replicator

// Online schema migrations: gh-ost and pt-online-schema-change fill a new
// table from the old one (INSERT ... SELECT in chunks) and keep it current
// (gh-ost applies the binlog's changes, pt-osc's triggers do), all of it
// row events of the new table in a ROW binlog, then swap it in with a
// RENAME. binlog2ch follows the new and old tables of a table it
// replicates as tables of its own, so the cut-over is a same-database
// rename of two replicated tables (statements.go) and the table needs no
// copy. What the tools do, from their sources:
//
//   - gh-ost (github/gh-ost), go/base/context.go: getSafeTableName names
//     "_<t>_<suffix>", cutting t so the name fits 64 characters.
//     GetGhostTableName: _<t>_gho. GetOldTableName: _<t>_del, with
//     --timestamp-old-table _<t>_<YYYYMMDDhhmmss>_del, under --revert
//     _<t>_rev_del (and the ghost is then the _<t>_del table).
//     GetChangelogTableName _<t>_ghc and GetCheckpointTableName _<t>_ghk
//     hold heartbeats, state and resume points, no rows of t: not
//     followed. With --force-table-names the names are built on another
//     name: not followed.
//   - gh-ost, go/logic/applier.go: CreateGhostTable ("create table _t_gho
//     like t"), AlterGhost, the row copy (insert ignore ... select) and
//     the binlog's changes applied (replace into, delete, update).
//     CreateAtomicCutOverSentryTable creates _<t>_del ("ghost-cut-over-
//     sentry"), AtomicCutOverMagicLock drops it ("drop table if exists")
//     while AtomicCutoverRename's "rename table t to _t_del, _t_gho to t"
//     waits: the binlog holds CREATE _t_del, DROP _t_del, the RENAME.
//     SwapTablesQuickAndBumpy (--cut-over=two-step) is "alter table t
//     rename _t_del", then "alter table _t_gho rename t". DropOldTable
//     runs only with --ok-to-drop-table.
//   - pt-online-schema-change (percona/percona-toolkit, bin/pt-online-
//     schema-change; Debian's 3.2.1 the same): create_new_table names
//     --new-table-name (default %T_new) with one more leading "_" at each
//     of up to 10 tries (_t_new, __t_new, ...), cut to 64 characters, and
//     creates it from SHOW CREATE TABLE; create_triggers adds AFTER
//     INSERT/UPDATE/DELETE triggers pt_osc_<db>_<t>_ins/_upd/_del that
//     REPLACE INTO and DELETE IGNORE FROM the new table; swap_tables runs
//     "RENAME TABLE t TO _t_old, _t_new TO t", with more leading "_" while
//     the old name is taken (9 tries, then random 6-character prefixes:
//     not followed); the old table is dropped after (DROP TABLE IF
//     EXISTS) unless --no-drop-old-table; drop_swap
//     (--alter-foreign-keys-method) drops t and renames _t_new to t.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// migration is what a table's name says of the online schema migration
// it belongs to.
type migration struct {
	Base string // the migrated table, in the same database
	Tool string // metrics.ToolGhost or metrics.ToolPTOSC
	// New: the table being filled and swapped in (gh-ost's ghost,
	// pt-osc's new table); otherwise the old table the original is
	// renamed to (or gh-ost's cut-over sentry of that name).
	New bool
}

// role names the table's part in log lines.
func (m migration) role() string {
	if m.New {
		return "new"
	}
	return "old"
}

// ptoscMaxPrefix is how many leading underscores pt-osc's names get at
// most (create_new_table's 10 tries).
const ptoscMaxPrefix = 10

// migrationsOf lists the migrations a table's name may belong to:
// "__t_new" is pt-osc's first try for _t, or its second for t. Names of
// other tables give none.
func migrationsOf(table string) []migration {
	if !strings.HasPrefix(table, "_") {
		return nil
	}
	var out []migration
	add := func(base, tool string, isNew bool) {
		if base != "" {
			out = append(out, migration{Base: base, Tool: tool, New: isNew})
		}
	}
	name := table[1:]
	switch {
	case strings.HasSuffix(name, "_gho"):
		add(strings.TrimSuffix(name, "_gho"), metrics.ToolGhost, true)
	case strings.HasSuffix(name, "_del"):
		base := strings.TrimSuffix(name, "_del")
		if b, ok := strings.CutSuffix(base, "_rev"); ok {
			add(ghostTimestamp(b), metrics.ToolGhost, false)
			add(b, metrics.ToolGhost, false)
		}
		add(ghostTimestamp(base), metrics.ToolGhost, false)
		add(base, metrics.ToolGhost, false)
	case strings.HasSuffix(name, "_new"), strings.HasSuffix(name, "_old"):
		isNew := strings.HasSuffix(name, "_new")
		base := table[:len(table)-len("_new")]
		for i := 1; i <= ptoscMaxPrefix && i < len(base) && base[i-1] == '_'; i++ {
			add(base[i:], metrics.ToolPTOSC, isNew)
		}
	}
	return out
}

// ghostTimestamp is t of "t_YYYYMMDDhhmmss" (gh-ost's
// --timestamp-old-table), "" for other names.
func ghostTimestamp(name string) string {
	const digits = 14
	i := len(name) - digits - 1
	if i < 1 || name[i] != '_' {
		return ""
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return name[:i]
}

// migrations is what the reader knows of the migration tables it follows.
type migrations struct {
	// known are the migration tables whose every row is in ClickHouse or
	// on its way: their CREATE TABLE was read, they were renamed from a
	// replicated table, or ClickHouse held them from before a restart.
	// Only the reader's goroutine uses it.
	known map[schema.TableName]migration
	// statement is the statement the router is acting on (nil: none), for
	// the migrationStatement hook.
	statement atomic.Pointer[source.Statement]
}

// followedMigration is the migration of a table the selection does not
// select itself but replicates as the new or old table of an online
// schema migration of a table it does select.
func (r *Replicator) followedMigration(t schema.TableName) (migration, bool) {
	sel := r.selection()
	for _, m := range migrationsOf(t.Table) {
		if sel.Selects(t.Database, m.Base) {
			return m, true
		}
	}
	return migration{}, false
}

// followsMigration is replicates for a table the selection does not
// select itself.
func (r *Replicator) followsMigration(t schema.TableName) bool {
	_, ok := r.followedMigration(t)
	if ok && r.hooks.migrationStatement != nil && r.migrations != nil {
		if st := r.migrations.statement.Load(); st != nil {
			r.hooks.migrationStatement(*st, t)
		}
	}
	return ok
}

// followMigrations is the stream's handler: the router, with the
// migration tables' rows and statements checked and followed on the way.
func (r *Replicator) followMigrations(s *router) source.Handler {
	r.migrations = &migrations{known: map[schema.TableName]migration{}}
	return migrationHandler{s}
}

// migrationHandler is the router with migrations followed (Rows,
// Statement); every other event goes straight to the router.
type migrationHandler struct{ *router }

// Rows has a migration table ClickHouse may not hold whole copied online:
// swapped in at the cut-over, it would otherwise lack the rows written
// before.
func (h migrationHandler) Rows(ctx context.Context, e source.Rows) error {
	if err := h.r.checkMigrationTable(ctx, h.router, e.Table, e.At, "rows of"); err != nil {
		return err
	}
	return h.router.Rows(ctx, e)
}

// Statement checks a cut-over before the router applies it, and follows
// the migration tables it creates, renames and drops after.
func (h migrationHandler) Statement(ctx context.Context, st source.Statement) error {
	r := h.r
	for _, ef := range st.Effects {
		if ef.Kind == ddl.RenameTable && r.replicates(ef.NewTable) {
			if err := r.checkMigrationTable(ctx, h.router, ef.Table, st.At, "a RENAME into "+ef.NewTable.String()+" of"); err != nil {
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
	err := h.router.Statement(ctx, st)
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
				r.log.Info("online schema migration cut over: its "+from.role()+" table is the table now, with every row in ClickHouse",
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
		if _, ok := h.r.followedMigration(ef.Table); ok {
			return true
		}
		if _, ok := h.r.followedMigration(ef.NewTable); ok && ef.Kind == ddl.RenameTable {
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
	for n := 1; h.router.pending(); n++ {
		if n%1000 == 0 {
			h.r.checkIn() // still alive, waiting on the writers
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return h.router.checkpoint(false)
}

// checkMigrationTable has a followed migration table copied online at
// what (rows, or a rename into a replicated name) when ClickHouse may not
// hold all its rows: its CREATE TABLE was not read (binlog2ch started, or
// began selecting its table, while the migration ran). ClickHouse holding
// the table binlog2ch created for it tells it was followed before a
// restart.
func (r *Replicator) checkMigrationTable(ctx context.Context, s *router, t schema.TableName, at source.Position, what string) error {
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
