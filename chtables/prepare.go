package chtables

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// A copy of many tables prepares their targets from one read of what
// ClickHouse holds (Existing), where checking and ensuring each table on
// its own (EnsureTable) reads its columns with queries of their own: two
// queries per table, four thousand for two thousand tables.

// Existing is what ClickHouse held in some databases when it was read:
// each table's columns; and the databases created since.
type Existing struct {
	mu     sync.Mutex
	tables map[string][]chColumn // by key(db, table)
	// dbs were created (IF NOT EXISTS) by PrepareTable. A database the
	// read saw is created too, once: in a cluster, the one server read
	// may have it where others lack it.
	dbs map[string]bool
}

// ReadExisting reads the columns of every table in databases, with one
// query.
func (c *Manager) ReadExisting(ctx context.Context, log *slog.Logger, databases []string) (*Existing, error) {
	ex := &Existing{tables: map[string][]chColumn{}, dbs: map[string]bool{}}
	if len(databases) == 0 {
		return ex, nil
	}
	quoted := make([]string, len(databases))
	for i, db := range databases {
		quoted[i] = schema.QuoteString(db)
	}
	// system.columns lists a table's columns in order (18.16 has no
	// position column to sort by).
	q := "SELECT database, table, name, type FROM system.columns WHERE database IN (" + strings.Join(quoted, ", ") + ")"
	err := c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		clear(ex.tables)
		rows, err := c.conn.Query(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var db, table string
			var col chColumn
			if err := rows.Scan(&db, &table, &col.name, &col.typ); err != nil {
				return err
			}
			ex.tables[key(db, table)] = append(ex.tables[key(db, table)], col)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return ex, nil
}

// PrepareTable makes a copy's target ready, as checkColumns and then
// EnsureTable do, but from what ex says ClickHouse holds: an existing
// table must have the target's columns and types (else the error names
// them), a missing one is created (its database once). dropped: the copy
// has just dropped the table (-recreate), whatever ex says.
func (c *Manager) PrepareTable(ctx context.Context, log *slog.Logger, t *schema.Target, ex *Existing, dropped bool) error {
	var cols []chColumn
	if !dropped {
		ex.mu.Lock()
		cols = ex.tables[key(t.Database, t.Name)]
		ex.mu.Unlock()
	}
	if len(cols) > 0 {
		if err := checkColumns(t, cols); err != nil {
			return err
		}
	} else {
		if err := c.ensureDatabase(ctx, log, t, ex); err != nil {
			return err
		}
		if err := c.Exec(ctx, log, t.CreateTableSQL()); err != nil {
			return err
		}
	}
	if t.Options.Cluster != nil {
		return c.EnsureDistributed(ctx, log, t, "")
	}
	return nil
}

// ensureDatabase creates t's database, once per Existing.
func (c *Manager) ensureDatabase(ctx context.Context, log *slog.Logger, t *schema.Target, ex *Existing) error {
	// Held while creating: the other tables of the database wait for it
	// rather than create it too.
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.dbs[t.Database] {
		return nil
	}
	if err := c.Exec(ctx, log, t.CreateDatabaseSQL()); err != nil {
		return err
	}
	ex.dbs[t.Database] = true
	return nil
}
