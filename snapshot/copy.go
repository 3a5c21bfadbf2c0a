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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
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
	// Save, when set, saves the progress instead of StateFile (an online
	// copy's progress goes with the daemon's checkpoint). It is called
	// with the state locked: it must not keep st.
	Save func(st *State) error
	// Shadow copies each table into its shadow table (ShadowName) instead
	// of its own, for its caller to swap in; with Recreate, the shadow is
	// dropped once per copy, never the table itself.
	Shadow bool
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
	BeforeChunk func(ctx context.Context, table schema.TableName)
}

// Copy copies tables and returns their statuses; the error joins every
// table's. A table that fails does not stop the others. Interrupted by
// ctx, it returns with what ClickHouse confirmed recorded in the state:
// the next Copy with that state resumes. The caller marks the state
// Complete once Copy returned no error.
func Copy(ctx context.Context, opts Options, tables []schema.TableName) ([]TableStatus, error) {
	c := &copier{Options: opts}
	return c.run(ctx, tables)
}

// copier copies a set of tables into ClickHouse.
type copier struct {
	Options
	pool     *readPool // the readers' and key walks' connections
	tables   []*tableCopy
	version  uint64             // every copied row's, from the recorded position
	existing *chtables.Existing // the ClickHouse tables there were

	discoverErr error // every table failed for it (set before the tables' states)

	stateMu sync.Mutex // State, dirty and the state file
	dirty   bool       // State has changes the file lacks
}

// prepareWorkers is how many tables are prepared at once (their targets
// checked or created in ClickHouse), apart from the fullsync.workers
// tables being copied: a small table's copy does not wait for the DDL of
// every table before it, nor the DDL for a copy. On ClickHouse 18.16 here
// a CREATE TABLE takes about 2.5 ms (300 in 0.7-0.8 s, barely less with
// 4 or 8 at once on two cores), a small table's copy about 10 ms of
// ClickHouse's time for its insert: one preparer keeps ahead of the
// copies; the second is for slower DDL (ON CLUSTER, a busy server).
const prepareWorkers = 2

// tableCopy is one table's copy.
type tableCopy struct {
	name     schema.TableName
	log      *slog.Logger
	def      schema.Loaded // the definition discovery read
	source   *schema.Table
	target   *schema.Target
	reader   *tableReader
	dropped  bool // -recreate dropped the target in this run
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
func (c *copier) run(ctx context.Context, tables []schema.TableName) ([]TableStatus, error) {
	var err error
	if c.version, _, err = c.State.Version(); err != nil {
		return nil, err
	}
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
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		c.pipeline(ctx, jobs, workers)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var saveErr error
	for running := true; running; {
		select {
		case <-finished:
			running = false
		case <-tick.C:
		}
		c.checkIn() // the daemon is alive while it copies
		// One save a tick, whatever number of tables moved on: each save
		// writes every table's progress.
		c.confirmAll()
		if saveErr = c.saveIfDirty(); saveErr != nil {
			c.Log.Error("saving fullsync progress failed", "error", saveErr)
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
	var interrupted []string
	for _, s := range statuses {
		switch {
		case s.State == StateFailed && c.discoverErr != nil && s.Err == c.discoverErr:
			// Said once below.
		case s.State == StateFailed:
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, s.Err))
		case s.State == StateInterrupted || s.State == StateWaiting:
			interrupted = append(interrupted, s.Name.String())
		}
	}
	if c.discoverErr != nil {
		errs = append(errs, c.discoverErr)
	}
	switch n := len(interrupted); {
	case n == 1:
		errs = append(errs, fmt.Errorf("%s: interrupted; its progress is saved, run again to resume", interrupted[0]))
	case n > 1:
		if n > 5 {
			interrupted = append(interrupted[:5], "...")
		}
		errs = append(errs, fmt.Errorf("%d tables interrupted (%s); their progress is saved, run again to resume", n, strings.Join(interrupted, ", ")))
	}
	if saveErr != nil {
		errs = append(errs, fmt.Errorf("save the copy's progress: %w", saveErr))
	}
	if ctx.Err() != nil && len(errs) == 0 {
		errs = append(errs, ctx.Err())
	}
	return statuses, errors.Join(errs...)
}

// pipeline reads every table's definition, prepares the tables
// (prepareWorkers at a time, in list order) and copies them as they are
// ready (workers at a time), each worker taking the next table: no
// goroutine waits per table.
func (c *copier) pipeline(ctx context.Context, jobs chan<- chunkJob, workers int) {
	if err := c.discover(ctx); err != nil {
		err = fmt.Errorf("read the definitions of the %d tables to copy: %w", len(c.tables), err)
		c.discoverErr = err
		for _, t := range c.tables {
			if ctx.Err() != nil {
				t.setState(StateInterrupted, nil)
			} else {
				t.setState(StateFailed, err)
			}
		}
		if ctx.Err() == nil {
			c.Log.Error("cannot read the tables' definitions", "error", err)
		}
		return
	}
	made := make(chan *tableCopy, len(c.tables))
	var next atomic.Int64
	var preparers sync.WaitGroup
	for i := 0; i < prepareWorkers; i++ {
		preparers.Add(1)
		go func() {
			defer preparers.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(c.tables) {
					return
				}
				if t := c.tables[i]; c.prepareTable(ctx, t) {
					made <- t
				}
			}
		}()
	}
	go func() {
		preparers.Wait()
		close(made)
	}()
	// The tables prepared meanwhile are recorded in the registry together
	// (one save of it), before any of them is copied.
	ready := make(chan *tableCopy, len(c.tables))
	go func() {
		defer close(ready)
		for t := range made {
			batch := []*tableCopy{t}
			for more := true; more; {
				select {
				case t, ok := <-made:
					if ok {
						batch = append(batch, t)
					} else {
						more = false
					}
				default:
					more = false
				}
			}
			c.record(batch)
			for _, t := range batch {
				ready <- t
			}
		}
	}()
	var copiers sync.WaitGroup
	for i := 0; i < workers; i++ {
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			for t := range ready {
				if t.state() == StateFailed {
					continue // its record failed
				}
				if ctx.Err() != nil {
					t.setState(StateInterrupted, nil)
					continue
				}
				c.copyTable(ctx, t, jobs)
			}
		}()
	}
	copiers.Wait()
}

func (c *copier) checkIn() {
	if c.CheckIn != nil {
		c.CheckIn()
	}
}

// save writes the state file now.
func (c *copier) save() error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.saveLocked()
}

// saveIfDirty writes the state file if the state changed since it was
// last written.
func (c *copier) saveIfDirty() error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if !c.dirty {
		return nil
	}
	return c.saveLocked()
}

func (c *copier) saveLocked() error {
	save := func(st *State) error { return Save(c.Config.StateDir, c.StateFile, st) }
	if c.Options.Save != nil {
		save = c.Options.Save
	}
	if err := save(c.State); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

func (c *copier) statuses() []TableStatus {
	out := make([]TableStatus, len(c.tables))
	for i, t := range c.tables {
		out[i] = c.status(t)
	}
	return out
}

// status is one table's status.
func (c *copier) status(t *tableCopy) TableStatus {
	t.mu.Lock()
	s := t.status
	t.mu.Unlock()
	s.Rows = t.rowsRead.Load()
	s.Chunks = t.chunks.Load()
	c.stateMu.Lock()
	if t.prog != nil {
		s.Confirmed = t.prog.Rows
	}
	c.stateMu.Unlock()
	return s
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

func (t *tableCopy) state() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status.State
}

// copyTable copies one prepared table: starts its writer, plans the
// ranges and hands them to the readers, then flushes the writer.
func (c *copier) copyTable(ctx context.Context, t *tableCopy, jobs chan<- chunkJob) {
	t.setState(StateCopying, nil)
	w, err := c.Sink.NewCopyWriter(ctx, t.name, 4, t.source, t.target) // a few batches: the readers are never far ahead
	if err != nil {
		if ctx.Err() != nil {
			t.setState(StateInterrupted, nil)
			return
		}
		t.log.Error("cannot copy the table", "error", err)
		t.setState(StateFailed, err)
		return
	}
	t.mu.Lock() // confirm reads it from another goroutine
	t.w = w
	t.mu.Unlock()
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
	c.confirm(t)
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
		s := c.status(t)
		t.log.Info("table copied", "rows", s.Rows, "chunks", s.Chunks, "seconds", s.End.Sub(s.Start).Seconds())
	}
}
