package sink

import (
	"context"
	"log/slog"

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
	return c.tables.SwapIn(ctx, log, db, table, shadow, copyVersion)
}
