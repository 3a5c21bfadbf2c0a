package replicator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Table copies (`binlog2ch fullsync` and the initial snapshot of `run`).
//
// Before any table is read the binlog position P is recorded. Every copied
// row gets version(P.file, P.pos, maxVersionRow): at or above every event
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

// snapshotBatchRows is how many rows a reader hands the writer at once.
const snapshotBatchRows = 1024

// FullSyncOptions are the choices of one `binlog2ch fullsync`.
type FullSyncOptions struct {
	// Tables to copy; nil copies every table the config selects.
	Tables []source.TableName
	// Recreate drops each target table and copies it from the start. An
	// interrupted -recreate copy run again with Recreate resumes: tables
	// it recreated are not dropped again.
	Recreate bool
	// Progress, when set, is called about four times a second with every
	// table's status, and once more at the end.
	Progress func([]TableStatus)
	// SetCheckpoint, after a complete copy, saves run's checkpoint at the
	// copy's binlog position (and drops an unfinished initial snapshot's
	// state), so run follows the binlog from there: the way back after the
	// binlog at run's checkpoint was purged. It needs Recreate and every
	// table, since events before the position are skipped: only a full
	// copy into emptied tables holds their effects (rows deleted meanwhile
	// included). run must be stopped meanwhile.
	SetCheckpoint bool
}

// TableStatus is one table's copy, for progress displays and summaries.
type TableStatus struct {
	Name      source.TableName
	State     string // waiting, copying, done, failed, interrupted
	Rows      uint64 // rows read by this run
	Confirmed uint64 // rows in ClickHouse, this run and interrupted ones before it
	Estimate  uint64 // MySQL's estimate of the table's rows (information_schema)
	Chunks    uint64 // key ranges read by this run
	Resumed   bool   // an earlier run had copied part of it
	Scan      bool   // copied by one scan (no usable key)
	Start     time.Time
	End       time.Time
	Err       error
}

// Table copy states.
const (
	stateWaiting     = "waiting"
	stateCopying     = "copying"
	stateDone        = "done"
	stateFailed      = "failed"
	stateInterrupted = "interrupted"
)

// copier copies a set of tables into ClickHouse.
type copier struct {
	r         *Replicator
	log       *slog.Logger
	db        *sql.DB // the readers' pool (binary protocol)
	st        *copyState
	stateFile string
	tables    []*tableCopy
	file, pos uint32 // the recorded position, for versions
	recreate  bool
	// runMode: the initial snapshot of `run`. A table dropped since the
	// listing is skipped (the binlog replay drops it too).
	runMode  bool
	progress func([]TableStatus)

	stateMu sync.Mutex // st and its file
}

// tableCopy is one table's copy.
type tableCopy struct {
	name     source.TableName
	log      *slog.Logger
	source   *schema.Table
	target   *schema.Target
	reader   *tableReader
	w        *writer
	prog     *tableProgress // in the state; under copier.stateMu
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

// FullSync copies tables once (`binlog2ch fullsync`), resuming an
// interrupted run recorded in state_dir. A table that fails does not stop
// the others; the error names every failed table.
func (r *Replicator) FullSync(ctx context.Context, opts FullSyncOptions) ([]TableStatus, error) {
	if opts.SetCheckpoint && (!opts.Recreate || opts.Tables != nil) {
		return nil, errors.New("setting run's checkpoint needs a -recreate copy of every configured table (no -tables): events before the copy's position are skipped")
	}
	if opts.SetCheckpoint && r.cfg.State.Lease == config.LeaseZooKeeper {
		// Moving a shared checkpoint under a running daemon would be lost
		// or undone: hold the lease for the whole copy.
		l, err := state.Acquire(ctx, r.cfg, r.log)
		if err != nil {
			return nil, err
		}
		r.lease = l
		defer l.Release()
	}
	st, err := loadCopyState(r.cfg.StateDir, fullSyncStateFile)
	if err != nil {
		return nil, err
	}
	switch {
	case st != nil && st.Server != r.server:
		r.log.Warn("the interrupted fullsync in state_dir was of another MySQL server; starting over", "its_server", st.Server, "server", r.server)
		st = nil
	case st != nil && st.Complete:
		st = nil // the last copy finished: this is a new one
	case st != nil && opts.Recreate && !st.Recreate:
		r.log.Info("-recreate: discarding the interrupted fullsync's progress (it was not a -recreate copy)", "started", st.Started)
		st = nil
	case st != nil:
		r.log.Info("resuming the interrupted fullsync", "started", st.Started, "position", st.Position.String())
	}
	if st == nil {
		pos, err := r.currentPosition(ctx)
		if err != nil {
			return nil, err
		}
		st = &copyState{Server: r.server, Position: pos, Started: time.Now().UTC(), Tables: map[string]*tableProgress{}, Recreate: opts.Recreate}
		r.log.Info("fullsync: binlog position recorded before reading any table", "position", pos.String())
	}
	tables := opts.Tables
	if tables == nil {
		if tables, err = source.ListTables(ctx, r.my, r.cfg); err != nil {
			return nil, err
		}
	}
	c := &copier{r: r, log: r.log, st: st, stateFile: fullSyncStateFile, recreate: opts.Recreate, progress: opts.Progress}
	statuses, err := c.run(ctx, tables)
	if err == nil {
		c.stateMu.Lock()
		c.st.Complete = true
		err = saveCopyState(r.cfg.StateDir, c.stateFile, c.st)
		c.stateMu.Unlock()
	}
	if err == nil && opts.SetCheckpoint {
		err = r.resetCheckpoint(st.Position)
	}
	return statuses, err
}

// resetCheckpoint moves run's checkpoint to a complete copy's position.
func (r *Replicator) resetCheckpoint(p source.Position) error {
	if err := os.Remove(filepath.Join(r.cfg.StateDir, snapshotStateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the initial snapshot's state: %w", err)
	}
	if err := r.checkpoints().Save(context.Background(), state.Checkpoint{Position: p, Server: r.server, SavedAt: time.Now().UTC()}); err != nil {
		return err
	}
	r.log.Warn("run's checkpoint set to the copy's position: run follows the binlog from there", "position", p.String())
	return nil
}

// run copies tables and returns their statuses; the error joins every
// table's.
func (c *copier) run(ctx context.Context, tables []source.TableName) ([]TableStatus, error) {
	var err error
	if c.file, err = source.FileIndex(c.st.Position.File); err != nil {
		return nil, err
	}
	c.pos = c.st.Position.Pos
	if err := c.save(); err != nil {
		return nil, err
	}
	workers := c.r.cfg.FullSync.Workers
	if c.db, err = openSnapshotDB(ctx, c.r.cfg, c.log, workers+2); err != nil {
		return nil, err
	}
	defer c.db.Close()
	for _, name := range tables {
		t := &tableCopy{name: name, log: c.log.With("table", name.String())}
		t.status = TableStatus{Name: name, State: stateWaiting}
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
				t.setState(stateInterrupted, nil)
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
		c.r.checkIn() // the daemon is alive while it copies
		if err := c.confirmAll(); err != nil {
			c.log.Error("saving fullsync progress failed", "error", err)
		}
		statuses := c.statuses()
		for _, st := range statuses {
			c.r.m.snapCopied.WithLabelValues(st.Name.Database, st.Name.Table).Set(float64(st.Confirmed))
			c.r.m.snapEstimated.WithLabelValues(st.Name.Database, st.Name.Table).Set(float64(max(st.Estimate, st.Confirmed)))
		}
		if c.progress != nil {
			c.progress(statuses)
		}
	}
	close(jobs)
	readers.Wait()

	statuses := c.statuses()
	var errs []error
	for _, s := range statuses {
		switch s.State {
		case stateFailed:
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, s.Err))
		case stateInterrupted, stateWaiting:
			errs = append(errs, fmt.Errorf("%s: interrupted; its progress is saved, run again to resume", s.Name))
		}
	}
	if ctx.Err() != nil && len(errs) == 0 {
		errs = append(errs, ctx.Err())
	}
	return statuses, errors.Join(errs...)
}

func (c *copier) save() error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return saveCopyState(c.r.cfg.StateDir, c.stateFile, c.st)
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
	if state == stateCopying {
		t.status.Start = time.Now()
	} else if state != stateWaiting {
		t.status.End = time.Now()
	}
}

// copyTable copies one table: prepares the target, plans the ranges and
// hands them to the readers, then flushes the writer.
func (c *copier) copyTable(ctx context.Context, t *tableCopy, jobs chan<- chunkJob) {
	t.setState(stateCopying, nil)
	complete, err := c.prepare(ctx, t)
	if err != nil {
		if c.runMode && errors.Is(err, errTableGone) {
			t.log.Warn("table no longer exists: dropped or renamed since the snapshot began. A drop is replayed from the binlog; the rows of a table renamed into the replicated set are not copied: copy it with binlog2ch fullsync", "error", err)
			c.markComplete(t)
			t.setState(stateDone, nil)
			return
		}
		t.log.Error("cannot copy the table", "error", err)
		t.setState(stateFailed, err)
		return
	}
	if complete {
		t.log.Info("table copied by an earlier run")
		t.setState(stateDone, nil)
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
		err := t.w.run(wctx)
		if err != nil {
			t.cancel(err)
		}
		werr <- err
	}()

	c.plan(t, jobs)
	t.jobs.Wait()
	t.sendMu.Lock()
	close(t.w.in)
	t.sendMu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		// Interrupted: give the writer a bounded time to flush.
		time.AfterFunc(c.r.shutdownTimeout, func() { wcancel(errors.New("flushing took too long")) })
	})
	err = <-werr
	stop()
	if err == nil {
		t.w.flushed.Store(t.seq) // drained: every message is in ClickHouse
	}
	if cerr := c.confirm(t); cerr != nil && err == nil {
		err = cerr
	}
	cause := context.Cause(t.ctx)
	switch {
	case err != nil:
		t.log.Error("copy failed", "error", err)
		t.setState(stateFailed, err)
	case cause != nil && !errors.Is(cause, context.Canceled):
		t.log.Error("copy failed", "error", cause)
		t.setState(stateFailed, cause)
	case ctx.Err() != nil:
		t.setState(stateInterrupted, nil)
	default:
		if err := c.markComplete(t); err != nil {
			t.setState(stateFailed, err)
			return
		}
		t.setState(stateDone, nil)
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
	r := c.r
	src, err := schema.LoadTable(ctx, r.my, t.name.Database, t.name.Table)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return false, fmt.Errorf("%w: %v", errTableGone, err)
		}
		return false, err
	}
	target, err := schema.Map(src, r.cfg.ClickHouseDatabase(t.name.Database), r.caps, r.cfg.SchemaOptions(), r.cfg.TableOptions(t.name.Database, t.name.Table))
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
	if c.runMode && target.Mode == schema.ModeChangelog {
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
	prog := c.st.Tables[t.name.String()]
	keyChanged := prog != nil && !slices.Equal(prog.Key, keyNames)
	if prog == nil || keyChanged || (c.recreate && !prog.Recreated) {
		if keyChanged && (prog.Rows > 0 || prog.ScanStarted) {
			t.log.Warn("the table's key changed since the interrupted copy; copying it from the start")
		}
		prog = &tableProgress{Key: keyNames}
		c.st.Tables[t.name.String()] = prog
	}
	// -recreate drops a table once per copy: resuming an interrupted
	// -recreate copy keeps what it already copied into the new table.
	drop := c.recreate && !prog.Recreated
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
		stmts := []string{"DROP TABLE IF EXISTS " + schema.QuoteIdent(target.Database) + "." + schema.QuoteIdent(target.Name) + target.OnCluster()}
		if target.ReadName() != target.Name {
			stmts = append([]string{"DROP TABLE IF EXISTS " + schema.QuoteIdent(target.Database) + "." + schema.QuoteIdent(target.ReadName()) + target.OnCluster()}, stmts...)
		}
		for _, stmt := range stmts {
			t.log.Info("-recreate: dropping the target", "statement", stmt)
			if err := r.retry(ctx, t.log, stageDDL, "DDL", func(ctx context.Context) error { return r.ch.Exec(ctx, stmt) }); err != nil {
				return false, fmt.Errorf("%s: %w", stmt, err)
			}
		}
		c.stateMu.Lock()
		prog.Recreated = true
		c.stateMu.Unlock()
		if err := c.save(); err != nil {
			return false, err
		}
	} else if err := c.checkTarget(ctx, target); err != nil {
		return false, err
	}
	if err := r.ensureTable(ctx, t.log, target, nil, nil); err != nil {
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
	_ = r.my.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		t.name.Database, t.name.Table).Scan(&est)
	t.mu.Lock()
	t.status.Estimate = uint64(max(est.Int64, 0))
	t.mu.Unlock()

	w := newWriter(r, t.name)
	w.in = make(chan message, 4) // a few batches: the readers are never far ahead
	t.mu.Lock()                  // confirm reads them from another goroutine
	t.reader, t.w = reader, w
	t.mu.Unlock()
	return false, nil
}

// checkTarget refuses an existing ClickHouse table whose columns are not
// what the mapping gives (-recreate replaces it).
func (c *copier) checkTarget(ctx context.Context, target *schema.Target) error {
	var cols []chColumn
	err := c.r.retry(ctx, c.log, stageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		var err error
		cols, err = c.r.columns(ctx, target.Database, target.Name)
		return err
	})
	if err != nil || len(cols) == 0 {
		return err
	}
	have := map[string]string{}
	for _, col := range cols {
		have[col.name] = col.typ
	}
	var problems []string
	for _, tc := range target.Columns {
		typ, ok := have[tc.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("column %s is missing", tc.Name))
		case typ != tc.Type.String():
			problems = append(problems, fmt.Sprintf("column %s is %s, the mapping gives %s", tc.Name, typ, tc.Type.String()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("target table %s does not match the MySQL table: %s; drop it, or copy with -recreate", target.FullName(), strings.Join(problems, "; "))
	}
	return nil
}

// deleteSnapshotRows deletes the rows an interrupted copy of a changelog
// table wrote, and waits until ClickHouse has.
func (c *copier) deleteSnapshotRows(ctx context.Context, t *tableCopy) error {
	full := schema.QuoteIdent(t.target.Database) + "." + schema.QuoteIdent(t.target.Name)
	stmt := fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s = %d AND %s = %d", full, schema.QuoteIdent(schema.VersionColumn),
		version(c.file, c.pos, maxVersionRow), schema.QuoteIdent(schema.OpColumn), schema.OpInsert)
	t.log.Info("removing the rows of the interrupted copy before copying again", "statement", stmt)
	if err := c.r.retry(ctx, t.log, stageDDL, "DDL", func(ctx context.Context) error { return c.r.ch.Exec(ctx, stmt) }); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	for {
		var n uint64
		err := c.r.ch.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0",
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

// plan hands the table's remaining ranges to the readers, walking the key
// a chunk ahead; a table without a usable key is one scan.
func (c *copier) plan(t *tableCopy, jobs chan<- chunkJob) {
	c.stateMu.Lock()
	complete := t.prog.Complete
	done := slices.Clone(t.prog.Done)
	c.stateMu.Unlock()
	if complete {
		return
	}
	send := func(j chunkJob) bool {
		t.jobs.Add(1)
		select {
		case jobs <- j:
			return true
		case <-t.ctx.Done():
			t.jobs.Done()
			return false
		}
	}
	if t.reader.key == nil {
		c.stateMu.Lock()
		t.prog.ScanStarted = true
		c.stateMu.Unlock()
		if err := c.save(); err != nil {
			t.cancel(err)
			return
		}
		send(chunkJob{t: t, scan: true})
		return
	}
	n := c.r.cfg.FullSync.ChunkRows
	// Segments in key order: the ranges done before (kept as they are)
	// between the gaps still to read.
	var segs []keyRange
	var isGap []bool
	if len(done) == 0 {
		segs, isGap = []keyRange{{}}, []bool{true}
	} else {
		g := gaps(done)
		gi := 0
		if done[0].Lo != nil {
			segs, isGap = append(segs, g[0]), append(isGap, true)
			gi++
		}
		for i, d := range done {
			segs, isGap = append(segs, d), append(isGap, false)
			if i < len(done)-1 || d.Hi != nil {
				segs, isGap = append(segs, g[gi]), append(isGap, true)
				gi++
			}
		}
	}
	t.mu.Lock()
	for i, s := range segs {
		if !isGap[i] {
			t.done = append(t.done, orderedRange{seg: i, r: s})
		}
	}
	t.mu.Unlock()
	for si, s := range segs {
		if !isGap[si] {
			continue
		}
		cur := s.Lo
		for ci := 0; ; ci++ {
			var last [][]byte
			var count int
			err := c.retryRead(t, "walk the key", func() error {
				var err error
				last, count, err = t.reader.nextBoundary(t.ctx, c.db, keyRange{Lo: cur, Hi: s.Hi}, n)
				return err
			})
			if err != nil {
				t.cancel(fmt.Errorf("walk the key after %s: %w", showKey(cur), err))
				return
			}
			if count < n || equalKey(last, s.Hi) {
				send(chunkJob{t: t, orderedRange: orderedRange{seg: si, chunk: ci, r: keyRange{Lo: cur, Hi: s.Hi}}})
				break
			}
			if !send(chunkJob{t: t, orderedRange: orderedRange{seg: si, chunk: ci, r: keyRange{Lo: cur, Hi: last}}}) {
				return
			}
			cur = last
		}
	}
}

func showKey(k [][]byte) string {
	if k == nil {
		return "the start"
	}
	parts := make([]string, len(k))
	for i, v := range k {
		parts[i] = fmt.Sprintf("%q", v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// retryRead runs a MySQL read, retrying what retrying can fix.
func (c *copier) retryRead(t *tableCopy, what string, op func() error) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || t.ctx.Err() != nil || !mysqlTransient(err) {
			return err
		}
		t.log.Warn(what+" failed; retrying", "error", err, "attempt", attempt, "retry_in", delay)
		select {
		case <-t.ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(delay*2, c.r.maxBackoff)
	}
}

// readJob reads one range (or a whole table) into the table's writer.
func (c *copier) readJob(j chunkJob) {
	t := j.t
	defer t.jobs.Done()
	if h := c.r.hooks.beforeChunk; h != nil {
		h(t.ctx, t.name)
	}
	if t.ctx.Err() != nil {
		return
	}
	var rows, lastSeq uint64
	emit := func(batch [][]any) error {
		t.sendMu.Lock()
		defer t.sendMu.Unlock()
		t.seq++
		m := message{seq: t.seq, source: t.source, rows: batch, op: opInsert, file: c.file, pos: c.pos, at: c.st.Position, snapshot: true}
		select {
		case t.w.in <- m:
			lastSeq = m.seq
			rows += uint64(len(batch))
			t.rowsRead.Add(uint64(len(batch)))
			return nil
		case <-t.ctx.Done():
			t.seq--
			return context.Cause(t.ctx)
		}
	}
	what := "read rows after " + showKey(j.r.Lo)
	op := func() error {
		rows = 0 // a retry sends the range again
		_, err := t.reader.read(t.ctx, c.db, j.r, snapshotBatchRows, emit)
		return err
	}
	var err error
	if j.scan && t.target.Mode == schema.ModeChangelog {
		// A changelog keeps duplicates: a failed scan is not retried here
		// (a new run deletes its rows and scans again).
		err = op()
	} else {
		// Rows sent before a failure are sent again: same versions, so
		// the table's FINAL state is unchanged.
		err = c.retryRead(t, what, op)
	}
	if err != nil {
		if t.ctx.Err() == nil {
			t.cancel(fmt.Errorf("%s: %w", what, err))
		}
		return
	}
	t.chunks.Add(1)
	t.mu.Lock()
	t.pending = append(t.pending, chunkDone{orderedRange: j.orderedRange, lastSeq: lastSeq, rows: rows})
	t.mu.Unlock()
}

// confirmAll records every table's confirmed ranges.
func (c *copier) confirmAll() error {
	var errs []error
	for _, t := range c.tables {
		if err := c.confirm(t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// confirm moves the table's ranges whose rows the writer has confirmed
// into the state and saves it.
func (c *copier) confirm(t *tableCopy) error {
	t.mu.Lock()
	if t.w == nil {
		t.mu.Unlock()
		return nil
	}
	flushed := t.w.flushed.Load()
	keyed := t.reader.key != nil
	var rows, chunks uint64
	scanDone := false
	kept := t.pending[:0]
	for _, p := range t.pending {
		if p.lastSeq > flushed {
			kept = append(kept, p)
			continue
		}
		rows += p.rows
		chunks++
		if !keyed {
			scanDone = true
			continue
		}
		t.done = append(t.done, p.orderedRange)
	}
	t.pending = kept
	if chunks == 0 {
		t.mu.Unlock()
		return nil
	}
	slices.SortFunc(t.done, func(a, b orderedRange) int {
		if a.seg != b.seg {
			return a.seg - b.seg
		}
		return a.chunk - b.chunk
	})
	ranges := make([]keyRange, len(t.done))
	for i, d := range t.done {
		ranges[i] = d.r
	}
	t.mu.Unlock()
	c.stateMu.Lock()
	t.prog.Rows += rows
	t.prog.Chunks += chunks
	if keyed {
		t.prog.Done = mergeAdjacent(ranges)
	}
	if scanDone {
		t.prog.Complete = true
	}
	err := saveCopyState(c.r.cfg.StateDir, c.stateFile, c.st)
	c.stateMu.Unlock()
	return err
}

// markComplete records a table as copied.
func (c *copier) markComplete(t *tableCopy) error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if t.prog == nil {
		t.prog = &tableProgress{}
		c.st.Tables[t.name.String()] = t.prog
	}
	if t.reader != nil && t.reader.key != nil && !t.prog.Complete && !covered(t.prog.Done) {
		return fmt.Errorf("internal error: copy ended with key ranges missing: %d ranges done", len(t.prog.Done))
	}
	t.prog.Complete = true
	return saveCopyState(c.r.cfg.StateDir, c.stateFile, c.st)
}

// LogProgress returns a FullSyncOptions.Progress that logs every table's
// progress at most once per interval, and each table once when it ends.
func LogProgress(log *slog.Logger, every time.Duration) func([]TableStatus) {
	var last time.Time
	ended := map[source.TableName]bool{}
	return func(ts []TableStatus) {
		now := time.Now()
		periodic := now.Sub(last) >= every
		if periodic {
			last = now
		}
		var total, est uint64
		for _, s := range ts {
			total += s.Confirmed
			est += max(s.Estimate, s.Confirmed)
			if s.State == stateCopying && periodic {
				secs := now.Sub(s.Start).Seconds()
				log.Info("copying", "table", s.Name.String(), "rows_read", s.Rows, "rows_confirmed", s.Confirmed, "estimated_rows", s.Estimate,
					"rows_per_s", int(float64(s.Rows)/max(secs, 0.001)))
			}
			if (s.State == stateDone || s.State == stateFailed) && !ended[s.Name] {
				ended[s.Name] = true
				if s.State == stateFailed {
					log.Error("table copy failed", "table", s.Name.String(), "error", s.Err)
				}
			}
		}
		if periodic && len(ts) > 0 {
			log.Info("copy progress", "rows_confirmed", total, "estimated_rows", est, "tables", len(ts))
		}
	}
}
