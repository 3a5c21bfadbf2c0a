package cascade

import (
	"context"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Runs of deletes. A parent table's DELETEs one by one (each its own
// transaction, or statement) would each cost the reader an insert round
// trip per child table and ClickHouse a part. The Follower instead holds
// back a run of the stream: DELETEs of one parent table that cascade, with
// the commits and the events of unrelated tables between them, until the
// run ends, then derives the whole run's cascades at once (read as of the
// first event's first version, written at the last one's last version)
// and lets the run go on in order. Nothing between may touch the tables
// the deletes cascade to, or the parent: such an event, a statement (DDL),
// another kind of parent event, maxRunDeletes held deletes or runWindow
// end the run first. The commits are held too, so the checkpoint cannot
// pass a held delete before its derived rows are in. Where a run ends
// depends on timing, so a replay may cut it elsewhere and write the same
// derived rows at another version; the replay reads (sql.go) do not
// depend on where earlier attempts cut.

// runWindow is how long a run may be held after its first delete.
const runWindow = 20 * time.Millisecond

// maxRunDeletes and maxRunBytes bound a run's held deletes.
const (
	maxRunDeletes = 512
	maxRunBytes   = 16 << 20
)

// deleteRun is a run of cascading deletes held back.
type deleteRun struct {
	parent   schema.TableName
	involved map[schema.TableName]bool // the parent and every table its rows cascade to
	ev       Event                     // the held deletes' rows, merged
	held     []heldEvent               // everything held, in order
	deletes  int
	bytes    int
	started  time.Time
}

// heldEvent is a held rows event or commit.
type heldEvent struct {
	rows   *source.Rows
	commit *source.Commit
}

// holdDelete takes a cascading DELETE into the run, starting one if none
// is held; false when it cannot be held (the caller derives it alone).
func (f *Follower) holdDelete(ctx context.Context, e source.Rows) (bool, error) {
	if e.Op != source.OpDelete || e.Version <= f.newestVersion || !f.opt.Replicates(e.Table) {
		// A table read only for its cascades is derived alone: a held
		// event would go to a writer it does not have.
		return false, nil
	}
	b := f.run
	if b != nil && b.parent != e.Table {
		if err := f.EndRun(ctx); err != nil {
			return false, err
		}
		b = nil
	}
	values, err := e.Values()
	if err != nil {
		return false, err
	}
	if b == nil {
		b = &deleteRun{parent: e.Table, involved: map[schema.TableName]bool{e.Table: true}, started: time.Now(),
			ev: Event{Table: e.Table, Schema: e.Schema, Delete: true, First: e.Version, At: e.At}}
		for _, t := range f.Descendants(e.Table) {
			b.involved[t] = true
		}
		f.run = b
		f.underWay(&UnderWay{Parent: e.Table, Since: b.started, Holding: true})
	}
	if e.Schema != b.ev.Schema && !binlog.SameColumns(e.Schema, b.ev.Schema) {
		// Rows of another shape (a table map changed without DDL read):
		// the run so far goes first.
		if err := f.EndRun(ctx); err != nil {
			return false, err
		}
		return f.holdDelete(ctx, e)
	}
	b.ev.Rows = append(b.ev.Rows, values...)
	b.ev.Last = e.Version + uint64(max(1, e.Versions)-1)
	b.held = append(b.held, heldEvent{rows: &e})
	b.deletes++
	b.bytes += len(e.Raw)
	if b.deletes >= maxRunDeletes || b.bytes >= maxRunBytes {
		return true, f.EndRun(ctx)
	}
	return true, nil
}

// Commit records a transaction boundary, or holds it with the run.
func (f *Follower) Commit(c source.Commit) {
	if f.run != nil {
		// Held with the run: the checkpoint must not pass its deletes yet.
		f.run.held = append(f.run.held, heldEvent{commit: &c})
		return
	}
	f.opt.Flusher.Commit(c)
}

// Tick ends the held run once runWindow has passed since its first
// delete. It returns how long the run may still be held (0: none held).
func (f *Follower) Tick() (time.Duration, error) {
	b := f.run
	if b == nil {
		return 0, nil
	}
	hold := runWindow - time.Since(b.started)
	if hold <= 0 {
		return 0, f.EndRun(f.ctx)
	}
	return hold, nil
}

// EndRun derives the held run's cascades, then lets its events and
// commits go on in order.
func (f *Follower) EndRun(ctx context.Context) error {
	b := f.run
	if b == nil {
		return nil
	}
	f.run = nil
	defer f.underWay(nil)
	if len(b.held) == 0 {
		return nil
	}
	if b.deletes > 0 {
		if err := f.derive(ctx, b.ev, false); err != nil {
			return err
		}
	}
	for _, it := range b.held {
		if it.commit != nil {
			f.opt.Flusher.Commit(*it.commit)
			continue
		}
		if err := f.send(ctx, *it.rows); err != nil {
			return err
		}
	}
	return nil
}

// endsRun reports whether a rows event must wait for the held run's
// cascades: it touches a table they change (or the parent).
func (f *Follower) endsRun(e source.Rows) bool {
	return f.run != nil && f.run.involved[e.Table]
}

// DropUncommitted drops the held events of the transaction a broken
// stream was reading: the stream reads them again from its last commit.
// The complete transactions held stay, to be let go by the next call
// that can.
func (f *Follower) DropUncommitted() {
	b := f.run
	if b == nil {
		return
	}
	last := -1
	for i, it := range b.held {
		if it.commit != nil {
			last = i
		}
	}
	if last < 0 {
		f.run = nil
		f.underWay(nil)
		return
	}
	b.held = b.held[:last+1]
	// The merged rows must match the events kept.
	b.ev.Rows, b.deletes, b.bytes = nil, 0, 0
	for _, it := range b.held {
		if it.rows == nil {
			continue
		}
		values, err := it.rows.Values()
		if err != nil {
			continue // decoded once already: cannot fail now
		}
		b.ev.Rows = append(b.ev.Rows, values...)
		b.ev.Last = it.rows.Version + uint64(max(1, it.rows.Versions)-1)
		b.deletes++
	}
}
