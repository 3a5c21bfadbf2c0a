package replicator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Foreign-key cascades: InnoDB changes child rows for CASCADE and SET NULL
// without row events. The router keeps the keys as of the event it reads
// and, for a parent event that cascades, has the involved tables' pending
// rows flushed and the children's rows derived in ClickHouse (sink.
// RunCascade) before it hands the event on: the checkpoint cannot pass the
// event before its derived rows are in. See docs/replication.md.

// fkChange is the keys before a statement that changed them, kept until
// the checkpoint passes the statement.
type fkChange struct {
	at     source.Position
	before *source.FKState
}

// cascadeKinds says whether a table's deletes and updates may cascade.
type cascadeKinds struct{ del, upd bool }

// loadForeignKeys reads the keys at start: information_schema's, with the
// checkpoint's over them (those of its position) when it has them.
func (r *Replicator) loadForeignKeys(ctx context.Context, from *state.Checkpoint) (*source.ForeignKeys, error) {
	keys, err := source.LoadForeignKeys(ctx, r.my)
	if err != nil {
		return nil, err
	}
	naming := r.server.NewForeignKeys()
	keys.InlineReferences, keys.IndexNamesKeys = naming.InlineReferences, naming.IndexNamesKeys
	if from != nil && from.ForeignKeys != nil {
		now := keys.Clone()
		keys.Restore(from.ForeignKeys)
		if !now.Equal(keys) {
			r.log.Info("foreign keys: using those of the checkpoint's position; the binlog from there changes them into information_schema's")
		}
	}
	return keys, nil
}

// replicates reports whether a table's rows are in ClickHouse.
func (r *Replicator) replicates(t schema.TableName) bool {
	return !schema.SystemDatabase(t.Database) && r.cfg.Replicates(t.Database, t.Table)
}

// reportForeignKeys logs the cascading keys among the replicated tables,
// and warns about what cannot be derived.
func (r *Replicator) reportForeignKeys(keys *source.ForeignKeys) {
	log := r.log.With("component", "foreign_keys")
	n := 0
	collations := r.textKeyCollations(keys)
	for _, k := range keys.All() {
		if !k.Cascades() && k.OnDelete != ddl.FKSetDefault && k.OnUpdate != ddl.FKSetDefault {
			continue
		}
		child, parent := r.replicates(k.Child), r.replicates(k.Parent)
		switch {
		case child && parent:
			n++
			for _, c := range k.Columns {
				if coll := collations[k.Child.String()+"."+c]; coll != "" {
					// Derived cascades match the child's key to the
					// parent's byte for byte; MySQL matched it by the
					// collation.
					log.Warn("cascading foreign key on a text column with a collation: binlog2ch matches the child's key to the parent's byte for byte, MySQL by the collation, so a child row whose key differs from its parent's only by letter case, accents or trailing spaces is not cascaded in ClickHouse. Keep such keys identical, or run binlog2ch verify after cascades",
						"key", k.Name, "child", k.Child.String(), "column", c, "collation", coll)
					break
				}
			}
			log.Info("cascading foreign key: binlog2ch derives the child rows InnoDB changes without row events",
				"key", k.Name, "child", k.Child.String(), "columns", strings.Join(k.Columns, ","), "parent", k.Parent.String(),
				"references", strings.Join(k.RefColumns, ","), "on_delete", k.OnDelete.String(), "on_update", k.OnUpdate.String())
			if k.OnDelete == ddl.FKSetDefault || k.OnUpdate == ddl.FKSetDefault {
				log.Warn("SET DEFAULT foreign key: InnoDB refuses it; a cascade through it stops replication", "key", k.Name, "child", k.Child.String())
			}
		case child:
			log.Warn("replicated table with a cascading foreign key to a table that is not replicated: the parent's deletes and updates are not read, so the cascades they make in this table are not applied and ClickHouse keeps rows MySQL no longer has. Replicate the parent too (tables.include), or exclude this table",
				"key", k.Name, "child", k.Child.String(), "parent", k.Parent.String(), "on_delete", k.OnDelete.String(), "on_update", k.OnUpdate.String())
		case parent:
			log.Debug("cascading foreign key into a table that is not replicated; nothing to derive", "key", k.Name, "child", k.Child.String(), "parent", k.Parent.String())
		}
	}
	switch {
	case r.server.NativeForeignKeys == "OFF":
		log.Info("the server applies foreign keys above InnoDB (innodb_native_foreign_keys=OFF) and writes its cascades' rows to the binlog: binlog2ch derives nothing for events so flagged", "cascading_keys", n)
	case n > 0 && r.cfg.ClickHouse.Cluster != "":
		log.Warn("cascading foreign keys with a ClickHouse cluster: binlog2ch does not derive cascades in a cluster yet, and stops at the first parent event that cascades", "cascading_keys", n)
	case n > 0:
		log.Info("foreign keys read", "cascading_keys", n, "native_foreign_keys", r.server.NativeForeignKeys)
	default:
		// Nothing to derive: not worth a line at INFO on every start.
		log.Debug("foreign keys read", "cascading_keys", n, "native_foreign_keys", r.server.NativeForeignKeys)
	}
}

// textKeyCollations reads the collations other than binary ones of the
// cascading keys' child columns, as "db.table.column" -> collation; a
// failed read is logged and leaves the map empty.
func (r *Replicator) textKeyCollations(keys *source.ForeignKeys) map[string]string {
	var tables []schema.TableName
	seen := map[schema.TableName]bool{}
	for _, k := range keys.All() {
		if k.Cascades() && !seen[k.Child] {
			seen[k.Child] = true
			tables = append(tables, k.Child)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := catalog.TextCollations(ctx, r.my, tables)
	if err != nil {
		r.log.Warn("cannot read the collations of the cascading keys' columns", "error", err)
		return map[string]string{}
	}
	return out
}

// cascades reports whether events of table t with op may cascade.
func (s *router) cascades(t schema.TableName, op source.Op) bool {
	if s.cascadeParents == nil {
		s.cascadeParents = map[schema.TableName]cascadeKinds{}
		for _, k := range s.fks.All() {
			ck := s.cascadeParents[k.Parent]
			ck.del = ck.del || k.OnDelete != ddl.FKRestrict
			ck.upd = ck.upd || k.OnUpdate != ddl.FKRestrict
			s.cascadeParents[k.Parent] = ck
		}
	}
	ck := s.cascadeParents[t]
	return op == source.OpDelete && ck.del || op == source.OpUpdate && ck.upd
}

// followForeignKeys applies a statement's effects to the keys.
func (s *router) followForeignKeys(ctx context.Context, st source.Statement) error {
	if s.fks == nil {
		return nil
	}
	before := s.fkState()
	changed, unknown := s.fks.ApplyDDL(st.Effects)
	if len(unknown) > 0 {
		// Named otherwise by the server than binlog2ch named it (a name
		// InnoDB generated): the table's keys now are the best there is.
		for _, ef := range st.Effects {
			if ef.Kind != ddl.ForeignKeys || len(ef.DropForeignKeys) == 0 {
				continue
			}
			if err := s.reloadForeignKeys(ctx, ef.Table); err != nil {
				return err
			}
			s.r.log.Warn("DROP FOREIGN KEY of a key binlog2ch did not know by that name; the table's keys are read from information_schema (those of now, not of this binlog position)",
				"table", ef.Table.String(), "names", strings.Join(unknown, ","), "binlog", st.At.String())
		}
		changed = true
	}
	if changed {
		s.fkBefore = append(s.fkBefore, fkChange{at: st.At, before: before})
		s.cascadeParents, s.fkSaved = nil, nil
	}
	return nil
}

// reloadForeignKeys replaces a table's keys with information_schema's.
func (s *router) reloadForeignKeys(ctx context.Context, t schema.TableName) error {
	now, err := source.LoadForeignKeys(ctx, s.r.my)
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
	s.fks.Restore(&source.FKState{Tracked: []schema.TableName{t}, Keys: keep})
	s.fkSaved = nil
	return nil
}

// foreignKeysAt is the keys as of a checkpoint position: before the
// first key-changing statement after it. Statements it has passed are
// forgotten.
func (s *router) foreignKeysAt(p source.Position) *source.FKState {
	for len(s.fkBefore) > 0 && !p.Before(s.fkBefore[0].at) {
		s.fkBefore = s.fkBefore[1:]
	}
	if len(s.fkBefore) > 0 {
		return s.fkBefore[0].before
	}
	return s.fkState()
}

// fkState is the keys' state as the checkpoint keeps it, made again only
// when they change.
func (s *router) fkState() *source.FKState {
	if s.fkSaved == nil {
		s.fkSaved = s.fks.State(s.r.replicates)
	}
	return s.fkSaved
}

// cascade derives the rows a parent event's cascades changed, before the
// event goes to its writer.
func (s *router) cascade(ctx context.Context, e source.Rows) error {
	values, err := e.Values()
	if err != nil {
		return err
	}
	ev := sink.CascadeEvent{Table: e.Table, Schema: e.Schema, Delete: e.Op == source.OpDelete, Rows: values,
		First: e.Version, Last: e.Version + uint64(max(1, e.Slots)-1), At: e.At}
	return s.derive(ctx, ev, ev.First <= s.newestVersion)
}

// derive plans and runs one cascade: the rows of one parent event, or of
// a batch of its DELETEs. older: rows newer than the event were written
// already (an XA transaction's, applied at its XA COMMIT with the
// versions of its XA PREPARE).
func (s *router) derive(ctx context.Context, ev sink.CascadeEvent, older bool) error {
	start := time.Now()
	plan, err := sink.PlanCascade(s.fks, ev, s.r.replicates)
	if err != nil || plan == nil {
		return err
	}
	for _, t := range plan.Unreplicated {
		if !s.warnedUnreplicated[t] {
			if s.warnedUnreplicated == nil {
				s.warnedUnreplicated = map[schema.TableName]bool{}
			}
			s.warnedUnreplicated[t] = true
			s.r.log.Warn("a cascade reaches a table that is not replicated: nothing is derived for it, nor for tables it cascades to", "parent", ev.Table.String(), "table", t.String(), "binlog", ev.At.String())
		}
	}
	if len(plan.Tables) == 0 {
		return nil
	}
	if !ev.Delete && ev.First < s.r.copyEnd && !s.warnedCopyWindow {
		s.warnedCopyWindow = true
		s.r.log.Warn("an ON UPDATE CASCADE or SET NULL ran while the initial snapshot copied its child tables: a row the copy read after it shows the change already, and applying it again is wrong only if the update moved a key to a value another cascade of that time released. Run binlog2ch verify on the child tables; copy one again (binlog2ch fullsync -recreate -tables) if it differs",
			"parent", ev.Table.String(), "tables", fmt.Sprint(plan.Tables), "binlog", ev.At.String())
	}
	plan.Replay = older
	// The as-of reads need every earlier row of these tables in ClickHouse.
	var waits []chan struct{}
	for _, t := range plan.Tables {
		if rt := s.writers[t]; rt == nil || rt.w.Flushed() >= rt.dispatched {
			continue // nothing pending
		}
		done := make(chan struct{})
		if err := s.dispatch(ctx, t, sink.Message{FlushDone: done, At: ev.At}); err != nil {
			return err
		}
		waits = append(waits, done)
	}
	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if hook := s.r.hooks.beforeCascade; hook != nil {
		hook(ev.Table)
	}
	res, err := s.r.sink.RunCascade(ctx, s.r.log, plan)
	if err != nil {
		var ce *sink.CascadeError
		if errors.As(err, &ce) {
			return fmt.Errorf("%w. ClickHouse cannot be kept equal to MySQL past this event; %s", err, recopy)
		}
		return err
	}
	for t, counts := range res.Rows {
		for action, n := range counts {
			s.r.m.CascadedRows.WithLabelValues(t.Database, t.Table, action).Add(float64(n))
		}
	}
	s.r.m.CascadeDuration.Observe(time.Since(start).Seconds())
	if hook := s.r.hooks.afterCascade; hook != nil {
		hook(ev.Table)
	}
	return nil
}

// Batches. A parent table's DELETEs one by one (each its own transaction,
// or statement) would each cost the reader an insert round trip per child
// table and ClickHouse a part. The router instead holds back a run of the
// stream: DELETEs of one parent table that cascade, with the commits and
// the events of unrelated tables between them, until the run ends, then
// derives the whole run's cascades at once (read as of the first event's
// first version, written at the last one's last version) and lets the run
// go on in order. Nothing between may touch the tables the deletes cascade
// to, or the parent: such an event, a statement (DDL), another kind of
// parent event, maxBatchEvents held deletes or cascadeBatchWindow end the
// run first. The commits are held too, so the checkpoint cannot pass a
// held delete before its derived rows are in. Where a run ends depends on
// timing, so a replay may cut it elsewhere and write the same derived rows
// at another version; the replay reads (sink/cascade.go) do not depend on
// where earlier attempts cut.

// cascadeBatchWindow is how long a run may be held after its first delete.
const cascadeBatchWindow = 20 * time.Millisecond

// maxBatchEvents and maxBatchBytes bound a run's held deletes.
const (
	maxBatchEvents = 512
	maxBatchBytes  = 16 << 20
)

// cascadeBatch is a run held back.
type cascadeBatch struct {
	parent   schema.TableName
	involved map[schema.TableName]bool // the parent and every table its rows cascade to
	ev       sink.CascadeEvent         // the held deletes' rows, merged
	items    []batchItem               // everything held, in order
	deletes  int
	bytes    int
	started  time.Time
}

// batchItem is a held rows event or commit.
type batchItem struct {
	rows   *source.Rows
	commit *source.Commit
}

// hold takes a cascading DELETE into the run, starting one if none is
// held; false when it cannot be batched (the caller derives it alone).
func (s *router) hold(ctx context.Context, e source.Rows) (bool, error) {
	if e.Op != source.OpDelete || e.Version <= s.newestVersion {
		return false, nil
	}
	b := s.batch
	if b != nil && b.parent != e.Table {
		if err := s.flushBatch(ctx); err != nil {
			return false, err
		}
		b = nil
	}
	values, err := e.Values()
	if err != nil {
		return false, err
	}
	if b == nil {
		b = &cascadeBatch{parent: e.Table, involved: map[schema.TableName]bool{e.Table: true}, started: time.Now(),
			ev: sink.CascadeEvent{Table: e.Table, Schema: e.Schema, Delete: true, First: e.Version, At: e.At}}
		for _, t := range s.cascadeDescendants(e.Table) {
			b.involved[t] = true
		}
		s.batch = b
	}
	if e.Schema != b.ev.Schema && !binlog.SameColumns(e.Schema, b.ev.Schema) {
		// Rows of another shape (a table map changed without DDL read):
		// the run so far goes first.
		if err := s.flushBatch(ctx); err != nil {
			return false, err
		}
		return s.hold(ctx, e)
	}
	b.ev.Rows = append(b.ev.Rows, values...)
	b.ev.Last = e.Version + uint64(max(1, e.Slots)-1)
	b.items = append(b.items, batchItem{rows: &e})
	b.deletes++
	b.bytes += len(e.Raw)
	if b.deletes >= maxBatchEvents || b.bytes >= maxBatchBytes {
		return true, s.flushBatch(ctx)
	}
	return true, nil
}

// flushBatch derives the held run's cascades, then lets its events and
// commits go on in order.
func (s *router) flushBatch(ctx context.Context) error {
	b := s.batch
	if b == nil {
		return nil
	}
	s.batch = nil
	if len(b.items) == 0 {
		return nil
	}
	if b.deletes > 0 {
		if err := s.derive(ctx, b.ev, false); err != nil {
			return err
		}
	}
	for _, it := range b.items {
		if it.commit != nil {
			s.commit(*it.commit)
			continue
		}
		if err := s.send(ctx, *it.rows); err != nil {
			return err
		}
	}
	return nil
}

// endBatchOn reports whether a rows event must wait for the held run's
// cascades: it touches a table they change (or the parent).
func (s *router) endBatchOn(e source.Rows) bool {
	return s.batch != nil && s.batch.involved[e.Table]
}

// trimBatch drops the held events of the transaction a broken stream was
// reading: the stream reads them again from its last commit. The complete
// transactions held stay, to be flushed by the next call that can.
func (s *router) trimBatch() {
	b := s.batch
	if b == nil {
		return
	}
	last := -1
	for i, it := range b.items {
		if it.commit != nil {
			last = i
		}
	}
	if last < 0 {
		s.batch = nil
		return
	}
	b.items = b.items[:last+1]
	// The merged rows must match the events kept.
	b.ev.Rows, b.deletes, b.bytes = nil, 0, 0
	for _, it := range b.items {
		if it.rows == nil {
			continue
		}
		values, err := it.rows.Values()
		if err != nil {
			continue // decoded once already: cannot fail now
		}
		b.ev.Rows = append(b.ev.Rows, values...)
		b.ev.Last = it.rows.Version + uint64(max(1, it.rows.Slots)-1)
		b.deletes++
	}
}

// cascadeDescendants are the replicated tables a table's rows cascade to,
// through any number of keys: a copy of the table must copy them too, as
// their cascades through it cannot be derived from the copy.
func (s *router) cascadeDescendants(t schema.TableName) []schema.TableName {
	if s.fks == nil {
		return nil
	}
	seen := map[schema.TableName]bool{t: true}
	var out []schema.TableName
	queue := []schema.TableName{t}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range s.fks.Referencing(p) {
			if !k.Cascades() || seen[k.Child] || !s.r.replicates(k.Child) {
				continue
			}
			seen[k.Child] = true
			out = append(out, k.Child)
			queue = append(queue, k.Child)
		}
	}
	return out
}
