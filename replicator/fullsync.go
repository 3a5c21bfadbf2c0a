package replicator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/partitioning"
	"github.com/binlog2ch/binlog2ch/router"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// FullSyncOptions are the choices of one `binlog2ch fullsync`.
type FullSyncOptions struct {
	// Tables to copy; nil copies every table the config selects.
	Tables []schema.TableName
	// Recreate drops each target table and copies it from the start. An
	// interrupted -recreate copy run again with Recreate resumes: tables
	// it recreated are not dropped again.
	Recreate bool
	// Progress, when set, is called about four times a second with every
	// table's status, and once more at the end.
	Progress func([]snapshot.TableStatus)
	// SetCheckpoint, after a complete copy, saves run's checkpoint at the
	// copy's binlog position (and drops an unfinished initial snapshot's
	// state), so run follows the binlog from there: the way back after the
	// binlog at run's checkpoint was purged. It needs Recreate and every
	// table, since events before the position are skipped: only a full
	// copy into emptied tables holds their effects (rows deleted meanwhile
	// included). run must be stopped meanwhile.
	//
	// With Tables it repairs a GTID gap instead (failover.go): run's
	// checkpoint is of the server before a failover, and this server lacks
	// transactions that changed those tables. They are copied from this
	// server, and run goes on by GTID from what both servers hold.
	SetCheckpoint bool
}

// FullSync copies tables once (`binlog2ch fullsync`), resuming an
// interrupted run recorded in state_dir. A table that fails does not stop
// the others; the error names every failed table.
func (r *Replicator) FullSync(ctx context.Context, opts FullSyncOptions) ([]snapshot.TableStatus, error) {
	if opts.SetCheckpoint && !opts.Recreate {
		return nil, errors.New("setting run's checkpoint needs a -recreate copy of every configured table (no -tables): events before the copy's position are skipped")
	}
	if opts.SetCheckpoint && r.cfg.State.Lease == config.LeaseZooKeeper {
		// Moving a shared checkpoint under a running daemon would be lost
		// or undone: hold the lease for the whole copy, and refuse rather
		// than wait while a daemon holds it (it may never let go).
		l, err := state.TryAcquire(ctx, r.cfg, r.log)
		var held *state.LeaseHeldError
		if errors.As(err, &held) {
			return nil, fmt.Errorf("%w: a binlog2ch run replicates with this checkpoint, and -checkpoint would move it under that daemon. Stop it first (a daemon that died frees the lease when its ZooKeeper session expires, within state.session_timeout, %s), or, to copy tables again while it runs, use `binlog2ch resync -config FILE -tables db.t[,...]`", err, r.cfg.State.SessionTimeout)
		}
		if err != nil {
			return nil, err
		}
		r.lease = l
		defer l.Release()
	}
	var repair *gapRepair
	if opts.SetCheckpoint && opts.Tables != nil {
		var err error
		if repair, err = r.planGapRepair(ctx, opts.Tables); err != nil {
			return nil, err
		}
	}
	st, err := snapshot.Load(r.cfg.StateDir, snapshot.FullSyncFile)
	if err != nil {
		return nil, err
	}
	switch {
	case st != nil && st.Server != r.server.ID:
		r.log.Warn("the interrupted fullsync in state_dir was of another MySQL server; starting over", "its_server", st.Server, "server", r.server.ID)
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
		pos, gtids, layouts, err := r.copyPosition(ctx)
		if err != nil {
			return nil, err
		}
		st = &snapshot.State{Server: r.server.ID, Position: pos, GTID: gtids, Started: time.Now().UTC(), Tables: map[string]*snapshot.TableProgress{}, Recreate: opts.Recreate, Partitions: layouts}
		// The copy's versions must rank with run's on this history.
		cp, err := r.checkpoints().Load(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case repair != nil:
			st.FileOffset = repair.offset
		case cp == nil:
		case cp.Server == r.server.ID:
			st.FileOffset = cp.Offset
			// The copy's versions must stay below run's saved version
			// ceiling, where a failover would start the next history.
			if f, _ := source.VersionFile(source.MustFileIndex(pos.File), cp.Offset); cp.Ceiling != 0 && f >= cp.Ceiling && !opts.SetCheckpoint {
				return nil, fmt.Errorf("run's checkpoint in %s is at %s, more than %d binlog files behind this copy's position %s: start `binlog2ch run` and let it catch up first (the copy's row versions would reach past what run has saved as its version ceiling)", r.checkpoints(), cp.Position, router.CeilingGap, pos)
			}
		case !opts.SetCheckpoint:
			return nil, fmt.Errorf("run's checkpoint in %s is on MySQL server %s, not %s: start `binlog2ch run` first, so it moves to this server's binlog (or, copying every table, use -recreate -checkpoint)", r.checkpoints(), cp.Server, r.server.ID)
		}
		r.log.Info("fullsync: binlog position recorded before reading any table", "position", pos.String())
	}
	if err := r.refuseVersioned(ctx, opts.Tables, "", "fullsync is to copy it"); err != nil {
		return nil, err
	}
	tables := opts.Tables
	if tables == nil {
		if tables, err = catalog.ListTables(ctx, r.my, r.cfg); err != nil {
			return nil, err
		}
	}
	copyOpts := r.copyOptions(r.log, st, snapshot.FullSyncFile)
	copyOpts.Recreate, copyOpts.Progress = opts.Recreate, opts.Progress
	statuses, err := snapshot.Copy(ctx, copyOpts, tables)
	var end uint64
	if err == nil && repair == nil {
		end, err = r.copyEndVersion(ctx, st)
	}
	if err == nil {
		st.Complete = true
		err = snapshot.Save(r.cfg.StateDir, snapshot.FullSyncFile, st)
	}
	switch {
	case err == nil && repair != nil:
		err = r.saveRepairedCheckpoint(st, repair)
	case err == nil && opts.SetCheckpoint:
		err = r.resetCheckpoint(st, end)
	case err == nil:
		err = r.handOver(ctx, st, tables, end)
	}
	return statuses, err
}

// handOver tells run's checkpoint what a fullsync without -checkpoint
// copied: the tables leave run's copy state (a copy asked for, or a
// failed table; run would otherwise copy them again, or, on a cluster,
// where it cannot, stop again), and each gets its copy window, up to end,
// for the ON UPDATE CASCADEs run must refuse (cascade.KeyState). Their
// events from run's checkpoint on lose to this copy by their versions.
func (r *Replicator) handOver(ctx context.Context, st *snapshot.State, tables []schema.TableName, end uint64) error {
	if r.cfg.State.Lease == config.LeaseZooKeeper && r.lease == nil {
		// The checkpoint is written under the lease, or not at all.
		l, err := state.TryAcquire(ctx, r.cfg, r.log)
		if err != nil {
			r.log.Info("fullsync: run's copy state is left as it is (the lease is not to be had); run copies the tables it lists again", "reason", err)
			return nil
		}
		r.lease, r.store = l, nil
		defer func() { l.Release(); r.lease, r.store = nil, nil }()
	}
	cp, err := r.checkpoints().Load(ctx)
	if err != nil || cp == nil {
		return err
	}
	from, _, err := st.Version()
	if err != nil {
		return err
	}
	if cp.ForeignKeys == nil {
		cp.ForeignKeys = &cascade.KeyState{}
	}
	for _, t := range tables {
		cp.ForeignKeys.CopyWindows = cascade.WithWindow(cp.ForeignKeys.CopyWindows, cascade.CopyWindow{Table: t, From: from, To: end})
	}
	n := len(cp.Tables)
	for _, t := range tables {
		delete(cp.Tables, t.String())
	}
	if len(cp.Tables) != n {
		r.log.Info("fullsync: the tables copied are no longer in run's copy state", "left", len(cp.Tables))
	}
	return r.checkpoints().Save(ctx, *cp)
}

// resetCheckpoint moves run's checkpoint to a complete copy's position.
func (r *Replicator) resetCheckpoint(st *snapshot.State, end uint64) error {
	p := st.Position
	if err := os.Remove(filepath.Join(r.cfg.StateDir, snapshot.InitialFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the initial snapshot's state: %w", err)
	}
	cp := r.snapshotCheckpoint(st)
	// As the initial snapshot's: run refuses an ON UPDATE CASCADE of the
	// copy's time, which the copy may show already (package cascade).
	cp.ForeignKeys = &cascade.KeyState{CopyEnd: end}
	if err := r.checkpoints().Save(context.Background(), *cp); err != nil {
		return err
	}
	r.log.Warn("run's checkpoint set to the copy's position: run follows the binlog from there", "position", p.String())
	return nil
}

// refuseVersioned stops a copy of tables (nil: every table the config
// selects) before it starts when one is system-versioned: binlog2ch does
// not replicate them (router.VersionedError).
func (r *Replicator) refuseVersioned(ctx context.Context, tables []schema.TableName, at, where string) error {
	var versioned []schema.TableName
	var err error
	if tables == nil {
		versioned, err = catalog.ListVersioned(ctx, r.my, r.cfg)
	} else {
		versioned, err = catalog.Versioned(ctx, r.my, tables)
	}
	if err != nil || len(versioned) == 0 {
		return err
	}
	return router.VersionedError(versioned[0], at, where)
}

// copyPosition is the binlog position a copy (the initial snapshot,
// fullsync) starts at, its GTIDs, and, with on_partition_maintenance:
// apply, the partition layouts as of it, for the checkpoint the copy
// hands over to. The layouts are information_schema's read between two
// reads of the server's position that agree: no event was written
// meanwhile, and a partitioning DDL not yet in the binlog cannot show in
// them, since reading a table's partitions waits for the metadata lock
// its ALTER holds until the statement is written to the binlog (the rule
// router.resolveLayouts also stands on). A busy server may write between
// the reads every time: then no layouts are saved, and they are known
// once run has caught up with the server, as before.
func (r *Replicator) copyPosition(ctx context.Context) (source.Position, string, *state.PartitionState, error) {
	if r.cfg.Replication.OnPartitionMaintenance != config.OnApply {
		p, gtids, err := source.CurrentGTIDPosition(ctx, r.my, r.server.Flavor)
		return p, gtids, nil, err
	}
	const tries = 5
	var p source.Position
	var gtids string
	for range tries {
		var err error
		if p, gtids, err = source.CurrentGTIDPosition(ctx, r.my, r.server.Flavor); err != nil {
			return p, "", nil, err
		}
		all, err := catalog.LoadAllPartitions(ctx, r.my)
		if err != nil {
			return p, "", nil, err
		}
		after, err := r.currentPosition(ctx)
		if err != nil {
			return p, "", nil, err
		}
		if after == p {
			r.log.Info("partition layouts read at the copy's position, for the checkpoint it hands over to", "position", p.String(), "partitioned_tables", len(all))
			return p, gtids, partitioning.Of(all, r.sel.Current()), nil
		}
	}
	r.log.Warn("partition layouts not read at the copy's position: the server wrote to its binlog during each read; a TRUNCATE or DROP PARTITION read before binlog2ch run has caught up with the server stops replication (replication.on_partition_maintenance: apply)",
		"position", p.String(), "tries", tries)
	return p, gtids, nil, nil
}

// copyEndVersion is the version of the server's binlog position now, a
// copy from st having just read its last rows: an ON UPDATE CASCADE below
// it may show in the copy already.
func (r *Replicator) copyEndVersion(ctx context.Context, st *snapshot.State) (uint64, error) {
	end, err := r.currentPosition(ctx)
	if err != nil {
		return 0, fmt.Errorf("read where the copy ended: %w", err)
	}
	idx, err := source.FileIndex(end.File)
	if err != nil {
		return 0, err
	}
	f, ok := source.VersionFile(idx, st.FileOffset)
	if !ok {
		return 0, fmt.Errorf("the copy ended at %s, with version offset %d outside the 20 bits row versions hold", end, st.FileOffset)
	}
	return source.RowVersion(f, end.Pos, source.MaxVersionRow), nil
}
