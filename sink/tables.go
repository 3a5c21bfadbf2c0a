package sink

import (
	"context"

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

// Holds reports whether ClickHouse has the table binlog2ch created for a
// MySQL table and has written since its CREATE (chtables.Manager.Holds).
func (c *ClickHouse) Holds(ctx context.Context, t schema.TableName) (bool, error) {
	return c.tables.Holds(ctx, t)
}
