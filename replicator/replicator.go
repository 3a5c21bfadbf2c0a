// Package replicator is the `binlog2ch run` daemon's wiring: it starts
// the binlog stream (source), routes each table's events in binlog order to
// that table's writer (sink), advances the checkpoint (state) as writers
// report their rows durable, runs the initial snapshot (snapshot) first,
// and serves metrics and health. It must not decode rows or write
// ClickHouse SQL itself: those belong to the packages below it.
package replicator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/control"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/retention"
	"github.com/binlog2ch/binlog2ch/router"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// Replicator is the `binlog2ch run` daemon.
type Replicator struct {
	cfg    *config.Config
	log    *slog.Logger
	my     *sql.DB
	sink   *sink.ClickHouse
	stream *source.Stream
	server source.Server
	m      *metrics.Metrics

	onReady func()
	// live is what the reader tells: positions, whether the binlog stream
	// is connected, when it last checked in (for Alive).
	live     router.Live
	httpAddr atomic.Value // string

	// For the status page (status.go).
	version          string
	started          time.Time
	phase            atomic.Pointer[string]
	savedCP          atomic.Pointer[status.Checkpoint]
	retention        atomic.Pointer[retention.Estimate]     // the latest, nil while not known (retention.go)
	snapshotProgress atomic.Pointer[[]snapshot.TableStatus] // the initial snapshot's, latest
	statusPage       *status.Collector

	queueLen        int           // messages a writer may have queued
	parkAfter       time.Duration // how long a writer idles before it parks
	maxBackoff      time.Duration // cap of the retry backoff
	shutdownTimeout time.Duration // how long a shutdown may spend flushing

	loader *schema.Loader // the writers' live table definitions
	// sel is the tables replicated (a reload changes them).
	sel *router.Selection
	// running is the router while the daemon follows the binlog (for
	// Resync and Reload, which it takes at its next Tick).
	running atomic.Pointer[router.Router]

	lease *state.Lease // the ZooKeeper lease while held (state.lease zookeeper)
	store state.Store  // where the checkpoint lives (state.store)

	hooks testHooks
	// snapshotEndVersion is the version of the binlog position when this
	// process's initial snapshot ended (0: none).
	snapshotEndVersion uint64
	// cascadeRunner derives foreign-key cascades in ClickHouse, and
	// remembers what it read there for as long as the process runs.
	cascadeRunner *cascade.Runner
}

// writerParkAfter is how long a table's writer holds nothing before its
// goroutine exits and its batch buffers go (sink.Writer.ParkWhenIdle):
// schemas have hundreds of tables, most of them quiet, and a quiet one
// then costs neither. Its next rows start it again (a new block: about
// what one row's conversion costs in allocations).
const writerParkAfter = time.Minute

// GCPercent is the garbage collector's pace the daemon runs at unless
// GOGC is set (the binary sets it; a library must not). Its live heap is
// mostly pointer-free column buffers and event bytes, which the collector
// marks for little: collecting at 50% growth rather than the default 100%
// took a 2M-row catch-up's peak RSS from ~197 to ~158 MiB for about 1% of
// its CPU (docs/benchmarks.md).
const GCPercent = 50

// testHooks are pause points for tests, which interrupt work at a chosen
// step instead of racing the clock. All nil outside tests; set before Run
// or FullSync.
type testHooks struct {
	// beforeChunk runs before a snapshot reader reads a chunk of table; it
	// may block (a test holding the copy mid-way).
	beforeChunk func(ctx context.Context, table schema.TableName)
	// snapshotCopied runs once the initial snapshot's tables are copied,
	// before where the copy ended is read and its checkpoint saved.
	snapshotCopied func()
	// rowsEvent runs in the reader for each rows event of a replicated
	// table, before its rows go to the writer; it may block.
	rowsEvent func(table schema.TableName)
	// checkpointed runs after each checkpoint pass, whether or not it
	// saved a new position.
	checkpointed func()
	// parkAfter, when set, replaces writerParkAfter.
	parkAfter time.Duration
	// beforeCascade runs in the reader once a cascading parent event's
	// tables are flushed, before its rows are derived; afterCascade once
	// they are written, before the event goes to its writer. Either may
	// block.
	beforeCascade, afterCascade func(parent schema.TableName)
	// beforeDefinitions runs before the writers' definitions are read
	// from MySQL (one read serves the writers that asked meanwhile) with
	// the number of tables read; it may block.
	beforeDefinitions func(tables int)
	// migrationStatement runs in the reader when the router, acting on
	// statement st, asks whether table t, an online schema migration's
	// new or old table, is replicated: before it acts on that effect of
	// st (the second half of a cut-over's RENAME, after the first). It
	// may block.
	migrationStatement func(st source.Statement, t schema.TableName)
	// copyDone runs once an online copy has copied its tables, before
	// they are swapped in.
	copyDone func(tables []schema.TableName)
	// holdCheckpoint, while it returns true, keeps checkpoints from being
	// saved (a crash then replays what was stored since).
	holdCheckpoint func() bool
	// retentionEvery, when set, replaces retentionEvery; retentionChecked
	// runs after each read of the source's binlog retention, once its
	// metric, status and log line are out.
	retentionEvery   time.Duration
	retentionChecked func()
}

// New connects to both servers and checks the source writes a binlog
// binlog2ch can follow.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Replicator, error) {
	r := &Replicator{cfg: cfg, log: log, m: metrics.New(), queueLen: 256, parkAfter: writerParkAfter, maxBackoff: 30 * time.Second, shutdownTimeout: 30 * time.Second,
		started: time.Now()}
	r.setPhase(phaseStarting)
	r.statusPage = status.NewCollector(r.m, r.statusInfo)
	var err error
	if r.my, err = source.OpenMySQL(ctx, cfg, log); err != nil {
		return nil, err
	}
	if r.server, err = source.Inspect(ctx, r.my, cfg); err != nil {
		r.my.Close()
		return nil, err
	}
	if r.stream, err = source.NewStream(cfg, log, r.server); err != nil {
		r.my.Close()
		return nil, err
	}
	r.sel = router.NewSelection(cfg)
	r.stream.Selected = r.sel.Replicates
	r.stream.EventsSkipped = r.m.EventsSkipped
	// The daemon's statements are short and few at once: bounded, with
	// idle connections kept rather than one opened per statement. Writers
	// starting together (a thousand tables' first events) read their
	// definitions together, through one loader.
	r.my.SetMaxOpenConns(8)
	r.my.SetMaxIdleConns(4)
	r.loader = schema.NewLoader(r.my)
	r.loader.BeforeRead = func(tables int) {
		if f := r.hooks.beforeDefinitions; f != nil {
			f(tables)
		}
	}
	live := func(ctx context.Context, t schema.TableName) (*schema.Table, error) {
		return r.loader.Load(ctx, t.Database, t.Table)
	}
	if r.sink, err = sink.New(ctx, cfg, log, r.m, live); err != nil {
		r.my.Close()
		return nil, err
	}
	r.cascadeRunner = cascade.NewRunner(r.sink, cfg, log)
	r.sink.OnCascadeColumns(r.cascadeRunner.ForgetTable)
	r.m.Ready = r.ready
	log.Info("connected", "mysql", cfg.MySQL.Addr, "flavor", r.server.Flavor, "gtids", r.server.GTIDMode, "clickhouse", cfg.ClickHouse.Addr, "clickhouse_version", r.sink.Caps().Version)
	return r, nil
}

// Close closes the server connections.
func (r *Replicator) Close() {
	r.sink.Close()
	r.my.Close()
}

// currentPosition is the server's current binlog position.
func (r *Replicator) currentPosition(ctx context.Context) (source.Position, error) {
	return source.CurrentPosition(ctx, r.my)
}

// startPosition is where to read from: the checkpoint or, at the first
// start, the current binlog position, recorded before the initial snapshot
// copies every selected table (see snapshot.go). snap is that snapshot
// when it is still to be done (also after a restart during it); Run does
// it before following the binlog.
func (r *Replicator) startPosition(ctx context.Context) (start source.Start, from *state.Checkpoint, snap *snapshot.State, err error) {
	cp, err := r.checkpoints().Load(ctx)
	if err != nil {
		return start, nil, nil, err
	}
	// Once the checkpoint says whether the server changed: that, and a
	// replica as the source, make the settings matter now.
	if a, ok := r.server.Failover.Advice(cp != nil && cp.Server != r.server.ID); ok {
		r.log.Log(ctx, a.Level, a.Msg, "set", strings.Join(a.Set, "; "))
	}
	if snap, err = snapshot.Load(r.cfg.StateDir, snapshot.InitialFile); err != nil {
		return start, nil, nil, err
	}
	if snap != nil && !snap.Complete && snap.Server != r.server.ID {
		return start, nil, nil, fmt.Errorf("the initial snapshot in %s was begun on MySQL server %s, but %s is %s, and binlog2ch does not carry an unfinished copy over to another server. Either point mysql.addr back at %s, or start over on this one: stop binlog2ch, drop its tables in ClickHouse, move %s out of %s, and start it again",
			r.cfg.StateDir, snap.Server, r.cfg.MySQL.Addr, r.server.ID, snap.Server, r.cfg.StateDir, filepath.Dir(r.cfg.StateDir))
	}
	if cp != nil && (snap == nil || snap.Complete) {
		// Everything before the checkpoint was in ClickHouse when it was
		// saved: the lag is at least the time since.
		r.m.Durable.Store(cp.SavedAt.UnixNano())
		start = source.Start{Position: cp.Position, GTID: cp.GTID, History: cp.History, Offset: cp.Offset, TableGTIDs: cp.TableGTIDs}
		if cp.Server == r.server.ID && cp.ResumeByGTID {
			// Set by the repair of a GTID gap: read on from the GTIDs, on
			// the new history's offset.
			start.ByGTID, start.GTIDKnown = true, true
			r.log.Info("resuming from the checkpoint's GTIDs (a GTID gap repaired)", "gtid", cp.GTID, "version_offset", cp.Offset)
			return start, cp, nil, nil
		}
		if cp.Server != r.server.ID {
			start, err = r.changeOfHistory(ctx, cp)
			return start, cp, nil, err
		}
		herr := source.CheckHistory(ctx, r.my, cp.Position)
		if herr == nil {
			herr = r.stream.VerifyHistory(ctx, cp.Position, cp.History)
		}
		if herr != nil {
			return start, nil, nil, r.streamError(herr)
		}
		if err := r.fillGTIDs(ctx, &start); err != nil {
			return start, nil, nil, err
		}
		r.log.Info("resuming from checkpoint", "position", cp.Position.String(), "gtid", start.GTID, "saved_at", cp.SavedAt)
		return start, cp, nil, nil
	}
	if snap == nil {
		p, gtids, layouts, err := r.copyPosition(ctx)
		if err != nil {
			return start, nil, nil, err
		}
		tables, err := catalog.ListTables(ctx, r.my, r.cfg)
		if err != nil {
			return start, nil, nil, err
		}
		// No checkpoint: the first history binlog2ch follows, offset 0.
		snap = &snapshot.State{Server: r.server.ID, Position: p, GTID: gtids, Started: time.Now().UTC(), Tables: map[string]*snapshot.TableProgress{}, List: tables, Partitions: layouts}
		r.log.Info("no checkpoint: first start. Copying the existing rows of every selected table (initial snapshot), then following the binlog from the position recorded before the copy",
			"position", p.String(), "tables", len(tables))
		// The snapshot state first: a crash before the checkpoint is saved
		// then still resumes this snapshot at this position.
		if err := snapshot.Save(r.cfg.StateDir, snapshot.InitialFile, snap); err != nil {
			return start, nil, nil, err
		}
	} else {
		r.log.Info("resuming the interrupted initial snapshot", "position", snap.Position.String(), "started", snap.Started)
	}
	// The lag counts from the recorded position: the copy is catching up.
	r.m.Durable.Store(snap.Started.UnixNano())
	if cp == nil || cp.Server != r.server.ID || cp.Position != snap.Position {
		cp = r.snapshotCheckpoint(snap)
		// A shared checkpoint is written once the snapshot is complete:
		// another host, which cannot see this host's snapshot state, must
		// not take it for a finished copy.
		if r.cfg.State.Store == config.StoreFile {
			if err := r.checkpoints().Save(ctx, *cp); err != nil {
				return start, nil, nil, err
			}
		}
	}
	start = source.Start{Position: cp.Position, GTID: cp.GTID, History: cp.History, Offset: cp.Offset, TableGTIDs: cp.TableGTIDs}
	return start, cp, snap, r.fillGTIDs(ctx, &start)
}

// fillGTIDs completes a start saved without GTIDs where the server can
// tell them (MariaDB's BINLOG_GTID_POS; MySQL's stream learns them at the
// next file's header).
func (r *Replicator) fillGTIDs(ctx context.Context, start *source.Start) error {
	if start.GTID != "" {
		start.GTIDKnown = true
		return nil
	}
	g, ok, err := source.GTIDsAt(ctx, r.my, r.server.Flavor, start.Position)
	start.GTID, start.GTIDKnown = g, ok
	return err
}

// snapshotCheckpoint is the checkpoint at a snapshot's position, which
// copied every table the selection selects.
func (r *Replicator) snapshotCheckpoint(snap *snapshot.State) *state.Checkpoint {
	f, _ := source.VersionFile(source.MustFileIndex(snap.Position.File), snap.FileOffset)
	sel := r.sel.Current()
	return &state.Checkpoint{Position: snap.Position, Server: r.server.ID, SavedAt: time.Now().UTC(),
		StreamState: state.StreamState{GTID: snap.GTID, Offset: snap.FileOffset, Ceiling: f + router.CeilingGap,
			Selection: &state.Selection{Include: sel.Include, Exclude: sel.Exclude}, Partitions: snap.Partitions}}
}

// initialSnapshot copies the tables listed when the snapshot began (tables
// created later start empty and come whole from the binlog). Interrupted
// by ctx, it returns nil with the progress saved.
func (r *Replicator) initialSnapshot(ctx context.Context, st *snapshot.State) error {
	log := r.log.With("component", "snapshot")
	opts := r.copyOptions(log, st, snapshot.InitialFile)
	opts.RunMode = true
	opts.Progress = r.trackSnapshot(snapshot.LogProgress(log, 5*time.Second))
	start := time.Now()
	statuses, err := snapshot.Copy(ctx, opts, st.List)
	if ctx.Err() != nil {
		r.log.Warn("stopped during the initial snapshot; the next start resumes it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("initial snapshot: %w", err)
	}
	if r.hooks.snapshotCopied != nil {
		r.hooks.snapshotCopied()
	}
	if err := r.snapshotDone(ctx, st, statuses, start); err != nil {
		if ctx.Err() != nil {
			// Stopped between the copy's end and its checkpoint: the next
			// start resumes the complete copy and reads its end again.
			r.log.Warn("stopped at the end of the initial snapshot; the next start resumes it", "error", err)
			return nil
		}
		return err
	}
	return nil
}

// snapshotDone records a complete initial snapshot: where it ended, its
// state and the checkpoint the stream starts from.
func (r *Replicator) snapshotDone(ctx context.Context, st *snapshot.State, statuses []snapshot.TableStatus, start time.Time) error {
	var rows uint64
	for _, s := range statuses {
		rows += s.Rows
	}
	st.Complete = true
	// The copy read its tables between its position and now: an ON UPDATE
	// CASCADE in that window may show in the copy already (package cascade).
	// Not known, the guard would be off: the start stops instead, and the
	// next one resumes the complete copy and reads it again.
	end, err := r.copyEndVersion(ctx, st)
	if err != nil {
		return fmt.Errorf("initial snapshot: %w", err)
	}
	r.snapshotEndVersion = end
	if err := snapshot.Save(r.cfg.StateDir, snapshot.InitialFile, st); err != nil {
		return err
	}
	cp := r.snapshotCheckpoint(st)
	if r.snapshotEndVersion > 0 {
		// Kept for the cascades of the copy's time: no keys tracked yet
		// (information_schema's stand), only where the copy ended.
		cp.ForeignKeys = &cascade.KeyState{CopyEnd: r.snapshotEndVersion}
	}
	if err := r.checkpoints().Save(ctx, *cp); err != nil {
		return err
	}
	r.noteCheckpoint(cp)
	r.log.Info("initial snapshot done; following the binlog from the recorded position", "tables", len(statuses), "rows", rows,
		"seconds", time.Since(start).Seconds(), "position", st.Position.String())
	return nil
}

// copyOptions are a table copy's options with this daemon's connections.
func (r *Replicator) copyOptions(log *slog.Logger, st *snapshot.State, file string) snapshot.Options {
	return snapshot.Options{Config: r.cfg, Log: log, MySQL: r.my, Sink: r.sink, Metrics: r.m, State: st, StateFile: file,
		CheckIn: r.checkIn, ShutdownTimeout: r.shutdownTimeout, MaxBackoff: r.maxBackoff, BeforeChunk: r.hooks.beforeChunk}
}

// Run replicates until ctx ends (a clean shutdown: pending rows flushed,
// checkpoint saved, nil returned) or an error stops it. With a lease it
// first waits for the lease, and stops at once, without flushing, when the
// lease is lost.
func (r *Replicator) Run(ctx context.Context) error {
	if r.cfg.State.Lease == config.LeaseZooKeeper {
		l, err := state.Acquire(ctx, r.cfg, r.log)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while waiting
			}
			return err
		}
		r.lease = l
		defer l.Release()
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		// The cause reaches the reader, which then stops the writers
		// without a flush (see run's error path).
		go func() {
			select {
			case <-l.Lost():
				cancel(state.ErrLeaseLost)
			case <-ctx.Done():
			}
		}()
	}
	err := r.run(ctx)
	if errors.Is(context.Cause(ctx), state.ErrLeaseLost) {
		return state.ErrLeaseLost
	}
	return err
}

// checkpoints is the checkpoint store; with a lease, its writes are
// fenced by the lease's token and refused once the lease is lost.
func (r *Replicator) checkpoints() state.Store {
	if r.store == nil {
		var fence int64
		var valid func() bool
		if r.cfg.State.Lease == config.LeaseZooKeeper {
			if r.lease != nil {
				fence = r.lease.Fence()
			}
			valid = r.lease.Valid
		}
		r.store = state.NewStore(r.cfg, r.sink.Conn(), fence, valid, r.sink.InsertSettings())
	}
	return r.store
}

func (r *Replicator) run(ctx context.Context) error {
	start, from, snap, err := r.startPosition(ctx)
	if err != nil {
		return err
	}
	r.live.SavedPos.Store(&start.Position)
	r.live.ReadPos.Store(&start.Position)
	if snap == nil || r.cfg.State.Store == config.StoreFile {
		r.noteCheckpoint(from) // a shared one is saved after the initial snapshot
	}
	r.checkIn()
	// Before an initial snapshot: the keys then are those of the copy's
	// position, give or take the DDL of the copy's duration.
	fks, err := r.loadForeignKeys(ctx, from)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: nothing read yet
		}
		return err
	}
	r.reportForeignKeys(fks)
	stopHTTP, err := r.serveHTTP(ctx)
	if err != nil {
		return err
	}
	defer stopHTTP()
	defer r.watchRetention(ctx)()
	stopControl, err := control.Serve(ctx, r.cfg.StateDir, r, r.log)
	if err != nil {
		return err
	}
	defer stopControl()
	if r.onReady != nil {
		r.onReady()
	}
	if snap != nil {
		if err := r.streamError(r.stream.Check(ctx, start.Position)); err != nil {
			return err
		}
	}
	if err := r.checkViewNames(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	// Before a copy that may take hours: an XA transaction prepared before
	// the start whose XA PREPARE is gone is an ERROR now (source/xascan.go).
	if err := r.stream.LearnPrepared(ctx, r.my, start.Position); err != nil {
		return nil // stopped while starting
	}
	if snap != nil {
		// Before hours of copying: with skip_table, the router marks such
		// a table failed when it starts (router.VersionedError).
		if r.cfg.Replication.OnTableError != config.OnSkipTable {
			if err := r.refuseVersioned(ctx, nil, snap.Position.String(), "the initial snapshot is to copy it"); err != nil {
				if ctx.Err() != nil {
					return nil // stopped while starting
				}
				return err
			}
		}
		// Served and ready meanwhile: a copy can take hours, and the lag
		// metric shows it catching up.
		r.setPhase(phaseSnapshot)
		if err := r.initialSnapshot(ctx, snap); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil // stopped during the snapshot; the next start resumes it
		}
	}
	r.setPhase(phaseReplicating)
	s := router.New(router.Options{Config: r.cfg, Log: r.log, MySQL: r.my, Sink: r.sink, Metrics: r.m, Server: r.server, Stream: r.stream,
		Store: r.checkpoints(), Selection: r.sel, Cascades: r.cascadeRunner, Keys: fks, Start: start, From: from, CopyAtStart: snap == nil,
		Live: &r.live, NoteCheckpoint: r.noteCheckpoint, CopyOptions: r.copyOptions, CheckIn: r.checkIn,
		QueueLen: r.queueLen, ParkAfter: r.parkAfter, ShutdownTimeout: r.shutdownTimeout, SnapshotEndVersion: r.snapshotEndVersion,
		StreamError: r.streamError, Hooks: router.Hooks{RowsEvent: r.hooks.rowsEvent, Checkpointed: r.hooks.checkpointed,
			BeforeCascade: r.hooks.beforeCascade, AfterCascade: r.hooks.afterCascade, MigrationStatement: r.hooks.migrationStatement, CopyDone: r.hooks.copyDone,
			HoldCheckpoint: r.hooks.holdCheckpoint}})
	r.running.Store(s)
	defer r.running.Store(nil)
	return s.Run(ctx)
}

// Resync asks the running daemon to copy tables again online: each is
// copied into a shadow table while the stream goes on, and swapped in.
// It returns once the copies are in line.
func (r *Replicator) Resync(ctx context.Context, tables []schema.TableName) error {
	s := r.running.Load()
	if s == nil {
		return errNotFollowing
	}
	return s.Resync(ctx, tables)
}

// Reload replaces the table selection while the daemon runs (a SIGHUP's
// config, which config.CheckReload allowed): tables it newly selects are
// copied online, tables it no longer selects stop being replicated (their
// ClickHouse tables stay).
func (r *Replicator) Reload(tables config.TablesConfig) error {
	s := r.running.Load()
	if s == nil {
		return errNotFollowing
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.Reload(ctx, tables)
}

var errNotFollowing = errors.New("the daemon is not following the binlog yet (starting, or in its initial snapshot): try again once `binlog2ch status` shows it replicating")

// streamError adds what to do to a binlog the source cannot send (rows it
// cannot complete say it themselves: source.PartialImageError).
func (r *Replicator) streamError(err error) error {
	var history *source.HistoryError
	if errors.As(err, &history) {
		// GTIDs cannot show which of this binlog's transactions binlog2ch
		// has: RESET MASTER numbers them again, so the checkpoint's may
		// name other transactions now.
		return fmt.Errorf("%w. binlog2ch cannot tell which of this binlog's transactions it has applied (RESET MASTER restarts GTID numbering). %s", err, recopyOnThisServer)
	}
	var xa *source.XAUnknownError
	if errors.As(err, &xa) {
		return fmt.Errorf("%w; a copy has them now: %s", err, router.Recopy)
	}
	var unreadable *source.UnreadableError
	if !errors.As(err, &unreadable) {
		return err
	}
	// A re-snapshot must start from empty tables: rows deleted in the
	// lost binlog would otherwise stay in ClickHouse.
	return fmt.Errorf("%w. If that binlog file was purged (SHOW BINARY LOGS lists those left), the changes in it are lost to replication; re-snapshot: stop binlog2ch, run `binlog2ch fullsync -recreate -checkpoint` (it copies every table into emptied tables and moves the checkpoint to the copy's position), and start it again. Or: drop its tables in ClickHouse, move %s and %s out of %s, and start it again: it copies every table from the current position, then follows the binlog",
		err, state.CheckpointFile, snapshot.InitialFile, r.cfg.StateDir)
}
