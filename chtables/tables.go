// Package chtables keeps the ClickHouse tables binlog2ch manages: it
// creates them and changes their columns to fit the mapping (DDL run with
// retries), reads their columns from system.columns and their engines from
// system.tables, checks a table changed outside binlog2ch against the
// registry of what binlog2ch created (RegistryFile), prepares a copy's
// targets from one read of ClickHouse, and keeps a cluster's Distributed
// tables over the local ones. It never writes rows: inserts, batches and
// the routing to shards are sink's.
package chtables

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Manager runs what binlog2ch does to its ClickHouse tables, on the
// connection its sink shares.
type Manager struct {
	conn driver.Conn
	cfg  *config.Config
	log  *slog.Logger
	reg  *Registry // nil: tables are not tracked (no state_dir)
	// retry is the sink's: it counts failures by stage and notes whether
	// the server is up.
	retry func(ctx context.Context, log *slog.Logger, stage, what string, op func(context.Context) error) error
}

// New is the Manager of the tables on conn; retry runs a statement again
// after failures retrying may fix (sink's ClickHouse.Retry).
func New(conn driver.Conn, cfg *config.Config, log *slog.Logger, reg *Registry,
	retry func(ctx context.Context, log *slog.Logger, stage, what string, op func(context.Context) error) error) *Manager {
	return &Manager{conn: conn, cfg: cfg, log: log, reg: reg, retry: retry}
}

// Exec runs a DDL statement, logged with attrs, retrying what retrying
// can fix.
func (c *Manager) Exec(ctx context.Context, log *slog.Logger, stmt string, attrs ...any) error {
	log.Info("applying DDL", append([]any{"statement", stmt}, attrs...)...)
	if err := c.retry(ctx, log, metrics.StageDDL, "DDL", func(ctx context.Context) error { return c.conn.Exec(ctx, stmt) }); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// chColumn is a column as ClickHouse reports it.
type chColumn struct{ name, typ string }

// columns returns the table's columns in order (system.columns lists them
// so; 18.16 has no position column), or nil when it does not exist.
func (c *Manager) columns(ctx context.Context, db, table string) ([]chColumn, error) {
	rows, err := c.conn.Query(ctx, "SELECT name, type FROM system.columns WHERE database = ? AND table = ?", db, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []chColumn
	for rows.Next() {
		var c chColumn
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// TableExists reports whether ClickHouse has the table.
func (c *Manager) TableExists(ctx context.Context, db, table string) (bool, error) {
	var cols []chColumn
	err := c.retry(ctx, c.log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		var err error
		cols, err = c.columns(ctx, db, table)
		return err
	})
	return len(cols) > 0, err
}

// TargetChangedError: a ClickHouse table binlog2ch created, or a column it
// put there, is missing or has another type than binlog2ch gave it: it was
// changed outside binlog2ch, and its rows may no longer be MySQL's.
type TargetChangedError struct {
	Table   string // in ClickHouse, db.table
	MySQL   string // the MySQL table, db.table
	Problem string
}

func (e *TargetChangedError) Error() string {
	return fmt.Sprintf("ClickHouse table %s %s: it was changed outside binlog2ch. Creating it again or repairing it in place could leave rows that differ from MySQL (those not changed since missing, or a column's values lost), so binlog2ch stops. Copy it again: stop binlog2ch, run `binlog2ch fullsync -recreate -tables %s`, and start binlog2ch again",
		e.Table, e.Problem, e.MySQL)
}

// unregistered refuses to create again a table binlog2ch created, or to
// add again a column it put there, that ClickHouse lacks (see Registry):
// cols are the table's columns in ClickHouse now.
func (c *Manager) unregistered(t *schema.Target, cols []chColumn, mysql string) error {
	registered, ok := c.reg.columns(t.Database, t.Name)
	if !ok {
		return nil
	}
	if len(cols) == 0 {
		return &TargetChangedError{Table: t.FullName(), MySQL: mysql, Problem: "no longer exists, though binlog2ch created it (" + RegistryFile + " in state_dir lists it)"}
	}
	var missing []string
	for _, tc := range t.Columns {
		if slices.Contains(registered, tc.Name) && !slices.ContainsFunc(cols, func(c chColumn) bool { return c.name == tc.Name }) {
			missing = append(missing, tc.Name)
		}
	}
	if len(missing) > 0 {
		return &TargetChangedError{Table: t.FullName(), MySQL: mysql, Problem: "lacks column " + strings.Join(missing, ", ") + ", which binlog2ch put there"}
	}
	return nil
}

// ChangedOnline says how the ClickHouse table differs from the target a
// writer has been writing (nil when it does not, or cannot be read): a
// change made while binlog2ch ran, which an insert just ran into.
func (c *Manager) ChangedOnline(ctx context.Context, t *schema.Target, mysql string) error {
	cols, err := c.columns(ctx, t.Database, t.Name)
	if err != nil {
		return nil
	}
	if len(cols) == 0 {
		return &TargetChangedError{Table: t.FullName(), MySQL: mysql, Problem: "no longer exists (dropped while binlog2ch wrote to it)"}
	}
	have := map[string]string{}
	for _, c := range cols {
		have[c.name] = c.typ
	}
	var problems []string
	for _, tc := range t.Columns {
		switch typ, ok := have[tc.Name]; {
		case !ok:
			problems = append(problems, "lacks column "+tc.Name)
		case typ != tc.Type.String():
			problems = append(problems, "has column "+tc.Name+" as "+typ+" where binlog2ch writes "+tc.Type.String())
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &TargetChangedError{Table: t.FullName(), MySQL: mysql, Problem: strings.Join(problems, "; ") + " (changed while binlog2ch wrote to it)"}
}

// ForgetTable drops a MySQL table's ClickHouse table from the registry:
// MySQL created it (again), so a ClickHouse table of that name missing is
// new. Another host that replicated meanwhile (a shared checkpoint) may
// have dropped and not recreated it.
func (c *Manager) ForgetTable(t schema.TableName) error {
	name := t.Table
	if o := c.cfg.TableOptions(t.Database, t.Table); o.Name != "" {
		name = o.Name
	}
	return c.reg.Forget(c.cfg.ClickHouseDatabase(t.Database), name)
}

// Holds reports whether ClickHouse has the table binlog2ch keeps for a
// MySQL table and the registry lists it: binlog2ch created it and has
// written it since (a CREATE of the MySQL table forgets it, ForgetTable).
func (c *Manager) Holds(ctx context.Context, t schema.TableName) (bool, error) {
	db, name := c.cfg.ClickHouseDatabase(t.Database), t.Table
	if o := c.cfg.TableOptions(t.Database, t.Table); o.Name != "" {
		name = o.Name
	}
	if _, ok := c.reg.columns(db, name); !ok {
		return false, nil
	}
	return c.TableExists(ctx, db, name)
}

// RecordTables notes in the registry the tables a copy just created or
// wrote, saving it once; replace[i]: ts[i] was copied from scratch
// (-recreate).
func (c *Manager) RecordTables(ts []*schema.Target, replace []bool) error {
	entries := make([]registryEntry, len(ts))
	for i, t := range ts {
		entries[i] = registryEntry{db: t.Database, table: t.Name, cols: TargetColumns(t), replace: replace[i]}
	}
	return c.reg.recordAll(entries)
}

// TargetColumns are the names of the target's columns, as the registry
// records them.
func TargetColumns(t *schema.Target) []string {
	names := make([]string, len(t.Columns))
	for i, tc := range t.Columns {
		names[i] = tc.Name
	}
	return names
}

// EnsureTable makes the ClickHouse table fit the target: created if
// missing, missing columns added where the target has them, column types
// changed to the target's, and the columns in drop dropped. A column added
// gets its MySQL DEFAULT from defaults, so existing rows read as in MySQL. Every step
// checks the current state first, so it is idempotent on a replay after a
// crash. Columns ClickHouse has beyond the target are kept (a replay of
// events older than an ADD COLUMN must not drop the newer column's data).
// A writer names its MySQL table in mysql: a table or column binlog2ch
// created that is missing then stops it (TargetChangedError); a copy,
// which brings every row, passes "".
func (c *Manager) EnsureTable(ctx context.Context, log *slog.Logger, t *schema.Target, drop []string, defaults map[string]string, mysql string) error {
	var stmts []string
	var changed error
	retyped := map[int][3]string{} // a MODIFY COLUMN's statement: column, from, to
	err := c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		clear(retyped)
		cols, err := c.columns(ctx, t.Database, t.Name)
		if err != nil {
			return err
		}
		if len(cols) > 0 && t.Options.CurrentViews {
			// A table named like another's view (t_current) meets it.
			if engine, err := c.tablesColumn(ctx, "engine", t.Database, t.Name); err != nil {
				return err
			} else if engine == "View" {
				changed = fmt.Errorf("MySQL table %s replicates to ClickHouse %s, which is the current-state view of %s.%s (clickhouse.current_views): map it to another ClickHouse name (tables.overrides.<db.table>.name), exclude it, or set clickhouse.current_views: false",
					mysql, t.FullName(), t.Database, strings.TrimSuffix(t.Name, schema.ViewSuffix))
				return nil
			}
		}
		stmts = stmts[:0]
		if mysql != "" {
			if changed = c.unregistered(t, cols, mysql); changed != nil {
				return nil
			}
		}
		if len(cols) == 0 {
			stmts = append(stmts, t.CreateDatabaseSQL(), t.CreateTableSQL())
			return nil
		}
		have := map[string]string{}
		for _, c := range cols {
			have[c.name] = c.typ
		}
		for _, name := range drop {
			if _, ok := have[name]; ok {
				stmts = append(stmts, t.DropColumnSQL(name))
			}
		}
		prev := ""
		for _, c := range t.Columns {
			typ, ok := have[c.Name]
			switch {
			case !ok:
				stmts = append(stmts, t.AddColumnSQL(c, defaults[c.Name], prev))
			case typ != c.Type.String():
				log.Warn("ClickHouse column type differs from the mapping; changing it", "column", c.Name, "clickhouse", typ, "mapping", c.Type.String())
				stmts = append(stmts, t.ModifyColumnSQL(c))
				retyped[len(stmts)-1] = [3]string{c.Name, typ, c.Type.String()}
			}
			prev = c.Name
		}
		return nil
	})
	if err != nil {
		return err
	}
	if changed != nil {
		return changed
	}
	for i, s := range stmts {
		if err := c.Exec(ctx, log, s); err != nil {
			if r, ok := retyped[i]; ok && ctx.Err() == nil {
				// MySQL changed the column's type, and ClickHouse cannot
				// convert what it holds (BINARY(16) made UUID, say).
				return fmt.Errorf("%s: column %s: its MySQL type changed, and ClickHouse cannot change %s to %s in place: %w. Copy the table again: stop binlog2ch, run `binlog2ch fullsync -recreate -tables %s`, and start it again",
					mysql, r[0], r[1], r[2], err, mysql)
			}
			return err
		}
	}
	if t.Options.Cluster != nil {
		if err := c.EnsureDistributed(ctx, log, t, ""); err != nil {
			return err
		}
	}
	return c.EnsureView(ctx, log, t.Database, t.Name)
}

// AddColumns adds the named target columns ClickHouse lacks, each after
// the column before it in the target, and records them. A table that does
// not exist is left alone.
func (c *Manager) AddColumns(ctx context.Context, log *slog.Logger, t *schema.Target, names []string, defaults map[string]string, at string) error {
	var cols []chColumn
	err := c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		var err error
		cols, err = c.columns(ctx, t.Database, t.Name)
		return err
	})
	if err != nil || len(cols) == 0 {
		return err
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[c.name] = true
	}
	var added []string
	prev := ""
	for _, tc := range t.Columns {
		if !have[tc.Name] && slices.Contains(names, tc.Name) {
			if err := c.Exec(ctx, log, t.AddColumnSQL(tc, defaults[tc.Name], prev), "binlog", at); err != nil {
				return err
			}
			have[tc.Name] = true
			added = append(added, tc.Name)
		}
		if have[tc.Name] {
			prev = tc.Name
		}
	}
	if len(added) == 0 {
		return nil
	}
	if t.Options.Cluster != nil {
		if err := c.EnsureDistributed(ctx, log, t, ""); err != nil {
			return err
		}
	}
	if err := c.EnsureView(ctx, log, t.Database, t.Name); err != nil {
		return err
	}
	return c.reg.Record(t.Database, t.Name, added, nil, false)
}

// AwaitMutations waits until the table has no mutation left to do.
func (c *Manager) AwaitMutations(ctx context.Context, log *slog.Logger, db, table string) error {
	for {
		var pending uint64
		err := c.retry(ctx, log, metrics.StageDDL, "read ClickHouse mutations", func(ctx context.Context) error {
			return c.conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0", db, table).Scan(&pending)
		})
		if err != nil || pending == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RenameColumns renames ClickHouse columns after MySQL renamed them. It
// needs RENAME COLUMN (ClickHouse 20.4+): without it a rename could only be
// a drop and an add, losing the column's data, so it stops instead.
func (c *Manager) RenameColumns(ctx context.Context, log *slog.Logger, t *schema.Target, renames map[string]string) error {
	cols, err := c.columns(ctx, t.Database, t.Name)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[c.name] = true
	}
	for from, to := range renames {
		if from == to || !have[from] || have[to] {
			continue // done already (a replay), or nothing to rename
		}
		s, err := t.RenameColumnSQL(from, to) // a *schema.RenameColumnError before 20.4
		if err != nil {
			return err
		}
		if err := c.Exec(ctx, log, s); err != nil {
			return err
		}
	}
	return c.EnsureView(ctx, log, t.Database, t.Name)
}

// checkColumns refuses the columns cols of an existing table unless they
// hold the target's, with its types.
func checkColumns(target *schema.Target, cols []chColumn) error {
	have := map[string]string{}
	for _, col := range cols {
		have[col.name] = col.typ
	}
	var problems []string
	for _, tc := range target.Columns {
		typ, ok := have[tc.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("column %s is missing", tc.Name))
		case typ != tc.Type.String():
			problems = append(problems, fmt.Sprintf("column %s is %s, the mapping gives %s", tc.Name, typ, tc.Type.String()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("target table %s does not match the MySQL table: %s; drop it, or copy with -recreate", target.FullName(), strings.Join(problems, "; "))
	}
	return nil
}
