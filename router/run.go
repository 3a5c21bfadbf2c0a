// Package router is the stream's handler, the daemon's core while it
// follows the binlog: each table's events in binlog order to that table's
// writer (sink), DDL handed over in order, the checkpoint advanced as the
// writers report their rows durable (state), the tables that enter the set
// or change beyond what the binlog carries copied online (snapshot) and
// swapped in, migrations' shadow tables followed, failed tables skipped by
// choice. It never decodes rows or writes ClickHouse SQL itself, and must
// not start or stop the daemon: replicator does.
package router

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/migration"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Options are what the router works with: the daemon's connections,
// metrics and state, each named for what it is.
type Options struct {
	Config    *config.Config
	Log       *slog.Logger
	MySQL     *sql.DB
	Sink      *sink.ClickHouse
	Metrics   *metrics.Metrics
	Server    source.Server
	Stream    *source.Stream
	Store     state.Store // the checkpoint's
	Selection *Selection
	// Cascades derives the foreign-key cascades of Keys.
	Cascades *cascade.Runner
	Keys     *cascade.Keys
	// Start is where the stream starts, From the checkpoint it starts
	// from; CopyAtStart puts the copies the checkpoint records, and the
	// tables selected since, in line (not after an initial snapshot).
	Start       source.Start
	From        *state.Checkpoint
	CopyAtStart bool
	Live        *Live
	// NoteCheckpoint is told of each checkpoint saved.
	NoteCheckpoint func(*state.Checkpoint)
	// CopyOptions are a table copy's options with the daemon's
	// connections.
	CopyOptions func(log *slog.Logger, st *snapshot.State, file string) snapshot.Options
	// CheckIn says the daemon is alive.
	CheckIn func()
	// QueueLen is the messages a writer may have queued; ParkAfter how
	// long it idles before it parks; ShutdownTimeout bounds the flush at
	// shutdown.
	QueueLen                   int
	ParkAfter, ShutdownTimeout time.Duration
	// SnapshotEndVersion is the version of the binlog position when this
	// process's initial snapshot ended (0: none).
	SnapshotEndVersion uint64
	// StreamError adds what to do to the stream's errors.
	StreamError func(error) error
	Hooks       Hooks
}

// Live is what the router tells the daemon as it reads, read from other
// goroutines: positions, whether MySQL is up, when the reader last
// checked in (Unix ns).
type Live struct {
	ReadPos, SavedPos atomic.Pointer[source.Position]
	MySQLUp           atomic.Bool
	CheckIn           atomic.Int64
}

// Hooks are pause points for tests, which interrupt work at a chosen step
// instead of racing the clock. All nil outside tests.
type Hooks struct {
	// RowsEvent runs in the reader for each rows event of a replicated
	// table, before its rows go to the writer; it may block.
	RowsEvent func(table schema.TableName)
	// Checkpointed runs after each checkpoint pass, whether or not it
	// saved a new position.
	Checkpointed func()
	// BeforeCascade runs in the reader once a cascading parent event's
	// tables are flushed, before its rows are derived; AfterCascade once
	// they are written, before the event goes to its writer. Either may
	// block.
	BeforeCascade, AfterCascade func(parent schema.TableName)
	// MigrationStatement runs in the reader for each table the selection
	// follows as a migration's while the router acts on statement st; it
	// may block.
	MigrationStatement func(st source.Statement, t schema.TableName)
	// CopyDone runs in an online copy's goroutine once it has copied its
	// tables and read the server's position, before the stream swaps them
	// in.
	CopyDone func(tables []schema.TableName)
	// HoldCheckpoint, while it returns true, keeps checkpoints but the
	// final one and those raising the version ceiling from being saved.
	HoldCheckpoint func() bool
}

// New is the router of a stream that starts at opt.Start.
func New(opt Options) *Router {
	st, from := opt.Start, opt.From
	first := commitPoint{seq: 0, pos: st.Position, server: from.Server, gtid: st.GTID, hist: st.History, offset: st.Offset, byGTID: from.ResumeByGTID}
	s := &Router{opt: opt, stream: opt.Stream, writers: map[schema.TableName]*tableWriter{},
		commits: []commitPoint{first}, lastSaved: time.Now(), saved: st.Position, ceiling: from.Ceiling, skipping: map[schema.TableName]bool{},
		cfg: opt.Config, log: opt.Log, m: opt.Metrics, sink: opt.Sink, server: opt.Server, my: opt.MySQL, hooks: opt.Hooks,
		cascadeRunner: opt.Cascades, snapshotEndVersion: opt.SnapshotEndVersion, queueLen: opt.QueueLen, parkAfter: opt.ParkAfter,
		readPos: &opt.Live.ReadPos, savedPos: &opt.Live.SavedPos, mysqlUp: &opt.Live.MySQLUp, checkin: &opt.Live.CheckIn, sel: opt.Selection}
	s.copies = newOnlineCopies(from)
	s.stored = storedAtStart(from)
	s.followCascades(opt.Keys)
	s.fkeys = opt.Keys
	return s
}

// Run routes the stream until ctx ends (a clean shutdown: pending rows
// flushed, the checkpoint saved, nil returned) or an error stops it.
func (s *Router) Run(ctx context.Context) error {
	// Writers talk to ClickHouse with their own context: a shutdown signal
	// stops reading, not the flush of what was read.
	workCtx, cancelWork := context.WithCancelCause(context.Background())
	defer cancelWork(nil)
	readCtx, cancelRead := context.WithCancelCause(ctx)
	defer cancelRead(nil)
	s.start = func(rt *tableWriter) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			w := rt.w
			if err := w.Run(workCtx); err != nil {
				// With replication.on_table_error: skip_table, the router
				// marks a table failed for an error of its own (failed.go).
				if s.writerFailed(rt, err, workCtx.Err() != nil) {
					return
				}
				err = fmt.Errorf("writer %s: %w", w.Name(), err)
				cancelRead(err)
				cancelWork(err)
			}
		}()
	}
	s.ctx = readCtx
	// A shutdown meanwhile is no error: the stream's Run below returns at
	// once, and the writers stop as at any shutdown.
	if s.opt.CopyAtStart {
		if err := s.copyAtStart(readCtx, s.opt.From); err != nil && readCtx.Err() == nil {
			return err
		}
	}
	if err := s.versionedAtStart(readCtx); err != nil && readCtx.Err() == nil {
		return err
	}
	readErr := s.opt.StreamError(s.stream.Run(readCtx, s.opt.Start, s.followMigrations()))
	if b := s.copies.batch; b != nil {
		b.cancel()
		<-b.done // its progress is saved with the last checkpoint
	}

	// Stop: close every queue; writers flush what they hold and exit.
	s.closeAll()
	if cause := context.Cause(readCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		readErr = cause // a writer failed
	}
	if readErr != nil {
		cancelWork(readErr)
		s.wg.Wait()
		return readErr
	}
	timer := time.AfterFunc(s.opt.ShutdownTimeout, func() {
		cancelWork(fmt.Errorf("shutdown: flushing took longer than %s", s.opt.ShutdownTimeout))
	})
	s.wg.Wait()
	timer.Stop()
	if cause := context.Cause(workCtx); cause != nil {
		return fmt.Errorf("shutdown: %w; the checkpoint stays at the last saved position and the rows after it will be replayed", cause)
	}
	// A table that failed while the writers flushed is marked in the last
	// checkpoint, which passes its rows.
	if err := s.takeFailures(); err != nil {
		return err
	}
	if err := s.checkpoint(true); err != nil {
		return err
	}
	s.log.Info("stopped", "checkpoint", s.saved.String())
	return nil
}

// CopyState is the copy state now (a copy of it), for the status page.
func (s *Router) CopyState() map[string]*state.TableCopy { return s.copies.saved() }

// CopyProgress is the running online copy's progress, latest (nil: none
// yet).
func (s *Router) CopyProgress() *[]snapshot.TableStatus { return s.copyProgress.Load() }

// QueuedBytes is the bytes of rows events handed to writers and not yet
// taken into their blocks. Read from other goroutines.
func (s *Router) QueuedBytes() int64 { return s.queued.Load() }

// The daemon's parts the router's files reach under their old names.
func (s *Router) replicates(t schema.TableName) bool { return s.sel.Replicates(t) }
func (s *Router) selection() *config.TablesConfig    { return s.sel.Current() }
func (s *Router) selects(sel *config.TablesConfig, t schema.TableName) bool {
	return s.sel.selects(sel, t)
}
func (s *Router) followedMigration(t schema.TableName) (migration.Table, bool) {
	return s.sel.followedMigration(t)
}
func (s *Router) checkIn()                 { s.opt.CheckIn() }
func (s *Router) checkpoints() state.Store { return s.opt.Store }
func (s *Router) currentPosition(ctx context.Context) (source.Position, error) {
	return source.CurrentPosition(ctx, s.my)
}
func (s *Router) copyOptions(log *slog.Logger, st *snapshot.State, file string) snapshot.Options {
	return s.opt.CopyOptions(log, st, file)
}
func (s *Router) trackCopies(ts []snapshot.TableStatus) {
	kept := append([]snapshot.TableStatus(nil), ts...)
	s.copyProgress.Store(&kept)
}
func (s *Router) noteCheckpoint(cp *state.Checkpoint) { s.opt.NoteCheckpoint(cp) }
