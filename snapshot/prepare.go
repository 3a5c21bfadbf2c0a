package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/retry"
	"github.com/binlog2ch/binlog2ch/schema"
)

// discover reads every table's definition and row estimate from MySQL,
// and what ClickHouse holds in the target databases: a few statements for
// all the tables, not a few per table.
func (c *copier) discover(ctx context.Context) error {
	start := time.Now()
	names := make([]schema.TableName, len(c.tables))
	dbs := map[string]bool{}
	var targetDBs []string
	for i, t := range c.tables {
		names[i] = schema.TableName{Database: t.name.Database, Table: t.name.Table}
		if db := c.Config.ClickHouseDatabase(t.name.Database); !dbs[db] {
			dbs[db] = true
			targetDBs = append(targetDBs, db)
		}
	}
	c.Log.Info("reading the definitions of the tables to copy", "tables", len(c.tables))
	var defs map[schema.TableName]schema.Loaded
	err := c.retryMySQL(ctx, c.Log, "read the tables' definitions", func() error {
		var err error
		defs, err = schema.LoadTables(ctx, c.MySQL, names)
		return err
	})
	if err != nil {
		return err
	}
	list := make([]schema.TableName, len(c.tables))
	for i, t := range c.tables {
		list[i] = t.name
	}
	est, err := catalog.EstimateRows(ctx, c.MySQL, list)
	if err != nil {
		// Only the progress display needs them.
		c.Log.Warn("cannot read MySQL's row estimates; progress shows rows copied only", "error", err)
	}
	for i, t := range c.tables {
		t.def = defs[names[i]]
		t.mu.Lock()
		t.status.Estimate = est[t.name]
		t.mu.Unlock()
	}
	if c.existing, err = c.Sink.ReadExisting(ctx, c.Log, targetDBs); err != nil {
		return fmt.Errorf("read the tables in ClickHouse databases %s: %w", strings.Join(targetDBs, ", "), err)
	}
	c.Log.Info("definitions read", "tables", len(c.tables), "seconds", time.Since(start).Seconds())
	return nil
}

// retryMySQL runs a MySQL statement, retrying what retrying can fix, and
// logs each failure it retries to log; it returns op's last error.
func (c *copier) retryMySQL(ctx context.Context, log *slog.Logger, what string, op func() error) error {
	p := retry.Policy{First: 100 * time.Millisecond, Max: c.MaxBackoff, Transient: mysqlTransient, Log: log, What: what}
	return retry.Do(ctx, p, func(context.Context) error { return op() }).Err
}

// prepareTable prepares t for its copy and reports whether it is to be
// copied; otherwise its state says why not (done before, gone, failed,
// interrupted).
func (c *copier) prepareTable(ctx context.Context, t *tableCopy) bool {
	if ctx.Err() != nil {
		t.setState(StateInterrupted, nil)
		return false
	}
	complete, err := c.prepare(ctx, t)
	switch {
	case err != nil && c.RunMode && errors.Is(err, errTableGone):
		t.log.Info("table no longer exists: dropped or renamed since the copy began; the binlog replays its DROP or RENAME (a table renamed to a replicated name is copied online then)", "error", err)
		c.markComplete(t)
		t.setState(StateDone, nil)
	case err != nil && ctx.Err() != nil:
		t.setState(StateInterrupted, nil)
	case err != nil:
		t.log.Error("cannot copy the table", "error", err)
		t.setState(StateFailed, err)
	case complete:
		t.log.Info("table copied by an earlier run")
		t.setState(StateDone, nil)
	default:
		t.mu.Lock()
		t.status.Prepared = true
		t.mu.Unlock()
		return true
	}
	return false
}

// record notes the prepared tables' targets in the registry; a table
// whose record fails fails.
func (c *copier) record(batch []*tableCopy) {
	targets := make([]*schema.Target, len(batch))
	replace := make([]bool, len(batch))
	for i, t := range batch {
		targets[i], replace[i] = t.target, t.dropped
	}
	if err := c.Sink.RecordTables(targets, replace); err != nil {
		for _, t := range batch {
			t.log.Error("cannot copy the table", "error", err)
			t.setState(StateFailed, err)
		}
	}
}

// errTableGone is a table that no longer exists in MySQL.
var errTableGone = errors.New("table does not exist")

// prepare maps the table's definition (read by discover), checks or
// recreates its target and plans its reading; complete is true for a
// table an earlier run copied.
func (c *copier) prepare(ctx context.Context, t *tableCopy) (complete bool, err error) {
	src, err := t.def.Table, t.def.Err
	if err == nil && src == nil {
		err = fmt.Errorf("table %s %w", t.name, schema.ErrNoTable)
	}
	if errors.Is(err, schema.ErrNoTable) {
		return false, fmt.Errorf("%w: %w", errTableGone, err)
	}
	if err != nil {
		return false, err
	}
	target, err := schema.Map(src, c.Config.ClickHouseDatabase(t.name.Database), c.Sink.Caps(), c.Config.SchemaOptions(), c.Config.TableOptions(t.name.Database, t.name.Table))
	if err != nil {
		return false, err
	}
	if c.Shadow {
		if c.Config.ClickHouse.Cluster != "" {
			return false, fmt.Errorf("copying %s online into a shadow table is not built for a ClickHouse cluster yet: stop binlog2ch and copy it with `binlog2ch fullsync -recreate -tables %s`", t.name, t.name)
		}
		target.Name = ShadowName(target.Name)
	}
	t.source, t.target = src, target

	var key []int
	if target.Mode == schema.ModeReplacing {
		key = src.PrimaryKey
		if len(key) == 0 {
			key = src.UniqueKey
		}
		for _, i := range key {
			if !keyable(src.Columns[i].Kind) {
				t.log.Warn("the key has a column ranges cannot be taken on; copying the table in one scan (not resumable mid-table)", "column", src.Columns[i].Name, "type", src.Columns[i].Type)
				key = nil
				break
			}
		}
	}
	if c.RunMode && target.Mode == schema.ModeChangelog {
		t.log.Warn("changelog table (no primary or NOT NULL unique key, or mode: changelog): rows changed between the recorded binlog position and the end of its copy appear twice in its changelog, as copied rows and as binlog events")
	}
	if key == nil {
		t.log.Info("no usable key: copying the table in one scan (not resumable mid-table: an interrupted scan starts over)")
	}
	var keyNames []string
	for _, i := range key {
		keyNames = append(keyNames, src.Columns[i].Name)
	}

	c.stateMu.Lock()
	prog := c.State.Tables[t.name.String()]
	keyChanged := prog != nil && !slices.Equal(prog.Key, keyNames)
	if prog == nil || keyChanged || (c.Recreate && !prog.Recreated) {
		if keyChanged && (prog.Rows > 0 || prog.ScanStarted) {
			t.log.Warn("the table's key changed since the interrupted copy; copying it from the start")
		}
		prog = &TableProgress{Key: keyNames}
		c.State.Tables[t.name.String()] = prog
		c.dirty = true
	}
	// -recreate drops a table once per copy: resuming an interrupted
	// -recreate copy keeps what it already copied into the new table.
	drop := c.Recreate && !prog.Recreated
	t.prog = prog
	resumed := prog.Rows > 0 || prog.ScanStarted
	complete = prog.Complete
	c.stateMu.Unlock()
	t.mu.Lock()
	t.status.Resumed, t.status.Scan = resumed, key == nil
	t.mu.Unlock()
	if complete {
		return true, nil
	}

	if drop {
		stmts := []string{target.Ref().DropSQL()}
		if target.ReadName() != target.Name {
			stmts = append([]string{target.ReadRef().DropSQL()}, stmts...)
		}
		for _, stmt := range stmts {
			t.log.Info("-recreate: dropping the target", "statement", stmt)
			if err := c.Sink.Retry(ctx, t.log, metrics.StageDDL, "DDL", func(ctx context.Context) error { return c.Sink.Conn().Exec(ctx, stmt) }); err != nil {
				return false, fmt.Errorf("%s: %w", stmt, err)
			}
		}
		// Saved with the next tick's save: every save that records rows
		// of the new table records this too, and a run resumed from an
		// earlier save drops the table again, which then holds nothing
		// the state counts.
		c.stateMu.Lock()
		prog.Recreated = true
		c.dirty = true
		c.stateMu.Unlock()
		t.dropped = true
	}
	if err := c.Sink.PrepareTable(ctx, t.log, target, c.existing, drop); err != nil {
		return false, err
	}
	if !c.Shadow {
		// A shadow's view is the live table's: the name stays.
		if err := c.Sink.EnsureView(ctx, t.log, target.Database, target.Name); err != nil {
			return false, err
		}
	}
	if key == nil && prog.ScanStarted && target.Mode == schema.ModeChangelog {
		// A changelog keeps every row: remove what the interrupted scan
		// wrote (it carries this copy's version) before scanning again.
		if err := c.deleteSnapshotRows(ctx, t); err != nil {
			return false, err
		}
	}
	skip := func(i int) bool { return target.SourceToTarget[i] < 0 }
	reader, err := newTableReader(src, key, skip)
	if err != nil {
		return false, err
	}
	t.mu.Lock() // confirm reads it from another goroutine
	t.reader = reader
	t.mu.Unlock()
	return false, nil
}

// deleteSnapshotRows deletes the rows an interrupted copy of a changelog
// table wrote, and waits until ClickHouse has.
func (c *copier) deleteSnapshotRows(ctx context.Context, t *tableCopy) error {
	stmt := t.target.DeleteCopyRowsSQL(c.version)
	t.log.Info("removing the rows of the interrupted copy before copying again", "statement", stmt)
	if err := c.Sink.Retry(ctx, t.log, metrics.StageDDL, "DDL", func(ctx context.Context) error { return c.Sink.Conn().Exec(ctx, stmt) }); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	for {
		var n uint64
		err := c.Sink.Conn().QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0",
			t.target.Database, t.target.Name).Scan(&n)
		if err != nil {
			return fmt.Errorf("%s: wait for the delete: %w", t.target.FullName(), err)
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
