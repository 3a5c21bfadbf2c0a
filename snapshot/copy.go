// Package snapshot copies MySQL tables into ClickHouse: chunked by key,
// read by parallel readers, written by the same sink writers the binlog
// uses, and resumable from a state file that records only ranges
// ClickHouse confirmed. It never reads the binlog or moves the checkpoint:
// its caller records the position before the copy and follows the binlog
// from there.
package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
)

// Table copies (`binlog2ch fullsync` and the initial snapshot of `run`).
//
// Before any table is read the binlog position P is recorded. Every copied
// row gets source.RowVersion(P's F, P.pos, source.MaxVersionRow): at or above every event
// that ended at or before P, below every event after P. A row changed while
// it is being copied is therefore overwritten by the binlog's row once the
// binlog is replayed from P, whatever the copy read; no read lock is needed.
//
// A table with a usable key (primary key, else a NOT NULL unique key) is
// read in key ranges of fullsync.chunk_rows rows: a planner walks the key
// (only the key columns, WHERE key > last ORDER BY key LIMIT n) and hands
// ranges to fullsync.workers readers, which stream each range's rows into
// the table's writer, the same batching writer CDC uses. A range is
// recorded in the state file once the writer has confirmed every row of it
// in ClickHouse; a restart reads only the ranges not recorded.

// Options are what a copy works with and how.
type Options struct {
	Config *config.Config
	Log    *slog.Logger
	MySQL  *sql.DB // for table definitions and row estimates
	Sink   *sink.ClickHouse
	// Metrics gets each table's rows copied and estimated.
	Metrics *metrics.Metrics
	// State is the copy's progress, saved as StateFile in
	// Config.StateDir; its Position is where the binlog was before any
	// table was read.
	State     *State
	StateFile string
	// Recreate drops each target once per copy and copies it from the
	// start.
	Recreate bool
	// RunMode: the initial snapshot of `run`. A table dropped since the
	// listing is skipped (the binlog replay drops it too).
	RunMode bool
	// Progress, when set, is called about four times a second with every
	// table's status, and once more at the end.
	Progress func([]TableStatus)
	// CheckIn, when set, is called with Progress: the daemon is alive.
	CheckIn func()
	// ShutdownTimeout bounds the flush of what was read, once ctx ends.
	ShutdownTimeout time.Duration
	// MaxBackoff caps the retry backoff of MySQL reads.
	MaxBackoff time.Duration
	// BeforeChunk, a pause point for tests (nil otherwise), runs before a
	// reader reads a chunk of table; it may block.
	BeforeChunk func(ctx context.Context, table source.TableName)
}

// Copy copies tables and returns their statuses; the error joins every
// table's. A table that fails does not stop the others. Interrupted by
// ctx, it returns with what ClickHouse confirmed recorded in the state:
// the next Copy with that state resumes. The caller marks the state
// Complete once Copy returned no error.
func Copy(ctx context.Context, opts Options, tables []source.TableName) ([]TableStatus, error) {
	c := &copier{Options: opts}
	return c.run(ctx, tables)
}

// copier copies a set of tables into ClickHouse.
type copier struct {
	Options
	pool    *readPool // the readers' and key walks' connections
	tables  []*tableCopy
	version uint64 // every copied row's, from the recorded position

	stateMu sync.Mutex // State and its file
}

// tableCopy is one table's copy.
type tableCopy struct {
	name     source.TableName
	log      *slog.Logger
	source   *schema.Table
	target   *schema.Target
	reader   *tableReader
	w        *sink.Writer
	prog     *TableProgress // in the state; under copier.stateMu
	ctx      context.Context
	cancel   context.CancelCauseFunc
	jobs     sync.WaitGroup
	sendMu   sync.Mutex // orders seq with the writer's queue
	seq      uint64
	mu       sync.Mutex // below
	pending  []chunkDone
	done     []orderedRange
	status   TableStatus
	rowsRead atomic.Uint64
	chunks   atomic.Uint64
}

// orderedRange is a key range with its place in key order: segment in the
// plan, then chunk within the segment.
type orderedRange struct {
	seg, chunk int
	r          keyRange
}

// chunkDone is a range read and handed to the writer, waiting for the
// writer to confirm its last message.
type chunkDone struct {
	orderedRange
	lastSeq uint64
	rows    uint64
}

// chunkJob is a range for a reader.
type chunkJob struct {
	t *tableCopy
	orderedRange
	scan bool
}

// run copies tables and returns their statuses; the error joins every
// table's.
func (c *copier) run(ctx context.Context, tables []source.TableName) ([]TableStatus, error) {
	idx, err := source.FileIndex(c.State.Position.File)
	if err != nil {
		return nil, err
	}
	f, ok := source.VersionFile(idx, c.State.FileOffset)
	if !ok {
		return nil, fmt.Errorf("copy position %s with version offset %d is outside the 20 bits row versions hold", c.State.Position, c.State.FileOffset)
	}
	c.version = source.RowVersion(f, c.State.Position.Pos, source.MaxVersionRow)
	if err := c.save(); err != nil {
		return nil, err
	}
	workers := c.Config.FullSync.Workers
	if c.pool, err = newReadPool(ctx, c.Config, workers); err != nil {
		return nil, err
	}
	defer c.pool.close()
	for _, name := range tables {
		t := &tableCopy{name: name, log: c.Log.With("table", name.String())}
		t.status = TableStatus{Name: name, State: StateWaiting}
		c.tables = append(c.tables, t)
	}

	jobs := make(chan chunkJob)
	var readers sync.WaitGroup
	for i := 0; i < workers; i++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for j := range jobs {
				c.readJob(j)
			}
		}()
	}
	// Up to `workers` tables at once: each has a writer with its blocks.
	sem := make(chan struct{}, workers)
	var all sync.WaitGroup
	for _, t := range c.tables {
		all.Add(1)
		go func() {
			defer all.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				t.setState(StateInterrupted, nil)
				return
			}
			defer func() { <-sem }()
			c.copyTable(ctx, t, jobs)
		}()
	}
	finished := make(chan struct{})
	go func() { all.Wait(); close(finished) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-finished:
			running = false
		case <-tick.C:
		}
		c.checkIn() // the daemon is alive while it copies
		if err := c.confirmAll(); err != nil {
			c.Log.Error("saving fullsync progress failed", "error", err)
		}
		statuses := c.statuses()
		for _, st := range statuses {
			c.Metrics.SnapshotCopied.WithLabelValues(st.Name.Database, st.Name.Table).Set(float64(st.Confirmed))
			c.Metrics.SnapshotEstimated.WithLabelValues(st.Name.Database, st.Name.Table).Set(float64(max(st.Estimate, st.Confirmed)))
		}
		if c.Progress != nil {
			c.Progress(statuses)
		}
	}
	close(jobs)
	readers.Wait()

	statuses := c.statuses()
	var errs []error
	for _, s := range statuses {
		switch s.State {
		case StateFailed:
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, s.Err))
		case StateInterrupted, StateWaiting:
			errs = append(errs, fmt.Errorf("%s: interrupted; its progress is saved, run again to resume", s.Name))
		}
	}
	if ctx.Err() != nil && len(errs) == 0 {
		errs = append(errs, ctx.Err())
	}
	return statuses, errors.Join(errs...)
}

func (c *copier) checkIn() {
	if c.CheckIn != nil {
		c.CheckIn()
	}
}

func (c *copier) save() error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return Save(c.Config.StateDir, c.StateFile, c.State)
}

func (c *copier) statuses() []TableStatus {
	out := make([]TableStatus, len(c.tables))
	for i, t := range c.tables {
		t.mu.Lock()
		out[i] = t.status
		t.mu.Unlock()
		out[i].Rows = t.rowsRead.Load()
		out[i].Chunks = t.chunks.Load()
		c.stateMu.Lock()
		if t.prog != nil {
			out[i].Confirmed = t.prog.Rows
		}
		c.stateMu.Unlock()
	}
	return out
}

func (t *tableCopy) setState(state string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status.State = state
	if err != nil {
		t.status.Err = err
	}
	if state == StateCopying {
		t.status.Start = time.Now()
	} else if state != StateWaiting {
		t.status.End = time.Now()
	}
}

// copyTable copies one table: prepares the target, plans the ranges and
// hands them to the readers, then flushes the writer.
func (c *copier) copyTable(ctx context.Context, t *tableCopy, jobs chan<- chunkJob) {
	t.setState(StateCopying, nil)
	complete, err := c.prepare(ctx, t)
	if err != nil {
		if c.RunMode && errors.Is(err, errTableGone) {
			t.log.Warn("table no longer exists: dropped or renamed since the snapshot began. A drop is replayed from the binlog; the rows of a table renamed into the replicated set are not copied: copy it with binlog2ch fullsync", "error", err)
			c.markComplete(t)
			t.setState(StateDone, nil)
			return
		}
		t.log.Error("cannot copy the table", "error", err)
		t.setState(StateFailed, err)
		return
	}
	if complete {
		t.log.Info("table copied by an earlier run")
		t.setState(StateDone, nil)
		return
	}
	// The writer outlives a shutdown of the readers, so what was read gets
	// flushed and confirmed.
	wctx, wcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer wcancel(nil)
	t.ctx, t.cancel = context.WithCancelCause(ctx)
	defer t.cancel(nil)
	werr := make(chan error, 1)
	go func() {
		err := t.w.Run(wctx)
		if err != nil {
			t.cancel(err)
		}
		werr <- err
	}()

	c.plan(t, jobs)
	t.jobs.Wait()
	t.sendMu.Lock()
	close(t.w.In())
	t.sendMu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		// Interrupted: give the writer a bounded time to flush.
		time.AfterFunc(c.ShutdownTimeout, func() { wcancel(errors.New("flushing took too long")) })
	})
	err = <-werr
	stop()
	if cerr := c.confirm(t); cerr != nil && err == nil {
		err = cerr
	}
	cause := context.Cause(t.ctx)
	switch {
	case err != nil:
		t.log.Error("copy failed", "error", err)
		t.setState(StateFailed, err)
	case cause != nil && !errors.Is(cause, context.Canceled):
		t.log.Error("copy failed", "error", cause)
		t.setState(StateFailed, cause)
	case ctx.Err() != nil:
		t.setState(StateInterrupted, nil)
	default:
		if err := c.markComplete(t); err != nil {
			t.setState(StateFailed, err)
			return
		}
		t.setState(StateDone, nil)
		s := c.statuses()
		for _, x := range s {
			if x.Name == t.name {
				t.log.Info("table copied", "rows", x.Rows, "chunks", x.Chunks, "seconds", x.End.Sub(x.Start).Seconds())
			}
		}
	}
}

// errTableGone is a table that no longer exists in MySQL.
var errTableGone = errors.New("table does not exist")

// prepare loads the table's definition, checks or recreates its target and
// starts its writer; complete is true for a table an earlier run copied.
func (c *copier) prepare(ctx context.Context, t *tableCopy) (complete bool, err error) {
	src, err := schema.LoadTable(ctx, c.MySQL, t.name.Database, t.name.Table)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return false, fmt.Errorf("%w: %v", errTableGone, err)
		}
		return false, err
	}
	target, err := schema.Map(src, c.Config.ClickHouseDatabase(t.name.Database), c.Sink.Caps(), c.Config.SchemaOptions(), c.Config.TableOptions(t.name.Database, t.name.Table))
	if err != nil {
		return false, err
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
		c.stateMu.Lock()
		prog.Recreated = true
		c.stateMu.Unlock()
		if err := c.save(); err != nil {
			return false, err
		}
	} else if err := c.Sink.CheckTable(ctx, c.Log, target); err != nil {
		return false, err
	}
	if err := c.Sink.EnsureTable(ctx, t.log, target, nil, nil, ""); err != nil {
		return false, err
	}
	if err := c.Sink.RecordTable(target, drop); err != nil {
		return false, err
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
	var est sql.NullInt64
	_ = c.MySQL.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		t.name.Database, t.name.Table).Scan(&est)
	t.mu.Lock()
	t.status.Estimate = uint64(max(est.Int64, 0))
	t.mu.Unlock()

	w := c.Sink.NewWriter(t.name, 4) // a few batches: the readers are never far ahead
	t.mu.Lock()                      // confirm reads them from another goroutine
	t.reader, t.w = reader, w
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
