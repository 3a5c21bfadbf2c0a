package router

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// commitPoint is a transaction boundary: resuming at pos replays no partial
// transaction. seq is the number of messages dispatched before it.
type commitPoint struct {
	seq    uint64
	pos    source.Position
	at     int64 // timestamp (Unix ns) of the transaction's last event; 0: unknown
	server string
	gtid   string
	hist   source.History
	offset int64
	byGTID bool // resume by gtid (state.StreamState.ResumeByGTID)
}

// CeilingGap is how many binlog files past the one being read a saved
// version ceiling reaches: a save every that many files keeps it ahead.
const CeilingGap = 16

// liveWithin is how recent (ns) the events read must be for the reader to
// count as live.
const liveWithin = int64(3 * time.Second)

// Commit records a transaction boundary.
func (s *Router) Commit(c source.Commit) {
	s.cascades.Commit(c) // it may hold c with a run of deletes
}

// commit records a transaction boundary.
func (s *Router) commit(c source.Commit) {
	// A restart must start at Resume: it is behind Position while an XA
	// transaction prepared before is still open.
	s.commits = append(s.commits, commitPoint{seq: s.seq, pos: c.Resume, at: c.Timestamp, server: s.server.ID, gtid: c.GTID, hist: c.History, offset: c.Offset})
	s.readVersionFile, _ = source.VersionFile(c.File, c.Offset)
	s.m.XAPrepared.Set(float64(c.Prepared))
	pos := c.Position
	s.readPos.Store(&pos)
	s.m.ReadFile.Set(float64(c.File))
	s.m.ReadPos.Set(float64(c.Position.Pos))
}

// Tick checkpoints once checkpoint.interval has passed since the last
// save; woken early by a writer's flush, it asks to be called again then.
func (s *Router) Tick(woken bool) (time.Duration, error) {
	// The event just handled read the clock: one read per event, not two
	// (a clock read cost ~2% of a catch-up's CPU on a VM here).
	now := s.eventNow
	if woken || now.IsZero() {
		now = time.Now()
	}
	s.eventNow = time.Time{}
	if now.Sub(s.pendingNoted) >= pendingEvery {
		s.notePending(now)
	}
	if err := s.takeFailures(); err != nil { // failed tables marked (failed.go)
		return 0, err
	}
	s.resolvePartitions()          // layouts not known, read once caught up (partitions.go)
	hold, err := s.cascades.Tick() // until the held run of cascading deletes ends
	if err != nil {
		return 0, err
	}
	if s.copies != nil {
		if err := s.tickCopies(s.ctx); err != nil {
			return 0, err
		}
	}
	if s.flushes.Load() && s.flushes.Swap(false) {
		s.durable(false)
	}
	interval := s.cfg.Checkpoint.Interval
	since := now.Sub(s.lastSaved)
	if since >= interval {
		return hold, s.checkpoint(false)
	}
	if woken && (hold == 0 || interval-since < hold) {
		return interval - since, nil
	}
	return hold, nil
}

// pending reports whether any writer holds rows not yet in ClickHouse.
func (s *Router) pending() bool {
	for _, rt := range s.all {
		if rt.w.Flushed() < rt.dispatched {
			return true
		}
	}
	return false
}

// checkpoint saves the newest transaction boundary before which every
// dispatched row is in ClickHouse. final is set at shutdown, when every
// writer has flushed.
func (s *Router) checkpoint(final bool) error { return s.save(final, false) }

// raiseCeiling saves the checkpoint with a version ceiling above f before
// rows of a file with F f go out: every version in ClickHouse then stays
// below the ceiling saved, where a new binlog history would start.
func (s *Router) raiseCeiling(ctx context.Context, f uint32) error {
	s.readVersionFile = max(s.readVersionFile, f)
	for {
		if err := s.save(false, true); err != nil {
			return err
		}
		if f < s.ceiling {
			return nil
		}
		// Not saved (a ClickHouse store's hiccup, logged): rows wait.
		s.checkIn()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// save saves the newest transaction boundary before which every
// dispatched row is in ClickHouse; force saves it even when unchanged.
func (s *Router) save(final, force bool) error {
	r := s
	if hook := r.hooks.Checkpointed; hook != nil {
		defer hook()
	}
	if hold := r.hooks.HoldCheckpoint; hold != nil && !final && !force && hold() {
		return nil
	}
	s.lastSaved = time.Now()
	i := s.durable(final)
	cp := s.commits[i].pos
	s.commits = s.commits[i:]
	// Forget writers that have finished.
	s.all = slices.DeleteFunc(s.all, func(rt *tableWriter) bool { return rt.w.Done() && rt.closed })
	copies := s.copies.saved()
	point := s.commits[0]
	// Tables stored past the position move on while it stands still (a
	// table with rows pending holds it): their record is saved too.
	stored := s.storedPast(point)
	if cp == s.saved && !force && !s.copiesChanged(copies) && maps.Equal(stored, s.savedStored) {
		return nil
	}
	ceiling := max(s.ceiling, s.readVersionFile+CeilingGap)
	ext := state.StreamState{GTID: point.gtid, History: point.hist, Offset: point.offset, Ceiling: ceiling, TableGTIDs: s.stream.TableGTIDs(), ResumeByGTID: point.byGTID}
	if s.cascades != nil {
		ext.ForeignKeys = s.cascades.KeysAt(cp)
	}
	ext.Partitions = s.partitionsAt(cp)
	if g := s.stream.GTIDs(); !g.IsEmpty() {
		ext.ReadGTID = g.String()
	}
	sel := r.selection()
	ext.Selection = &state.Selection{Include: sel.Include, Exclude: sel.Exclude}
	ext.Tables = copies
	ext.Stored = stored
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	saved := state.Checkpoint{Position: cp, Server: point.server, SavedAt: time.Now().UTC(), StreamState: ext}
	err := r.checkpoints().Save(ctx, saved)
	cancel()
	if err != nil {
		r.m.Errors.WithLabelValues(metrics.StageCheckpoint).Inc()
		if r.cfg.State.Store == config.StoreClickHouse && !errors.Is(err, state.ErrLeaseLost) && !final {
			// A ClickHouse hiccup only delays the shared checkpoint (a
			// successor would replay more); the next interval retries.
			r.log.Warn("checkpoint not saved; retrying at the next interval", "error", err)
			return nil
		}
		return err
	}
	s.saved, s.ceiling, s.savedCopies, s.savedStored = cp, ceiling, copies, stored
	r.savedPos.Store(&cp)
	r.noteCheckpoint(&saved)
	r.m.CheckpointTS.Set(float64(time.Now().UnixNano()) / 1e9)
	if idx, err := source.FileIndex(cp.File); err == nil {
		r.m.CheckpointFile.Set(float64(idx))
	}
	r.m.CheckpointPos.Set(float64(cp.Pos))
	return nil
}

// durable is the index in commits of the newest transaction boundary
// before which every dispatched row is in ClickHouse (every row read,
// when final), and moves the lag's clock up to its commit time.
func (s *Router) durable(final bool) int {
	safe := s.seq
	if !final {
		for _, rt := range s.all {
			if f := rt.w.Flushed(); f < rt.dispatched && f < safe {
				safe = f
			}
		}
	}
	i := len(s.commits) - 1
	for i > 0 && s.commits[i].seq > safe {
		i--
	}
	if at := s.commits[i].at; at != 0 {
		metrics.AdvanceTo(&s.m.Durable, at)
	}
	if i == len(s.commits)-1 && !s.pending() {
		// Everything read is in: as current as the newest event read.
		metrics.AdvanceTo(&s.m.Durable, s.lastTS)
	}
	return i
}

// storedNow notes a writer's flush for Tick, which moves the lag's clock
// then rather than at the next checkpoint, and wakes the reader.
func (s *Router) storedNow() {
	s.flushes.Store(true)
	s.stream.Wake()
}

// copiesChanged reports whether the copy state differs from the one last
// saved: a copy's progress is saved even while the position stands still.
func (s *Router) copiesChanged(now map[string]*state.TableCopy) bool {
	if len(now) != len(s.savedCopies) {
		return true
	}
	for k, e := range now {
		o := s.savedCopies[k]
		if o == nil || o.State != e.State || o.Reason != e.Reason || string(o.Progress) != string(e.Progress) {
			return true
		}
	}
	return false
}
