package replicator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/router"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
)

// resyncFile is the progress file of an offline resync.
const resyncFile = "resync.json"

// ResyncOffline copies tables again with no daemon running: into shadow
// tables at the server's current position, swapped in; the checkpoint
// stays where it is (the next start replays the tables' events from it,
// which lose to the copy by their versions), less the tables' entries in
// its copy state. The caller holds state_dir's lock.
func ResyncOffline(ctx context.Context, cfg *config.Config, log *slog.Logger, tables []schema.TableName) error {
	r, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer r.Close()
	if cfg.State.Lease == config.LeaseZooKeeper {
		if r.lease, err = state.TryAcquire(ctx, cfg, log); err != nil {
			return err
		}
		defer r.lease.Release()
	}
	if cfg.ClickHouse.Cluster != "" {
		return errors.New("resync into a ClickHouse cluster is not built yet: copy the tables with `binlog2ch fullsync -recreate -tables ...` while binlog2ch is stopped")
	}
	cp, err := r.checkpoints().Load(ctx)
	if err != nil {
		return err
	}
	if cp == nil || cp.Server != r.server.ID {
		return errors.New("resync needs the checkpoint of a daemon that followed this MySQL server: start `binlog2ch run` (its first start copies every table)")
	}
	if err := r.refuseVersioned(ctx, tables, "", "resync is to copy it"); err != nil {
		return err
	}
	pos, err := r.currentPosition(ctx)
	if err != nil {
		return err
	}
	st, err := snapshot.Load(cfg.StateDir, resyncFile)
	if err != nil {
		return err
	}
	if st == nil || st.Server != r.server.ID || st.FileOffset != cp.Offset {
		st = &snapshot.State{Server: r.server.ID, Position: pos, FileOffset: cp.Offset, Started: time.Now().UTC(), Tables: map[string]*snapshot.TableProgress{}, Recreate: true}
	}
	version, f, err := st.Version()
	if err != nil {
		return err
	}
	if f >= cp.Ceiling {
		// Every version in ClickHouse stays below the saved ceiling.
		cp.Ceiling = f + router.CeilingGap
		if err := r.checkpoints().Save(ctx, *cp); err != nil {
			return err
		}
	}
	opts := r.copyOptions(log, st, resyncFile)
	opts.Shadow, opts.Recreate = true, true
	opts.Progress = snapshot.LogProgress(log, 5*time.Second)
	if _, err := snapshot.Copy(ctx, opts, tables); err != nil {
		return err
	}
	for _, t := range tables {
		_, table := r.sink.TableOf(t)
		if _, err := r.sink.SwapIn(ctx, log, t, snapshot.ShadowName(table), version); err != nil {
			return fmt.Errorf("%s: swap in the copy: %w", t, err)
		}
		delete(cp.Tables, t.String())
	}
	if err := r.checkpoints().Save(ctx, *cp); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(cfg.StateDir, resyncFile))
	log.Info("tables copied again", "tables", tables, "position", st.Position.String())
	return nil
}
