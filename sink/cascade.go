package sink

import (
	"context"
	"log/slog"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/budget"
	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The ClickHouse side of foreign-key cascades, which package cascade
// derives: the statements of a cascade.Executor, retried and counted as
// the writers' are, and the writers' word that their tables' columns
// change.

var _ cascade.Executor = (*ClickHouse)(nil)

// OnCascadeColumns sets the function told that a table's columns are
// changing (its writer is changing them): the cascades' copy of them is
// stale. Set before any writer runs.
func (c *ClickHouse) OnCascadeColumns(f func(schema.TableName)) { c.cascadeColumns = f }

// forgetCascadeTable tells the cascades a table's columns change.
func (c *ClickHouse) forgetCascadeTable(t schema.TableName) {
	if f := c.cascadeColumns; f != nil {
		f(t)
	}
}

// CascadeColumns reads a table's columns from system.columns, in order,
// with whether each is in the sorting key; none when it does not exist.
func (c *ClickHouse) CascadeColumns(ctx context.Context, db, table string) ([]cascade.Column, error) {
	var cols []cascade.Column
	err := c.Retry(ctx, c.log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		rows, err := c.conn.Query(ctx, "SELECT name, type, is_in_sorting_key FROM system.columns WHERE database = ? AND table = ?", db, table)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols = nil
		for rows.Next() {
			var col cascade.Column
			var inKey uint8
			if err := rows.Scan(&col.Name, &col.Type, &inKey); err != nil {
				return err
			}
			col.SortingKey = inKey == 1
			cols = append(cols, col)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return cols, nil
}

// cascadeContext carries the settings of a cascade's statements: the
// inserts' and room for the keys' literals.
func (c *ClickHouse) cascadeContext(ctx context.Context) context.Context {
	settings := clickhouse.Settings{"max_query_size": 64 << 20}
	for k, v := range c.driverSettings {
		settings[k] = v
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(settings))
}

// CascadeQueryRow runs a cascade's query of one row and scans it into
// dest.
func (c *ClickHouse) CascadeQueryRow(ctx context.Context, log *slog.Logger, what, query string, dest ...any) error {
	qctx := c.cascadeContext(ctx)
	return c.Retry(ctx, log, metrics.StageCascade, what, func(context.Context) error {
		return c.conn.QueryRow(qctx, query).Scan(dest...)
	})
}

// CascadeInsert writes a cascade's derived rows.
func (c *ClickHouse) CascadeInsert(ctx context.Context, log *slog.Logger, what, stmt string) error {
	// A part like any insert's: counted, so the writers' batches make
	// room for it.
	c.budget.Take(budget.GrantCascade)
	qctx := c.cascadeContext(ctx)
	return c.Retry(ctx, log, metrics.StageCascade, what, func(context.Context) error {
		return c.conn.Exec(qctx, stmt)
	})
}
