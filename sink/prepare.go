package sink

import (
	"context"
	"log/slog"

	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/schema"
)

// A copy's targets are prepared by chtables from one read of what
// ClickHouse holds (chtables.Existing); these are the copy's ways to them.

// ReadExisting reads the columns of every table in databases, with one
// query (chtables.Manager.ReadExisting).
func (c *ClickHouse) ReadExisting(ctx context.Context, log *slog.Logger, databases []string) (*chtables.Existing, error) {
	return c.tables.ReadExisting(ctx, log, databases)
}

// PrepareTable makes a copy's target ready from what ex says ClickHouse
// holds (chtables.Manager.PrepareTable).
func (c *ClickHouse) PrepareTable(ctx context.Context, log *slog.Logger, t *schema.Target, ex *chtables.Existing, dropped bool) error {
	return c.tables.PrepareTable(ctx, log, t, ex, dropped)
}

// RecordTables notes in the registry the tables a copy just created or
// wrote, replace[i] for ts[i]: copied from scratch (-recreate).
func (c *ClickHouse) RecordTables(ts []*schema.Target, replace []bool) error {
	return c.tables.RecordTables(ts, replace)
}

// NewCopyWriter is NewWriter for a copy's rows of src, whose target the
// copy has made ready (PrepareTable): the writer starts on it, so its
// first rows need no schema change, which would read the table's
// definition from MySQL and its columns from ClickHouse again.
func (c *ClickHouse) NewCopyWriter(ctx context.Context, name schema.TableName, queue int, src *schema.Table, target *schema.Target) (*Writer, error) {
	w := c.NewWriter(name, queue)
	w.copy = true
	if err := w.useTarget(ctx, target); err != nil {
		return nil, err
	}
	w.source = src
	return w, nil
}
