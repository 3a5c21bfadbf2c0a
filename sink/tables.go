package sink

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
)

// The ClickHouse tables themselves (created, checked, their columns
// changed, the registry of what binlog2ch created) are chtables'; a writer
// reaches them through ClickHouse.tables.

// ForgetTable drops a MySQL table's ClickHouse table from the registry:
// MySQL created it (again), so a ClickHouse table of that name missing is
// new (chtables.Manager.ForgetTable).
func (c *ClickHouse) ForgetTable(t schema.TableName) error {
	return c.tables.ForgetTable(t)
}

// TableOf is the ClickHouse database and table MySQL table t replicates
// to.
func (c *ClickHouse) TableOf(t schema.TableName) (db, table string) {
	db, table = c.cfg.ClickHouseDatabase(t.Database), t.Table
	if o := c.cfg.TableOptions(t.Database, t.Table); o.Name != "" {
		table = o.Name
	}
	return db, table
}

// SwapIn puts the shadow table an online copy filled in place of MySQL
// table t's (chtables.Manager.SwapIn). Call it from t's writer, through
// Message.Run.
func (c *ClickHouse) SwapIn(ctx context.Context, log *slog.Logger, t schema.TableName, shadow string, copyVersion uint64) (bool, error) {
	db, table := c.TableOf(t)
	swapped, err := c.tables.SwapIn(ctx, log, db, table, shadow, copyVersion, t.String())
	if err != nil {
		return false, err
	}
	// The copy's columns may not be those the table had.
	return swapped, c.tables.EnsureView(ctx, log, db, table)
}

// EnsureView makes ClickHouse table db.table's current-state view read
// its columns (chtables.Manager.EnsureView).
func (c *ClickHouse) EnsureView(ctx context.Context, log *slog.Logger, db, table string) error {
	return c.tables.EnsureView(ctx, log, db, table)
}

// DropTable drops a ClickHouse table binlog2ch made for itself (an online
// copy's shadow table given up), forgotten in the registry first (a crash
// between the two leaves a table binlog2ch does not claim, not a claim
// to a table gone).
func (c *ClickHouse) DropTable(ctx context.Context, log *slog.Logger, db, table string) error {
	if err := c.tables.ForgetName(db, table); err != nil {
		return err
	}
	return c.tables.Exec(ctx, log, c.cfg.SchemaOptions().Table(db, table).DropSQL())
}

// OnDrop sets f to run when a writer drops its ClickHouse table, once the
// registry has forgotten it and before the DROP: tests stop the daemon
// there.
func (c *ClickHouse) OnDrop(f func(db, table string)) { c.dropHook = f }

// RegisteredTables lists the MySQL tables of database db whose ClickHouse
// tables binlog2ch created and has not dropped (those whose ClickHouse
// name is their own; shadow tables are not listed). The registry keeps
// ClickHouse names: with another MySQL database mapped to the same
// ClickHouse database (clickhouse.database_map), which were db's cannot be
// told, and that is an error.
func (c *ClickHouse) RegisteredTables(db string) ([]schema.TableName, error) {
	chdb := c.cfg.ClickHouseDatabase(db)
	for from, to := range c.cfg.ClickHouse.DatabaseMap {
		if from != db && to == chdb {
			return nil, fmt.Errorf("ClickHouse database %s holds the tables of MySQL databases %s and %s (clickhouse.database_map), and binlog2ch cannot tell which of its tables were %s's", chdb, db, from, db)
		}
	}
	if _, mapped := c.cfg.ClickHouse.DatabaseMap[chdb]; chdb != db && !mapped && c.cfg.SelectsDatabase(chdb) {
		return nil, fmt.Errorf("ClickHouse database %s is where MySQL database %s replicates to (clickhouse.database_map), and also that of MySQL database %s, which tables.include selects; binlog2ch cannot tell which of its tables were %s's", chdb, db, chdb, db)
	}
	var out []schema.TableName
	for _, name := range c.tables.Registered(chdb) {
		t := schema.TableName{Database: db, Table: name}
		if d, n := c.TableOf(t); d == chdb && n == name && !strings.HasSuffix(name, "__b2c_shadow") && !strings.HasSuffix(name, "__b2c_old") {
			out = append(out, t)
		}
	}
	return out, nil
}

// Holds reports whether ClickHouse has the table binlog2ch created for a
// MySQL table and has written since its CREATE (chtables.Manager.Holds).
func (c *ClickHouse) Holds(ctx context.Context, t schema.TableName) (bool, error) {
	return c.tables.Holds(ctx, t)
}
