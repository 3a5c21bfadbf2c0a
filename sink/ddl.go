package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// changeSchema moves the writer to a new source schema: the first one, or
// one changed by DDL. ClickHouse gets the columns the new schema needs; a
// column the MySQL table lost is dropped.
func (w *Writer) changeSchema(ctx context.Context, src *schema.Table) error {
	defer w.c.forgetCascadeTable(w.name)
	// Best effort: the table may be gone or changed since. But a column
	// type without a mapping stops: the binlog shows such a type as
	// another (MariaDB's UUID and INET6 as BINARY(16)), whose bytes would
	// land in ClickHouse unreadable.
	live, err := w.c.live(ctx, w.name)
	var unsupported *schema.UnsupportedTypeError
	if errors.As(err, &unsupported) {
		return err
	}
	src = binlog.Enrich(src, live)
	target, err := schema.Map(src, w.c.cfg.ClickHouseDatabase(w.name.Database), w.c.caps, w.c.cfg.SchemaOptions(),
		w.c.cfg.TableOptions(w.name.Database, w.name.Table))
	if err != nil {
		return err
	}
	if w.target != nil && strings.Join(w.target.OrderBy, ",") != strings.Join(target.OrderBy, ",") {
		return fmt.Errorf("the sorting key changed from (%s) to (%s); ClickHouse cannot change a table's sorting key in place: recreate %s (binlog2ch fullsync -recreate)",
			strings.Join(w.target.OrderBy, ", "), strings.Join(target.OrderBy, ", "), target.FullName())
	}
	var drop []string
	if w.target != nil {
		for _, c := range w.target.Columns {
			if c.Meta == schema.MetaNone && src.ColumnIndex(c.Name) < 0 {
				drop = append(drop, c.Name)
			}
		}
	}
	if err := w.c.tables.EnsureTable(ctx, w.log, target, drop, w.defaults, w.name.String()); err != nil {
		return err
	}
	if err := w.c.reg.Record(target.Database, target.Name, chtables.TargetColumns(target), drop, false); err != nil {
		return err
	}
	return w.useTarget(ctx, target)
}

// useTarget moves the writer to target, whose ClickHouse table is ready.
func (w *Writer) useTarget(ctx context.Context, target *schema.Target) error {
	blk := block.NewBlock(target)
	route, err := w.c.routeFor(ctx, w.log, blk)
	if err != nil {
		return err
	}
	sharding := ""
	if target.Options.Cluster != nil {
		err := w.c.Retry(ctx, w.log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
			engine, err := w.c.tables.Engine(ctx, target.Database, target.ReadName())
			sharding = chtables.ShardingExpr(engine)
			return err
		})
		if err != nil {
			return err
		}
	}
	w.defaults = nil
	w.target = target
	w.place = target.Placement(sharding)
	w.route = route
	w.block = blk
	w.free, w.blocks = nil, 1
	return nil
}

func (w *Writer) applyDDL(ctx context.Context, m Message) (err error) {
	defer w.c.forgetCascadeTable(w.name) // the old name's, and after a rename the new one's
	w.c.forgetCascadeTable(w.name)
	db := w.c.cfg.ClickHouseDatabase(w.name.Database)
	name := w.name.Table
	if w.target != nil {
		name = w.target.Name
	} else if o := w.c.cfg.TableOptions(w.name.Database, w.name.Table); o.Name != "" {
		name = o.Name
	}
	table := w.c.cfg.SchemaOptions().Table(db, name)
	var stmts []string
	// In a cluster the Distributed table goes with the local one; it names
	// the local table, so a rename recreates it under the new name.
	dist, inCluster := table.Distributed()
	switch m.DDL {
	case ddl.Altered:
		w.source = nil // the next rows read the definition again (changeSchema)
		return nil
	case ddl.Truncate:
		stmts = append(stmts, table.TruncateSQL())
	case ddl.Drop:
		if err := w.c.tables.DropView(ctx, w.log, db, name); err != nil {
			return err
		}
		// Forgotten before it goes: a crash between the two leaves a
		// table binlog2ch no longer claims, which the binlog read again
		// from before the DROP writes to and drops again. The other way
		// round, that replay found gone a table binlog2ch had created,
		// and stopped.
		if err := w.c.reg.Forget(db, name); err != nil {
			return err
		}
		if h := w.c.dropHook; h != nil {
			h(db, name)
		}
		if inCluster {
			stmts = append(stmts, dist.DropSQL())
		}
		stmts = append(stmts, table.DropSQL())
		defer w.c.m.Forget(w.name)
	case ddl.RenameTable:
		newName := m.NewName
		if o := w.c.cfg.TableOptions(w.name.Database, m.NewName); o.Name != "" {
			newName = o.Name
		}
		// The view goes with its table's name: made again under the new
		// one, once the table (and a cluster's Distributed table) is there.
		if err := w.c.tables.DropView(ctx, w.log, db, name); err != nil {
			return err
		}
		defer func() {
			if err == nil {
				err = w.c.tables.EnsureView(ctx, w.log, db, newName)
			}
		}()
		exists, err := w.c.tables.TableExists(ctx, db, name)
		if err != nil {
			return err
		}
		var key string // the Distributed table's sharding key, kept
		if inCluster {
			err := w.c.Retry(ctx, w.log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
				engine, err := w.c.tables.Engine(ctx, db, dist.Name)
				key = chtables.ShardingExpr(engine)
				return err
			})
			if err != nil {
				return err
			}
			stmts = append(stmts, dist.DropSQL())
		}
		if exists { // on a replay the rename may already be done
			stmts = append(stmts, table.RenameSQL(newName))
			defer func() {
				if err == nil {
					err = w.c.reg.Rename(db, name, newName, nil)
				}
			}()
		}
		if inCluster && w.target != nil {
			renamed := *w.target
			renamed.Name = newName
			defer func() {
				if err == nil {
					err = w.c.tables.EnsureDistributed(ctx, w.log, &renamed, key)
				}
			}()
		}
		w.c.m.Forget(w.name)
		w.name.Table = m.NewName
		w.log = w.c.log.With("table", w.name.String())
		w.tm = w.c.m.ForTable(w.name)
		w.source, w.target, w.block = nil, nil, nil // re-read on the next rows
	case ddl.PartitionRows:
		return w.deletePartitions(ctx, m, db, name)
	case ddl.AddColumns:
		// The defaults also serve the next table map's schema change, in
		// case the columns cannot be added now.
		w.defaults = m.Defaults
		return w.addColumnsNow(ctx, m)
	case ddl.RenameColumns:
		if w.target == nil {
			return nil // no rows seen yet: the next table map has the new names
		}
		if err := w.c.tables.RenameColumns(ctx, w.log, w.target, m.Renames); err != nil {
			return fmt.Errorf("%s at binlog %s: %w", w.name, m.At, err)
		}
		if err := w.c.reg.Rename(db, name, name, m.Renames); err != nil {
			return err
		}
		// Follow the rename in the known schema, so the next table map
		// differs only by what else changed.
		src := *w.source
		src.Columns = append([]schema.Column(nil), w.source.Columns...)
		for i := range src.Columns {
			if to, ok := m.Renames[src.Columns[i].Name]; ok {
				src.Columns[i].Name = to
			}
		}
		w.source, w.target, w.route = nil, nil, nil
		return w.changeSchema(ctx, &src)
	}
	for _, stmt := range stmts {
		if err := w.c.tables.Exec(ctx, w.log, stmt, "binlog", m.At.String()); err != nil {
			return err
		}
	}
	return nil
}

// addColumnsNow adds the columns an ALTER TABLE ... ADD COLUMN added, when
// it is read: the table may have no rows for a long time, and readers want
// the column. Their definitions come from the live MySQL table; only the
// named columns are added (others the live table has may come from later
// ALTERs, whose defaults are not known yet). Best effort: when the table
// or the column is gone from MySQL, or ClickHouse has no table yet, the
// table's next rows bring the columns as before.
func (w *Writer) addColumnsNow(ctx context.Context, m Message) error {
	live, err := w.c.live(ctx, w.name)
	if err != nil || live == nil {
		w.log.Debug("columns added in MySQL wait for the table's next rows", "reason", err)
		return nil
	}
	target, err := schema.Map(live, w.c.cfg.ClickHouseDatabase(w.name.Database), w.c.caps, w.c.cfg.SchemaOptions(),
		w.c.cfg.TableOptions(w.name.Database, w.name.Table))
	if err != nil {
		return nil // the next rows stop with this error, at their position
	}
	if err := w.c.tables.AddColumns(ctx, w.log, target, m.Added, m.Defaults, m.At.String()); err != nil {
		return fmt.Errorf("%s at binlog %s: %w", w.name, m.At, err)
	}
	return nil
}

// deletePartitions deletes in ClickHouse the rows of partitions a TRUNCATE
// or DROP PARTITION removed (replication.on_partition_maintenance: apply),
// by the partitions' bounds, and waits for the mutation: the table's later
// rows then land after it. Bounds that do not translate exactly stop the
// daemon instead of deleting the wrong rows.
func (w *Writer) deletePartitions(ctx context.Context, m Message, db, name string) error {
	target := w.target
	if target == nil {
		live, err := w.c.live(ctx, w.name)
		if err == nil && live != nil {
			target, err = schema.Map(live, db, w.c.caps, w.c.cfg.SchemaOptions(), w.c.cfg.TableOptions(w.name.Database, w.name.Table))
		}
		if err != nil || target == nil {
			return fmt.Errorf("%s at binlog %s: partition maintenance to apply, but the table's columns cannot be read (%v); copy the table again: binlog2ch fullsync -recreate -tables %s", w.name, m.At, err, w.name)
		}
	}
	where, err := chtables.PartitionsWhere(m.Partitions, m.Removed, target)
	if err != nil {
		return fmt.Errorf("%s at binlog %s: partition maintenance cannot be applied by its bounds: %v. Set replication.on_partition_maintenance: recopy (the table is copied again instead), or stop binlog2ch and run binlog2ch fullsync -recreate -tables %s", w.name, m.At, err, w.name)
	}
	if err := w.c.tables.Exec(ctx, w.log, w.c.cfg.SchemaOptions().Table(db, name).DeleteWhereSQL(where), "binlog", m.At.String()); err != nil {
		return err
	}
	return w.c.tables.AwaitMutations(ctx, w.log, db, name)
}
