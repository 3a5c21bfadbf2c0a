package cascade

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// The router's cascades: InnoDB changes child rows for CASCADE and SET
// NULL without row events. The Follower keeps the keys as of the event
// the stream reads and, for a parent event that cascades, has the
// involved tables' pending rows flushed and the children's rows derived
// in ClickHouse (Runner.Run) before it hands the event on: the checkpoint
// cannot pass the event before its derived rows are in. See
// docs/replication.md.

// Flusher is the router as cascades need it: it flushes the tables'
// writers, and hands on the events and commits a Follower passed or held
// back.
type Flusher interface {
	// FlushTables has the pending rows of the tables' writers written to
	// ClickHouse, and waits until they are.
	FlushTables(ctx context.Context, tables []schema.TableName, at source.Position) error
	// Send hands a rows event to its table's writer.
	Send(ctx context.Context, e source.Rows) error
	// Commit records a transaction boundary.
	Commit(c source.Commit)
}

// Options wire a Follower to the daemon.
type Options struct {
	// Keys are the keys as of the position the stream starts at.
	Keys *Keys
	// Replicates reports whether a table's rows are in ClickHouse.
	Replicates func(schema.TableName) bool
	Flusher    Flusher
	Runner     *Runner
	// MySQL is the source, whose information_schema has a table's keys
	// when a DROP FOREIGN KEY names one the model does not know.
	MySQL *sql.DB
	Log   *slog.Logger
	// SnapshotEndVersion is the version of the binlog position when the
	// initial snapshot ended (0: none): this process's, or the one the
	// checkpoint kept (KeyState.CopyEnd). Checkpoints keep it on.
	SnapshotEndVersion uint64
	// CopyWindows are fullsync's copy windows (KeyState.CopyWindows),
	// kept on by checkpoints too.
	CopyWindows []CopyWindow
	// Recopy says how to make ClickHouse equal again after a cascade that
	// cannot be derived.
	Recopy string
	// KeysChanged runs when DDL changed the keys, so the stream asks
	// ReadsFor again of the tables it has seen (nil: nothing to do).
	KeysChanged func() error
	// BeforeRun runs once a cascading parent event's tables are flushed,
	// before its rows are derived; Derived once they are written, before
	// the event goes on, with what was derived and how long it took
	// (planning and flushing included). Either may be nil.
	BeforeRun func(parent schema.TableName)
	Derived   func(parent schema.TableName, res Result, took time.Duration)
	// UnderWay, when set, is told of the cascade under way as it starts
	// (a run of deletes held back, a parent's cascades being derived), and
	// of its end (nil), for the status page.
	UnderWay func(*UnderWay)
}

// UnderWay is a cascade under way: Parent's deletes held back since Since
// (Holding), or Parent's cascades being derived since Since.
type UnderWay struct {
	Parent  schema.TableName
	Since   time.Time
	Holding bool
}

// underWay tells Options.UnderWay, if set.
func (f *Follower) underWay(u *UnderWay) {
	if f.opt.UnderWay != nil {
		f.opt.UnderWay(u)
	}
}

// Follower is the cascades of the stream being read. It belongs to the
// stream's goroutine.
type Follower struct {
	opt Options
	// keys are the foreign keys as of the event being read; changes the
	// keys before each change the checkpoint has not passed.
	keys          *Keys
	changes       []keyChange
	saved         *KeyState // savedState's
	parents       map[schema.TableName]parentActions
	newestVersion uint64 // of the rows sent
	// collations caches the text columns' collations of the tables
	// cascades reached (collate.go); any DDL clears it.
	collations map[schema.TableName]map[string]Collation
	// run is a run of cascading deletes held back (held.go); ctx is the
	// stream's, for the Tick that ends it.
	run *deleteRun
	ctx context.Context
}

// NewFollower follows the stream from the keys of its start.
func NewFollower(opt Options) *Follower {
	return &Follower{opt: opt, keys: opt.Keys}
}

// keyChange is the keys before a statement that changed them, kept until
// the checkpoint passes the statement.
type keyChange struct {
	at     source.Position
	before *KeyState
}

// parentActions says whether a table's deletes and updates may cascade.
type parentActions struct{ del, upd bool }

// cascades reports whether events of table t with op may cascade.
func (f *Follower) cascades(t schema.TableName, op source.Op) bool {
	if f.parents == nil {
		f.parents = map[schema.TableName]parentActions{}
		for _, k := range f.keys.All() {
			ck := f.parents[k.Parent]
			ck.del = ck.del || k.OnDelete != ddl.FKRestrict
			ck.upd = ck.upd || k.OnUpdate != ddl.FKRestrict
			f.parents[k.Parent] = ck
		}
	}
	ck := f.parents[t]
	return op == source.OpDelete && ck.del || op == source.OpUpdate && ck.upd
}

// Rows hands a rows event on to its table's writer: after the cascades it
// makes are derived, or later, held back with a run of deletes.
func (f *Follower) Rows(ctx context.Context, e source.Rows) error {
	// InnoDB's cascades, unless the session had foreign_key_checks=0 (none
	// then) or the server wrote them itself (MySQL 9.6+'s SQL-layer keys).
	if f.keys != nil && e.Flags&(source.RowsNoForeignKeyChecks|source.RowsSQLForeignKeys) == 0 && f.cascades(e.Table, e.Op) {
		// The cascade decodes the rows (Values), and the values point
		// into the event's buffer: it stays the GC's.
		e.Lease = binlog.Lease{}
		f.ctx = ctx
		if err := f.needReferenced(e); err != nil {
			return err
		}
		held, err := f.holdDelete(ctx, e)
		if err != nil || held {
			return err
		}
		if err := f.EndRun(ctx); err != nil {
			return err
		}
		if err := f.cascade(ctx, e); err != nil {
			return err
		}
		if !f.opt.Replicates(e.Table) {
			return nil // read only for its cascades (ReadsFor): no writer
		}
	} else if !f.opt.Replicates(e.Table) {
		return nil
	} else if f.endsRun(e) {
		if err := f.EndRun(ctx); err != nil {
			return err
		}
	}
	return f.send(ctx, e)
}

// needReferenced refuses a partial image (binlog_row_image NOBLOB or
// MINIMAL) that lacks a column a cascading key of the table references:
// the cascade takes a deleted or updated row's key values from its before
// image, an updated row's new ones from its after image, and a value
// missing there would look NULL, which cascades nothing.
func (f *Follower) needReferenced(e source.Rows) error {
	if e.Partial == nil {
		return nil
	}
	del := e.Op == source.OpDelete
	for _, k := range f.keys.Referencing(e.Table) {
		if k.Action(del) == ddl.FKRestrict {
			continue
		}
		var cols []int
		for _, name := range k.RefColumns {
			if j := e.Schema.ColumnIndex(name); j >= 0 {
				cols = append(cols, j)
			}
		}
		why := "the cascade of foreign key " + k.String() + ", which references them"
		if err := e.Need(cols, true, why); err != nil {
			return err
		}
		if !del {
			if err := e.Need(cols, false, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// send hands a rows event to its table's writer.
func (f *Follower) send(ctx context.Context, e source.Rows) error {
	f.newestVersion = max(f.newestVersion, e.Version+uint64(max(1, e.Versions)-1))
	return f.opt.Flusher.Send(ctx, e)
}

// FollowDDL applies a statement's effects to the keys.
func (f *Follower) FollowDDL(ctx context.Context, st source.Statement) error {
	if f.keys == nil {
		return nil
	}
	before := f.savedState()
	f.collations = nil // a column's collation may have changed
	changed, unknown := f.keys.ApplyDDL(st.Effects)
	if len(unknown) > 0 {
		// Named otherwise by the server than binlog2ch named it (a name
		// InnoDB generated): the table's keys now are the best there is.
		for _, ef := range st.Effects {
			if ef.Kind != ddl.ForeignKeys || len(ef.DropForeignKeys) == 0 {
				continue
			}
			if err := f.reloadKeys(ctx, ef.Table); err != nil {
				return err
			}
			f.opt.Log.Warn("DROP FOREIGN KEY of a key binlog2ch did not know by that name; the table's keys are read from information_schema (those of now, not of this binlog position)",
				"table", ef.Table.String(), "names", strings.Join(unknown, ","), "binlog", st.At.String())
		}
		changed = true
	}
	if changed {
		f.changes = append(f.changes, keyChange{at: st.At, before: before})
		f.parents, f.saved = nil, nil
		if apply := f.opt.KeysChanged; apply != nil {
			// Tables not replicated may be read, or no longer, for cascades.
			return apply()
		}
	}
	return nil
}

// reloadKeys replaces a table's keys with information_schema's.
func (f *Follower) reloadKeys(ctx context.Context, t schema.TableName) error {
	now, err := LoadKeys(ctx, f.opt.MySQL)
	if err != nil {
		return err
	}
	st := now.State(func(x schema.TableName) bool { return x == t })
	var keep []ddl.ForeignKey
	for _, k := range st.Keys {
		if k.Child == t {
			keep = append(keep, k)
		}
	}
	f.keys.Restore(&KeyState{Tracked: []schema.TableName{t}, Keys: keep})
	f.saved = nil
	return nil
}

// KeysAt is the keys as of a checkpoint position: before the first
// key-changing statement after it. Statements it has passed are
// forgotten.
func (f *Follower) KeysAt(p source.Position) *KeyState {
	for len(f.changes) > 0 && !p.Before(f.changes[0].at) {
		f.changes = f.changes[1:]
	}
	if len(f.changes) > 0 {
		return f.changes[0].before
	}
	return f.savedState()
}

// savedState is the keys' state as the checkpoint keeps it, made again
// only when they change.
func (f *Follower) savedState() *KeyState {
	if f.saved == nil {
		f.saved = f.keys.State(f.opt.Replicates)
		f.saved.CopyEnd = f.opt.SnapshotEndVersion
		f.saved.CopyWindows = f.opt.CopyWindows
	}
	return f.saved
}

// cascade derives the rows a parent event's cascades changed, before the
// event goes to its writer.
func (f *Follower) cascade(ctx context.Context, e source.Rows) error {
	values, err := e.Values()
	if err != nil {
		return err
	}
	ev := Event{Table: e.Table, Schema: e.Schema, Delete: e.Op == source.OpDelete, Rows: values,
		First: e.Version, Last: e.Version + uint64(max(1, e.Versions)-1), At: e.At}
	return f.derive(ctx, ev, ev.First <= f.newestVersion)
}

// derive plans and runs one cascade: the rows of one parent event, or of
// a run of its DELETEs. older: rows newer than the event were written
// already (an XA transaction's, applied at its XA COMMIT with the
// versions of its XA PREPARE).
func (f *Follower) derive(ctx context.Context, ev Event, older bool) error {
	start := time.Now()
	plan, err := PlanEvent(f.keys, ev, f.opt.Replicates)
	if err != nil || plan == nil {
		return err
	}
	log := f.opt.Log
	if len(plan.Tables) == 0 {
		return nil // it reaches only tables not replicated, which lead to none that is (PlanEvent)
	}
	f.underWay(&UnderWay{Parent: ev.Table, Since: start})
	defer f.underWay(nil)
	if err := f.copyWindow(plan); err != nil {
		return fmt.Errorf("%w. ClickHouse cannot be kept equal to MySQL past this event; %s", err, f.opt.Recopy)
	}
	if err := f.planCollations(ctx, plan); err != nil {
		return err
	}
	plan.Replay = older
	// The as-of reads need every earlier row of these tables in ClickHouse.
	if err := f.opt.Flusher.FlushTables(ctx, plan.Tables, ev.At); err != nil {
		return err
	}
	if hook := f.opt.BeforeRun; hook != nil {
		hook(ev.Table)
	}
	res, err := f.opt.Runner.Run(ctx, log, plan)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return fmt.Errorf("%w. ClickHouse cannot be kept equal to MySQL past this event; %s", err, f.opt.Recopy)
		}
		return err
	}
	if derived := f.opt.Derived; derived != nil {
		derived(ev.Table, res, time.Since(start))
	}
	return nil
}

// Descendants are the replicated tables a table's rows cascade to,
// through any number of keys: a copy of the table must copy them too, as
// their cascades through it cannot be derived from the copy.
func (f *Follower) Descendants(t schema.TableName) []schema.TableName {
	if f.keys == nil {
		return nil
	}
	seen := map[schema.TableName]bool{t: true}
	var out []schema.TableName
	queue := []schema.TableName{t}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range f.keys.Referencing(p) {
			if !k.Cascades() || seen[k.Child] || !f.opt.Replicates(k.Child) {
				continue
			}
			seen[k.Child] = true
			out = append(out, k.Child)
			queue = append(queue, k.Child)
		}
	}
	return out
}
