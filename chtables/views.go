package chtables

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Current-state views (clickhouse.current_views): each replicated table
// with a key gets db.t_current (schema.Options.ViewOf), whose columns are
// the table's own. Every change of the table's columns that binlog2ch
// makes is followed by EnsureView; a DROP or RENAME by DropView.

// ViewNameTakenError: the view's name is held by a ClickHouse table or
// view binlog2ch did not make for this table.
type ViewNameTakenError struct {
	View, Table, Engine string // db.name; Engine: the holder's
}

func (e *ViewNameTakenError) Error() string {
	return fmt.Sprintf("ClickHouse %s, where clickhouse.current_views puts the current-state view of %s, is a %s binlog2ch did not make: rename or drop it, or map the MySQL table to another ClickHouse name (tables.overrides.<db.table>.name), or set clickhouse.current_views: false",
		e.View, e.Table, e.Engine)
}

// EnsureView makes db.table's current-state view read the table's
// columns: created when missing, made again when they differ (a DDL
// changed the table), left alone when they match. A table without
// _is_deleted (a changelog table, an event log) gets none. Without the
// option, or without the table, nothing is done.
func (c *Manager) EnsureView(ctx context.Context, log *slog.Logger, db, table string) error {
	opts := c.cfg.SchemaOptions()
	if !opts.CurrentViews {
		return nil
	}
	v := opts.ViewOf(db, table)
	var cols, have []chColumn
	var engine string
	err := c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		var err error
		if cols, err = c.columns(ctx, db, table); err != nil {
			return err
		}
		if engine, err = c.tablesColumn(ctx, "engine", v.Database, v.Name); err != nil {
			return err
		}
		have, err = c.columns(ctx, v.Database, v.Name)
		return err
	})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(cols, func(c chColumn) bool { return c.name == schema.IsDeletedColumn }) {
		return nil
	}
	if engine != "" && engine != "View" {
		return &ViewNameTakenError{View: db + "." + v.Name, Table: db + "." + table, Engine: engine}
	}
	want := slices.DeleteFunc(slices.Clone(cols), func(c chColumn) bool { return schema.IsMetaColumn(c.name) })
	if engine == "View" && slices.Equal(want, have) {
		return nil
	}
	names := make([]string, len(want))
	for i, c := range want {
		names[i] = c.name
	}
	if engine == "View" {
		if err := c.Exec(ctx, log, v.DropSQL(), "reason", "the table's columns changed"); err != nil {
			return err
		}
	}
	return c.Exec(ctx, log, opts.CreateViewSQL(db, table, names))
}

// DropView drops db.table's current-state view, when it is one: the
// table was dropped or renamed away.
func (c *Manager) DropView(ctx context.Context, log *slog.Logger, db, table string) error {
	opts := c.cfg.SchemaOptions()
	if !opts.CurrentViews {
		return nil
	}
	v := opts.ViewOf(db, table)
	var engine string
	err := c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) (err error) {
		engine, err = c.tablesColumn(ctx, "engine", v.Database, v.Name)
		return err
	})
	if err != nil || engine != "View" {
		return err
	}
	return c.Exec(ctx, log, v.DropSQL(), "reason", "its table "+db+"."+table+" is gone")
}
