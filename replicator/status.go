package replicator

import (
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// Phases of the daemon, as the status page names them.
const (
	phaseStarting    = "starting"
	phaseSnapshot    = "initial snapshot"
	phaseReplicating = "replicating"
)

// SetVersion sets the version the status page shows. Call it before Run.
func (r *Replicator) SetVersion(v string) { r.version = v }

func (r *Replicator) setPhase(p string) { r.phase.Store(&p) }

// noteCheckpoint records the checkpoint saved (or resumed from) for the
// status page.
func (r *Replicator) noteCheckpoint(cp *state.Checkpoint) {
	r.savedCP.Store(status.CheckpointOf(cp, r.checkpoints().String()))
}

// statusInfo is what the status page shows beside the metrics: read
// from atomics and from what New learnt, no server asked.
func (r *Replicator) statusInfo() status.Info {
	product := "MySQL"
	if r.server.Flavor == mysql.MariaDBFlavor {
		product = "MariaDB"
	}
	in := status.Info{Version: r.version, StartedAt: r.started, Ready: r.ready(), Alive: r.Alive(), Checkpoint: r.savedCP.Load(),
		Source: status.Server{Product: product, Version: r.server.Version, Addr: []string{r.cfg.MySQL.Addr}, ID: r.server.ID, Up: r.live.MySQLUp.Load()},
		Target: status.Server{Product: "ClickHouse", Version: r.sink.Caps().Version, Addr: r.cfg.ClickHouse.Addr, Cluster: r.cfg.ClickHouse.Cluster, Up: r.sink.Up()}}
	if in.Version == "" {
		in.Version = "devel"
	}
	if p := r.phase.Load(); p != nil {
		in.Phase = *p
	}
	if p := r.live.ReadPos.Load(); p != nil {
		in.ReadPosition = p.String()
	}
	if e := r.retention.Load(); e != nil {
		in.Retention = &status.Retention{File: e.File, Unlimited: e.Unlimited, Active: e.Active, Gone: e.Gone, Setting: e.Setting, MarginSeconds: r.cfg.Metrics.BinlogRetentionMargin.Seconds()}
		if !e.Unlimited && !e.Gone {
			h := e.Headroom(time.Now())
			in.Retention.HeadroomSeconds = &h
		}
	}
	if ss := r.snapshotProgress.Load(); ss != nil {
		in.Snapshot = make(map[schema.TableName]status.Progress, len(*ss))
		for _, t := range *ss {
			in.Snapshot[t.Name] = status.Progress{State: t.State, Copied: t.Confirmed, Estimated: max(t.Estimate, t.Confirmed)}
		}
	}
	if s := r.running.Load(); s != nil {
		in.Copies = snapshot.CopyStatus(s.CopyState(), s.CopyProgress())
	}
	return in
}

// trackSnapshot wraps a copy's progress callback to keep the latest
// statuses for the status page.
func (r *Replicator) trackSnapshot(next func([]snapshot.TableStatus)) func([]snapshot.TableStatus) {
	return func(ts []snapshot.TableStatus) {
		kept := append([]snapshot.TableStatus(nil), ts...)
		r.snapshotProgress.Store(&kept)
		if next != nil {
			next(ts)
		}
	}
}
