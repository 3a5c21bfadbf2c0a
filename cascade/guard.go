package cascade

import (
	"context"
	"fmt"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// What the Follower checks before a cascade is derived, and the tables it
// reads beyond the replicated ones.

// copyWindow refuses an ON UPDATE CASCADE that ran while the initial
// snapshot read its child tables: a row the copy read after the update
// shows it already, so a later cascade that moved a key into the value
// this one released (or this one, moving a row another moved here) would
// be applied to rows it never touched in MySQL. Deletes and SET NULL
// before it are not refused: only an update moves a key into a matched
// value without a row event, and stopping there stops before ClickHouse
// could end different (the way out copies again).
//
// A `fullsync` without -checkpoint copies tables while run's checkpoint
// stays behind: its window is the table's own (CopyWindows), from the
// copy's position, before which an update's rows lose to the copy's.
func (f *Follower) copyWindow(plan *Plan) error {
	ev := plan.ev
	if ev.Delete {
		return nil
	}
	for _, n := range plan.nodes {
		if n.kind != nodeUpdate {
			continue
		}
		if ev.First < f.opt.SnapshotEndVersion {
			return &Error{At: ev.At, Table: ev.Table, Msg: fmt.Sprintf("key %s says ON UPDATE CASCADE, and this update ran while the copy binlog2ch started from (the initial snapshot, or `fullsync -checkpoint`) read %s: the copy may hold the children as they were after it, so binlog2ch cannot tell which rows it moved (nor apply a later such update exactly). Copy the tables again from a point after it",
				n.fk, n.table)}
		}
		for _, w := range f.opt.CopyWindows {
			if w.Table == n.table && ev.First >= w.From && ev.First < w.To {
				return &Error{At: ev.At, Table: ev.Table, Msg: fmt.Sprintf("key %s says ON UPDATE CASCADE, and this update ran while `binlog2ch fullsync` copied %s: the copy may hold the children as they were after it, so binlog2ch cannot tell which rows it moved (nor apply a later such update exactly). Copy it again from a point after it: stop binlog2ch, run `binlog2ch fullsync -recreate -tables %s`, and start it again",
					n.fk, n.table, n.table)}
			}
		}
	}
	return nil
}

// planCollations gives the plan the collations of its tables' text
// columns (cached until DDL), and the MySQL comparison (collate.go).
func (f *Follower) planCollations(ctx context.Context, plan *Plan) error {
	var missing []schema.TableName
	for _, t := range plan.Tables {
		if _, ok := f.collations[t]; !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		if f.opt.MySQL == nil {
			return &Error{At: plan.ev.At, Table: plan.ev.Table, Msg: "no MySQL connection to read the key columns' collations"}
		}
		got, err := LoadCollations(ctx, f.opt.MySQL, missing)
		if err != nil {
			return fmt.Errorf("binlog %s: cascade of %s: %w", plan.ev.At, plan.ev.Table, err)
		}
		if f.collations == nil {
			f.collations = map[schema.TableName]map[string]Collation{}
		}
		for t, cols := range got {
			f.collations[t] = cols
		}
	}
	plan.Collations = map[schema.TableName]map[string]Collation{}
	for _, t := range plan.Tables {
		plan.Collations[t] = f.collations[t]
	}
	plan.Compare = MySQLComparer(f.opt.MySQL)
	return nil
}

// ReadsFor reports whether the stream must read the events of a table
// that is not replicated: its deletes or updates cascade, through any
// number of keys, into a replicated table. The stream's goroutine calls
// it (the stream's selection, with Replicates).
func (f *Follower) ReadsFor(t schema.TableName) bool {
	// Asked per table map read (not per rows event), against the
	// selection of now: not cached, so a reload needs nothing here.
	return f.keys != nil && !f.opt.Replicates(t) && reachesReplicated(f.keys, f.opt.Replicates, t)
}

// reachesReplicated reports whether a table's rows may cascade, through
// keys that act, into a replicated table.
func reachesReplicated(keys *Keys, replicated func(schema.TableName) bool, t schema.TableName) bool {
	seen := map[schema.TableName]bool{t: true}
	queue := []schema.TableName{t}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range keys.Referencing(p) {
			if k.OnDelete == ddl.FKRestrict && k.OnUpdate == ddl.FKRestrict {
				continue
			}
			if replicated(k.Child) {
				return true
			}
			if !seen[k.Child] {
				seen[k.Child] = true
				queue = append(queue, k.Child)
			}
		}
	}
	return false
}
