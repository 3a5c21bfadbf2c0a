package router

import (
	"context"
	"fmt"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Statement acts on DDL: each effect on a replicated table goes to its
// writer, in order with the table's rows.
func (s *Router) Statement(ctx context.Context, st source.Statement) error {
	r := s
	// The held run of cascading deletes goes first: DDL may change the
	// keys or the tables.
	if err := s.cascades.EndRun(ctx); err != nil {
		return err
	}
	if st.NonTableKind != "" {
		// Routines, triggers, views, events, accounts, grants: routine
		// when a schema is loaded, and nothing for replication to do. Not
		// their text: account statements carry passwords.
		r.m.DDL.WithLabelValues(metrics.DDLIgnored).Inc()
		r.log.Debug("statement changes no table; ignored", "kind", st.NonTableKind, "binlog", st.At.String())
		return nil
	}
	s.followPartitions(ctx, st) // the partition layouts of its time (partitions.go)
	s.forgetStored(st)
	if !st.Parsed {
		r.m.DDL.WithLabelValues(metrics.DDLNotUnderstood).Inc()
		named := false
		for _, ef := range st.Effects {
			named = named || ef.Table != (schema.TableName{})
			if ef.Kind != ddl.NotUnderstood {
				continue
			}
			// What it did to a replicated table neither its words nor the
			// table maps show: stop rather than let the table diverge.
			if ef.Table != (schema.TableName{}) {
				if r.replicates(ef.Table) {
					return notUnderstood(ef.Table, ef.Why, st)
				}
				continue
			}
			// Its words name no table: any name in them that is a
			// replicated table's may be one it changed.
			for _, t := range ef.Mentions {
				if r.replicates(t) {
					return notUnderstood(t, ef.Why, st)
				}
			}
		}
		r.log.Debug("DDL not understood, naming no replicated table; ignored", "statement", truncate(st.Text, 500), "binlog", st.At.String())
		if b := s.copies.batch; b != nil && !named {
			// It may change a table being copied: copy from after it.
			s.restartBatch(b.tables[0], state.ReasonDefinitionDDL)
		}
		// Its words may still show a change the table maps will not: act on it.
	}
	if err := s.cascades.FollowDDL(ctx, st); err != nil {
		return err
	}
	applied := false
	defer func() {
		result := metrics.DDLSkipped // not about a replicated table, or nothing to do
		if applied {
			result = metrics.DDLApplied
		}
		if st.Parsed {
			r.m.DDL.WithLabelValues(result).Inc()
		}
	}()
	// A copy under way of a table the statement changes starts over from
	// a position after it: its shadow has the definition of before.
	for _, ef := range st.Effects {
		for _, t := range []schema.TableName{ef.Table, ef.NewTable} {
			if ef.Kind != ddl.ForeignKeys && (s.copies.inBatch(t) || (ef.Kind == ddl.DropDatabase && s.copies.batchInDatabase(t.Database))) {
				s.restartBatch(t, state.ReasonDefinitionDDL)
			}
		}
	}
	for _, ef := range st.Effects {
		oldIn := r.replicates(ef.Table)
		switch ef.Kind {
		case ddl.RowsByStatement, ddl.PartitionRows:
			if !oldIn && ef.Table != (schema.TableName{}) {
				continue
			}
			policy := r.cfg.Replication.OnStatementDML
			if ef.Kind == ddl.PartitionRows {
				policy = r.cfg.Replication.OnPartitionMaintenance
			}
			switch {
			case ef.Table == (schema.TableName{}) || policy == config.OnStop:
				return rowsWithoutEvents(ef, st)
			case policy == config.OnApply:
				if err := s.applyPartitions(ctx, ef, st); err != nil {
					return err
				}
				applied = true
			case policy == config.OnKeep:
				r.m.StatementsWithoutRows.WithLabelValues(config.OnKeep).Inc()
				r.log.Warn("partition maintenance removed or moved rows in MySQL; ClickHouse keeps them (replication.on_partition_maintenance: keep)",
					"table", ef.Table.String(), "statement", truncate(st.Text, 300), "binlog", st.At.String())
			case policy == config.OnRecopy:
				if err := s.recopy(ctx, ef, st); err != nil {
					return err
				}
				applied = true
			}
		case ddl.Drop, ddl.Truncate, ddl.RenameColumns, ddl.AddColumns:
			if !oldIn {
				continue
			}
			if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ef.Kind, Renames: ef.Renames, Defaults: ef.Defaults, Added: ef.Added, At: st.At}); err != nil {
				return err
			}
			applied = true
			switch {
			case ef.Kind == ddl.Drop:
				s.stopWriter(ef.Table)
				if err := s.forgetCopy(ctx, ef.Table); err != nil {
					return err
				}
			case ef.Kind == ddl.AddColumns && len(ef.Unfilled) > 0:
				// MySQL filled the existing rows with values the binlog does
				// not carry: ClickHouse gets them from a copy.
				r.log.Info("columns added with values for the existing rows that the binlog does not carry; copying the table online",
					"table", ef.Table.String(), "columns", ef.Unfilled, "binlog", st.At.String())
				if err := s.requestCopy(ctx, ef.Table, state.ReasonAddColumn); err != nil {
					return err
				}
			}
		case ddl.Altered:
			// Its changes show in the next table map, but not all of them:
			// BINARY(16) made UUID (or INET6, BINARY(4) INET4) maps the
			// same. The writer reads the table's definition again.
			if oldIn {
				if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.Altered, At: st.At}); err != nil {
					return err
				}
			}
		case ddl.DropDatabase:
			if err := s.dropDatabase(ctx, ef.Table.Database, st); err != nil {
				return err
			}
			applied = true
		case ddl.Create:
			if oldIn {
				if err := r.sink.ForgetTable(ef.Table); err != nil {
					return err
				}
			}
		case ddl.RenameTable:
			newIn := r.replicates(ef.NewTable)
			switch {
			case oldIn && newIn && ef.Table.Database == ef.NewTable.Database:
				// A writer still dropping or renaming away the new name's
				// table must be done before this rename runs.
				if err := s.awaitRetired(ctx, ef.NewTable); err != nil {
					return err
				}
				if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.RenameTable, NewName: ef.NewTable.Table, At: st.At}); err != nil {
					return err
				}
				applied = true
				rt := s.writers[ef.Table]
				rt.tm = r.m.ForTable(ef.NewTable) // the writer's too, once it has renamed
				rt.tm.PendingSince.Store(0)
				if len(rt.marks) > 0 {
					rt.tm.PendingSince.Store(rt.marks[0].at)
				}
				s.writers[ef.NewTable] = rt
				delete(s.writers, ef.Table)
				s.retire(ef.Table, rt.w, s.seq)
				if s.copies.has(ef.Table) {
					// Its copy, started over above, goes on under the new name.
					if err := s.forgetCopy(ctx, ef.Table); err != nil {
						return err
					}
					if err := s.requestCopy(ctx, ef.NewTable, state.ReasonRenamed); err != nil {
						return err
					}
				}
			case oldIn && newIn:
				// To another replicated database: the table is dropped
				// under its old name and copied online under the new one.
				r.log.Info("table renamed to another replicated database: its ClickHouse table goes, and it is copied online under its new name",
					"from", ef.Table.String(), "to", ef.NewTable.String())
				if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.Drop, At: st.At}); err != nil {
					return err
				}
				s.stopWriter(ef.Table)
				if err := s.forgetCopy(ctx, ef.Table); err != nil {
					return err
				}
				if err := s.requestCopy(ctx, ef.NewTable, state.ReasonRenamed); err != nil {
					return err
				}
				applied = true
			case oldIn:
				r.log.Warn("table renamed out of the replicated set; its ClickHouse table is kept but no longer updated", "from", ef.Table.String(), "to", ef.NewTable.String())
				s.stopWriter(ef.Table)
				if err := s.forgetCopy(ctx, ef.Table); err != nil {
					return err
				}
			case newIn:
				r.log.Info("table renamed into the replicated set: copying its rows online", "from", ef.Table.String(), "to", ef.NewTable.String())
				if err := s.requestCopy(ctx, ef.NewTable, state.ReasonRenamed); err != nil {
					return err
				}
				applied = true
			}
		}
	}
	return nil
}

// Recopy is the way out after a change the binlog cannot replay: a
// restart alone would stop at the same event again.
const Recopy = "re-copy: stop binlog2ch, run `binlog2ch fullsync -recreate -checkpoint` (it copies every table into emptied tables and moves the checkpoint past this event), and start binlog2ch again"

// notUnderstood is the error that stops the daemon at a statement the
// parser cannot read that names a replicated table, or whose words hold
// the name of one: it may have changed the table in ways the table maps do
// not show (a column renamed, whose values would be lost; a default the
// existing rows have in MySQL only), and binlog2ch will not guess.
func notUnderstood(t schema.TableName, why string, st source.Statement) error {
	if why == ddl.Versioned {
		return fmt.Errorf("binlog %s: %s: the statement makes or changes a system-versioned table (statement %q), which binlog2ch does not replicate: MariaDB keeps each row's history in the table (a DELETE or UPDATE writes the old row again, with row_start and row_end), and ClickHouse would show those rows as current. Remove the table from the replicated set (tables.exclude) and start binlog2ch again; or, to keep it, remove the versioning in MySQL (ALTER TABLE %s DROP SYSTEM VERSIONING) and then %s",
			st.At, t, truncate(st.Text, 300), t, Recopy)
	}
	return fmt.Errorf("binlog %s: %s: DDL binlog2ch cannot parse names the table (statement %q): it may have changed what the table maps do not show (a column renamed, whose values would be lost; a default the existing rows have), so binlog2ch stops rather than let ClickHouse diverge. If the statement is plain MariaDB or MySQL, report it. To go on: %s. Or remove the table from the replicated set (tables.exclude) and start binlog2ch again",
		st.At, t, truncate(st.Text, 300), Recopy)
}

// rowsWithoutEvents is the error that stops the daemon at a statement that
// changed a replicated table's rows without row events: binlog2ch cannot
// know which rows, and will not guess.
func rowsWithoutEvents(ef ddl.Effect, st source.Statement) error {
	if ef.Kind == ddl.PartitionRows {
		return fmt.Errorf("binlog %s: %s: partition maintenance removed or moved rows without row events (statement %q). ClickHouse still holds the rows MySQL no longer has. To make it equal again, %s. Or choose in the config what such statements do from now on: replication.on_partition_maintenance: recopy (copy the table again, then go on) or keep (ClickHouse keeps the rows, as an archive)",
			st.At, ef.Table, truncate(st.Text, 300), Recopy)
	}
	table := ef.Table.String()
	if ef.Table == (schema.TableName{}) {
		table = "a table binlog2ch could not tell (it cannot parse the statement)"
	}
	if ef.Why != "" {
		return fmt.Errorf("binlog %s: %s: rows changed without row events: %s (statement %q). ClickHouse still holds the rows MySQL no longer has. To make it equal again, %s. Or set replication.on_statement_dml: recopy, which copies such a table again by itself and goes on",
			st.At, table, ef.Why, truncate(st.Text, 300), Recopy)
	}
	return fmt.Errorf("binlog %s: %s: rows changed by a statement the binlog holds as SQL text, not as row events: the session that ran it had binlog_format STATEMENT or MIXED (statement %q). binlog2ch replicates row events only and will not guess the rows. Set binlog_format = ROW globally and make sure no session sets it otherwise (SET SESSION binlog_format), then %s. Or set replication.on_statement_dml: recopy, which copies such a table again by itself and goes on",
		st.At, table, truncate(st.Text, 300), Recopy)
}

// recopy copies a table again online after a statement changed its rows
// without row events (replication.on_... recopy), with the tables its rows
// cascade to: their cascades through it cannot be derived from a copy of
// it (package cascade). The stream goes on; the copy, taken at a position
// after the statement, is swapped in complete.
func (s *Router) recopy(ctx context.Context, ef ddl.Effect, st source.Statement) error {
	r := s
	reason := state.ReasonStatementDML
	if ef.Kind == ddl.PartitionRows {
		reason = state.ReasonPartition
	}
	tables := append([]schema.TableName{ef.Table}, s.cascades.Descendants(ef.Table)...)
	r.log.Warn("a statement changed the table's rows without row events; copying it again online (replication.on_... recopy): ClickHouse holds the rows of before until the copy is swapped in",
		"table", ef.Table.String(), "statement", truncate(st.Text, 300), "binlog", st.At.String(), "with_cascade_children", len(tables)-1)
	r.m.StatementsWithoutRows.WithLabelValues(config.OnRecopy).Inc()
	for _, t := range tables {
		if err := s.requestCopy(ctx, t, reason); err != nil {
			return err
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
