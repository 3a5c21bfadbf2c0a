package router

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/partitioning"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Partition maintenance (replication.on_partition_maintenance: apply):
// a TRUNCATE or DROP PARTITION writes no row events, so the router deletes
// the partitions' rows in ClickHouse by their bounds (sink/partitions.go).
// The bounds must be those of the statement's time: the layouts are kept
// as of the binlog position read (layouts.go), following the partitioning
// DDL as the foreign keys do (package cascade), and saved with the
// checkpoint. information_schema shows the layout of now, which is the
// statement's only while the stream is caught up with the server.

// applyPartitions sends a TRUNCATE or DROP PARTITION to the table's writer,
// which deletes the partitions' rows by their bounds: the layout before the
// statement, as the binlog's DDL left it.
func (s *Router) applyPartitions(ctx context.Context, ef ddl.Effect, st source.Statement) error {
	r := s
	if ef.PartitionOp == "REORGANIZE" || ef.PartitionOp == "COALESCE" {
		return s.applyMove(ef, st)
	}
	if ef.PartitionOp != "TRUNCATE" && ef.PartitionOp != "DROP" {
		return fmt.Errorf("binlog %s: %s: partition maintenance that moves rows (statement %q) cannot be applied by bounds; set replication.on_partition_maintenance: recopy, or %s",
			st.At, ef.Table, truncate(st.Text, 300), Recopy)
	}
	m := s.layouts()
	lo, ok := m.Before[ef.Table]
	if !ok {
		lo = m.Lookup(ef.Table)
	}
	if lo.Why != "" && ef.PartitionOp == "TRUNCATE" {
		// Caught up at the statement, information_schema shows its
		// layout: a TRUNCATE changes none.
		if done, err := s.resolveLayouts(ctx, st.At); err != nil {
			r.log.Warn("partition layouts not read from information_schema", "error", err)
		} else if done {
			lo = m.Lookup(ef.Table)
		}
	}
	if lo.Why != "" {
		return fmt.Errorf("binlog %s: %s: partition maintenance (statement %q) cannot be applied by bounds: the table's partition layout at this binlog position is not known (%s), and binlog2ch will not take information_schema's layout of now for an older statement. To make ClickHouse equal again, %s. Or set replication.on_partition_maintenance: recopy, which copies such a table again by itself and goes on",
			st.At, ef.Table, truncate(st.Text, 300), lo.Why, Recopy)
	}
	if lo.Parts == nil {
		return fmt.Errorf("binlog %s: %s: partition maintenance (statement %q) cannot be applied by bounds: the table was not partitioned as binlog2ch followed its DDL to this position. To make ClickHouse equal again, %s. Or set replication.on_partition_maintenance: recopy",
			st.At, ef.Table, truncate(st.Text, 300), Recopy)
	}
	if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.PartitionRows, Partitions: lo.Parts.Clone(), Removed: ef.Partitions, At: st.At}); err != nil {
		return err
	}
	r.m.StatementsWithoutRows.WithLabelValues(config.OnApply).Inc()
	r.log.Info("partition maintenance applied: the partitions' rows deleted in ClickHouse by their bounds", "table", ef.Table.String(), "partitions", ef.Partitions, "binlog", st.At.String())
	return nil
}

// layouts is the partition layouts followed (nil unless
// on_partition_maintenance is apply), made at first use from the
// checkpoint the stream starts from.
func (s *Router) layouts() *partitioning.Layouts {
	if s.partitions == nil && s.cfg.Replication.OnPartitionMaintenance == config.OnApply {
		s.partitions = partitioning.Restore(s.opt.From)
	}
	return s.partitions
}

// followPartitions follows a statement's changes of partitioning, in
// binlog order, before its effects are acted on (applyPartitions reads the
// layout of before it). A layout the statement does not tell exactly is
// read from information_schema if the stream is caught up at the
// statement, else the table's layout is unknown until it is.
func (s *Router) followPartitions(ctx context.Context, st source.Statement) {
	m := s.layouts()
	if m == nil {
		return
	}
	m.Before = map[schema.TableName]partitioning.Layout{}
	var unparsed []schema.TableName
	if !st.Parsed {
		unparsed = ddl.UnparsedPartitioning(st.Text)
	}
	if len(unparsed) == 0 && !slices.ContainsFunc(st.Effects, changesLayouts) {
		return
	}
	for _, ef := range st.Effects {
		if ef.Kind == ddl.PartitionRows {
			if _, ok := m.Before[ef.Table]; !ok {
				m.Before[ef.Table] = m.Lookup(ef.Table)
			}
		}
	}
	m.Record(st.At, s.keepLayout, s.selection())
	inexact := m.FollowStatement(st, unparsed)
	if len(inexact) == 0 {
		return
	}
	done, err := s.resolveLayouts(ctx, st.At)
	if err != nil {
		s.log.Warn("partition layouts not read from information_schema", "error", err)
	}
	if !done {
		for t, why := range inexact {
			s.log.Warn("a table's partition layout is not known from here on: a TRUNCATE or DROP PARTITION of it stops replication until binlog2ch has caught up with the server",
				"table", t.String(), "why", why, "binlog", st.At.String())
		}
	}
}

// changesLayouts reports whether an effect may change a table's layout.
func changesLayouts(ef ddl.Effect) bool {
	switch ef.Kind {
	case ddl.Create, ddl.Drop, ddl.DropDatabase, ddl.RenameTable, ddl.Partitioning:
		return true
	case ddl.PartitionRows:
		return ef.PartitionOp != "TRUNCATE"
	}
	return false
}

// keepLayout is whether the checkpoint keeps a table's layout.
func (s *Router) keepLayout(t schema.TableName) bool { return s.replicates(t) }

// partitionsAt is the layouts as of a checkpoint position (nil unless
// on_partition_maintenance is apply).
func (s *Router) partitionsAt(cp source.Position) *state.PartitionState {
	m := s.layouts()
	if m == nil {
		return nil
	}
	return m.At(cp, s.keepLayout, s.selection())
}

// resolveEvery is how often, at most, the router checks whether it is
// caught up while a layout is not known.
const resolveEvery = 2 * time.Second

// resolvePartitions reads the layouts from information_schema when some
// are not known and the stream is caught up with the server (its read
// position is the server's current one): they are then the layouts of the
// position read.
func (s *Router) resolvePartitions() {
	m := s.layouts()
	if m == nil || m.Complete() || time.Since(m.Tried) < resolveEvery {
		return
	}
	m.Tried = time.Now()
	at := s.opt.Start.Position
	if p := s.readPos.Load(); p != nil {
		at = *p
	}
	parent := s.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, 10*time.Second)
	defer cancel()
	if _, err := s.resolveLayouts(ctx, at); err != nil {
		s.log.Debug("partition layouts not read from information_schema", "error", err)
	}
}

// resolveLayouts reads every table's layout from information_schema if the
// server's binlog position is at, before and after the read: nothing was
// written since, so they are the layouts as of at.
func (s *Router) resolveLayouts(ctx context.Context, at source.Position) (bool, error) {
	m := s.layouts()
	now, err := s.currentPosition(ctx)
	if err != nil || now != at {
		return false, err
	}
	all, err := catalog.LoadAllPartitions(ctx, s.my)
	if err != nil {
		return false, err
	}
	if after, err := s.currentPosition(ctx); err != nil || after != at {
		return false, err
	}
	m.Record(at, s.keepLayout, s.selection())
	m.Resolved(all)
	s.log.Info("partition layouts read from information_schema: binlog2ch is caught up with the server, so they are those of its position", "binlog", at.String(), "partitioned_tables", len(all))
	return true, nil
}

// applyMove takes a REORGANIZE or COALESCE PARTITION whose layout change
// the router has followed: where every row of the old partitions has a
// place in the new ones (catalog.Partitions.KeepsRows), it only moved rows
// between partitions, which ClickHouse's table does not have, and nothing
// is sent.
func (s *Router) applyMove(ef ddl.Effect, st source.Statement) error {
	m := s.layouts()
	before, ok := m.Before[ef.Table]
	if !ok {
		before = m.Lookup(ef.Table)
	}
	if why := partitioning.MoveOnly(ef, before, m.Lookup(ef.Table)); why != "" {
		return fmt.Errorf("binlog %s: %s: partition maintenance (statement %q) may have deleted rows without row events: %s; MariaDB drops the rows no new partition takes, and binlog2ch cannot show that none were. To make ClickHouse equal again, %s. Or set replication.on_partition_maintenance: recopy, which copies such a table again by itself and goes on",
			st.At, ef.Table, truncate(st.Text, 300), why, Recopy)
	}
	s.m.StatementsWithoutRows.WithLabelValues(config.OnApply).Inc()
	s.log.Info("partition maintenance applied: the rows only moved between partitions, which ClickHouse's table does not have; the layout is followed", "table", ef.Table.String(), "operation", ef.PartitionOp, "partitions", ef.Partitions, "binlog", st.At.String())
	return nil
}
