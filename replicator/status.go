package replicator

import (
	"encoding/json"
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
		Source: status.Server{Product: product, Version: r.server.Version, Addr: []string{r.cfg.MySQL.Addr}, ID: r.server.ID, Up: r.mysqlUp.Load()},
		Target: status.Server{Product: "ClickHouse", Version: r.sink.Caps().Version, Addr: r.cfg.ClickHouse.Addr, Cluster: r.cfg.ClickHouse.Cluster, Up: r.sink.Up()}}
	if in.Version == "" {
		in.Version = "devel"
	}
	if p := r.phase.Load(); p != nil {
		in.Phase = *p
	}
	if p := r.readPos.Load(); p != nil {
		in.ReadPosition = p.String()
	}
	if ss := r.snapshotProgress.Load(); ss != nil {
		in.Snapshot = make(map[schema.TableName]status.Progress, len(*ss))
		for _, t := range *ss {
			in.Snapshot[t.Name] = status.Progress{State: t.State, Copied: t.Confirmed, Estimated: max(t.Estimate, t.Confirmed)}
		}
	}
	if s := r.running.Load(); s != nil {
		in.Copies = copyStatus(s.copies.saved(), r.copyProgress.Load())
	}
	return in
}

// copyStatus is the copy state as the status shows it: a table the
// running batch copies (its latest progress, ps, is newer than the entry)
// is copying, with the rows it confirmed of MySQL's estimate; one the
// batch has not begun, or that waits for the next, is waiting.
func copyStatus(saved map[string]*state.TableCopy, ps *[]snapshot.TableStatus) map[schema.TableName]status.Copy {
	if len(saved) == 0 {
		return nil
	}
	live := map[schema.TableName]*snapshot.TableStatus{}
	if ps != nil {
		for i := range *ps {
			live[(*ps)[i].Name] = &(*ps)[i]
		}
	}
	out := make(map[schema.TableName]status.Copy, len(saved))
	for k, e := range saved {
		name, ok := schema.ParseTableName(k)
		if !ok {
			continue
		}
		c := status.CopyOf(e, confirmedRows(k, e.Progress))
		// The progress kept is the last batch's: a table of an earlier
		// batch (started over, failed, or asked for again since) has an
		// entry newer than its status there.
		if ts := live[name]; ts != nil && e.State == state.CopyCopying && !latest(ts).Before(e.Since) {
			switch ts.State {
			case snapshot.StateCopying, snapshot.StateDone:
				c.State, c.Copied, c.Estimated = status.StateCopying, ts.Confirmed, max(ts.Estimate, ts.Confirmed)
			case snapshot.StateFailed:
				if ts.Err != nil {
					c.Error = ts.Err.Error()
				}
			}
		}
		out[name] = c
	}
	return out
}

// latest is when a table's copy last changed state.
func latest(ts *snapshot.TableStatus) time.Time {
	if ts.End.After(ts.Start) {
		return ts.End
	}
	return ts.Start
}

// confirmedRows reads the rows of table key a copy's saved progress
// (snapshot.State) has confirmed in ClickHouse: 0 without any.
func confirmedRows(key string, progress json.RawMessage) uint64 {
	if len(progress) == 0 {
		return 0
	}
	var st snapshot.State
	if json.Unmarshal(progress, &st) != nil {
		return 0
	}
	if p := st.Tables[key]; p != nil {
		return p.Rows
	}
	return 0
}

// CheckpointCopies is a checkpoint's copy state as the status of a
// stopped daemon shows it (`binlog2ch status`): nothing copies, so a
// table being copied waits, with the rows its saved progress confirmed.
func CheckpointCopies(cp *state.Checkpoint) map[schema.TableName]status.Copy {
	if cp == nil {
		return nil
	}
	return copyStatus(cp.Tables, nil)
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

// trackCopies keeps the running online copy's progress for the status
// page.
func (r *Replicator) trackCopies(ts []snapshot.TableStatus) {
	kept := append([]snapshot.TableStatus(nil), ts...)
	r.copyProgress.Store(&kept)
}
