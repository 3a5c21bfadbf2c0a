package replicator

import (
	"context"
	"fmt"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/schema"
)

// checkViewNames refuses to start when clickhouse.current_views would put
// a table's current-state view (t_current) where another selected MySQL
// table replicates to: one of the two would take the other's place.
func (r *Replicator) checkViewNames(ctx context.Context) error {
	if !r.cfg.ClickHouse.CurrentViews {
		return nil
	}
	tables, err := catalog.ListTables(ctx, r.my, r.cfg)
	if err != nil {
		return err
	}
	byName := map[[2]string]schema.TableName{}
	for _, t := range tables {
		db, name := r.sink.TableOf(t)
		byName[[2]string{db, name}] = t
	}
	for k, t := range byName {
		if other, ok := byName[[2]string{k[0], k[1] + schema.ViewSuffix}]; ok {
			return fmt.Errorf("clickhouse.current_views puts the current-state view of MySQL table %s at ClickHouse %s.%s%s, where MySQL table %s replicates to: map one of them to another ClickHouse name (tables.overrides.<db.table>.name), exclude one, or set clickhouse.current_views: false",
				t, k[0], k[1], schema.ViewSuffix, other)
		}
	}
	return nil
}
