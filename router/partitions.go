package router

import (
	"context"
	"fmt"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
)

// Partition maintenance (replication.on_partition_maintenance: apply):
// a TRUNCATE or DROP PARTITION writes no row events, so the router deletes
// the partitions' rows in ClickHouse by their bounds (sink/partitions.go),
// read from information_schema (catalog/partitions.go) when the table's
// writer starts.

// readPartitions reads a table's partitions as its writer starts, while
// the partitions a later DROP names still exist.
func (s *Router) readPartitions(ctx context.Context, name schema.TableName) error {
	if s.cfg.Replication.OnPartitionMaintenance != config.OnApply || s.partitions[name] != nil {
		return nil
	}
	p, err := catalog.LoadPartitions(ctx, s.my, name)
	if err != nil {
		return err
	}
	if p != nil {
		s.partitions[name] = p
	}
	return nil
}

// applyPartitions sends a TRUNCATE or DROP PARTITION to the table's writer,
// which deletes the partitions' rows by their bounds. The bounds are those
// read when the table's writer started, as DROPs since have left them: a
// dropped partition is gone from information_schema by the time its
// statement is read.
func (s *Router) applyPartitions(ctx context.Context, ef ddl.Effect, st source.Statement) error {
	r := s
	if ef.PartitionOp != "TRUNCATE" && ef.PartitionOp != "DROP" {
		return fmt.Errorf("binlog %s: %s: partition maintenance that moves rows (statement %q) cannot be applied by bounds; set replication.on_partition_maintenance: recopy, or %s",
			st.At, ef.Table, truncate(st.Text, 300), Recopy)
	}
	parts := s.partitions[ef.Table]
	if parts == nil || !parts.Has(ef.Partitions) {
		var err error
		if parts, err = catalog.LoadPartitions(ctx, r.my, ef.Table); err != nil {
			return err
		}
		if parts == nil {
			parts = &catalog.Partitions{}
		}
	}
	// The writer reads parts now; the router keeps its own copy.
	sent := *parts
	sent.Parts = append([]catalog.Partition(nil), parts.Parts...)
	if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.PartitionRows, Partitions: &sent, Removed: ef.Partitions, At: st.At}); err != nil {
		return err
	}
	if ef.PartitionOp == "DROP" {
		parts.Drop(ef.Partitions)
	}
	s.partitions[ef.Table] = parts
	r.m.StatementsWithoutRows.WithLabelValues(config.OnApply).Inc()
	r.log.Info("partition maintenance applied: the partitions' rows deleted in ClickHouse by their bounds", "table", ef.Table.String(), "partitions", ef.Partitions, "binlog", st.At.String())
	return nil
}
