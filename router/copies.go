package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Online copies: a table whose rows ClickHouse does not hold whole (it
// entered the replicated set with rows, or changed in a way the binlog
// does not carry) is copied while the stream goes on, every other table's
// events and its own applied meanwhile.
//
// A copy batch records the server's binlog position P and copies its
// tables into shadow tables (snapshot.ShadowName), every row at P's
// version: at or above every event up to P, below every later one, the
// argument that makes the initial snapshot exact. The table's own events
// keep going to its table. Once the copy is complete, the table's writer
// runs the swap between two batches (sink.Message.Run): the rows the stream
// wrote since P (versions above the copy's) are carried into the shadow,
// and one RENAME puts the shadow in the table's place. Readers never see
// the table emptied.
//
// The copy state (state.TableCopy, by table) goes with every checkpoint:
// a restart resumes a copy from its confirmed ranges, and finishes a swap
// it was in. One batch runs at a time, with the copy workers and memory
// bounds of fullsync; tables asked for meanwhile wait for the next.

// onlineCopies is the router's copy state.
type onlineCopies struct {
	mu sync.Mutex // tables: the copy's goroutine saves its progress into it
	// tables are the tables ClickHouse does not hold whole, by db.table.
	tables map[string]*state.TableCopy
	// pending wait for the next batch, oldest first.
	pending []schema.TableName
	batch   *copyBatch // running; nil: none
	// requests come from other goroutines (Resync, Reload); the router
	// takes them at its next Tick.
	requests chan func(context.Context) error
	// failures counts the batches that failed in a row.
	failures int
}

// copyBatch is a copy of tables at one position.
type copyBatch struct {
	tables  []schema.TableName
	entries map[string]*state.TableCopy // the entries the batch saves into
	version uint64                      // its rows'
	at      source.Position
	// end is the server's position once the copy had read every row:
	// the batch is swapped in only once the stream has read up to it.
	// A cascade the stream has yet to read from the copy's window would
	// else be derived on rows the copy read after MySQL applied it (an
	// ON UPDATE CASCADE moving a child into a key value another released
	// then moves the wrong child), where one read while the batch runs
	// starts it over.
	end    source.Position
	cancel context.CancelFunc
	done   chan struct{} // closed when the copy returned
	err    error
}

func newOnlineCopies(from *state.Checkpoint) *onlineCopies {
	c := &onlineCopies{tables: map[string]*state.TableCopy{}, requests: make(chan func(context.Context) error, 16)}
	if from != nil {
		for k, v := range from.Tables {
			e := *v
			c.tables[k] = &e
		}
	}
	return c
}

// saved is the copy state for a checkpoint: a copy of it.
func (c *onlineCopies) saved() map[string]*state.TableCopy {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tables) == 0 {
		return nil
	}
	out := make(map[string]*state.TableCopy, len(c.tables))
	for k, v := range c.tables {
		e := *v
		out[k] = &e
	}
	return out
}

// inBatch reports whether t is being copied by the running batch.
func (c *onlineCopies) inBatch(t schema.TableName) bool {
	return c.batch != nil && slices.Contains(c.batch.tables, t)
}

// has reports whether t is in the copy state.
func (c *onlineCopies) has(t schema.TableName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tables[t.String()] != nil
}

// batchInDatabase reports whether the running batch copies a table of db.
func (c *onlineCopies) batchInDatabase(db string) bool {
	if c.batch == nil {
		return false
	}
	for _, t := range c.batch.tables {
		if t.Database == db {
			return true
		}
	}
	return false
}

// copyLog is the logger of online copies.
func (s *Router) copyLog() *slog.Logger { return s.log.With("component", "copy") }

// requestCopy has t copied online for reason: it waits for the next
// batch. A copy of t under way starts over (with its batch), a copy
// asked for before keeps its first reason.
func (s *Router) requestCopy(ctx context.Context, t schema.TableName, reason string) error {
	c := s.copies
	if c.inBatch(t) {
		s.restartBatch(t, reason)
	}
	key := t.String()
	c.mu.Lock()
	if e := c.tables[key]; e == nil || e.State != state.CopyCopying || !slices.Contains(c.pending, t) {
		// A new entry, also for a table whose swap is queued: that swap
		// then leaves this copy's entry alone.
		c.tables[key] = &state.TableCopy{State: state.CopyCopying, Reason: reason, Since: time.Now().UTC()}
	}
	c.mu.Unlock()
	if !slices.Contains(c.pending, t) {
		c.pending = append(c.pending, t)
	}
	s.noteCopies()
	s.copyLog().Info("table to be copied online", "table", key, "reason", reason)
	if reason == state.ReasonSelected || reason == state.ReasonRenamed {
		// While t was not read, the cascades its deletes and updates made
		// in its children were not derived: they are copied too.
		for _, d := range s.cascades.Descendants(t) {
			if !c.has(d) {
				if err := s.requestCopy(ctx, d, reason); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// restartBatch stops the running batch because of t (DDL of t read
// during its copy, or t no longer to be copied) and puts its other tables
// back first in line, to be copied again from a new position.
func (s *Router) restartBatch(t schema.TableName, why string) {
	b := s.copies.batch
	s.copies.batch = nil
	b.cancel()
	<-b.done // its readers stop, its writers flush within shutdownTimeout
	s.copyLog().Info("online copy started over", "table", t.String(), "why", why, "tables", len(b.tables))
	var rest []schema.TableName
	s.copies.mu.Lock()
	for _, x := range b.tables {
		if e := s.copies.tables[x.String()]; e != nil && e == b.entries[x.String()] {
			e.Progress = nil // a new position; the shadow is dropped first
			if !slices.Contains(s.copies.pending, x) {
				rest = append(rest, x)
			}
		}
	}
	s.copies.mu.Unlock()
	s.copies.pending = append(rest, s.copies.pending...)
}

// forgetCopy drops t from the copy state (dropped, or no longer
// selected): its batch starts over without it, and its shadow table is
// dropped.
func (s *Router) forgetCopy(ctx context.Context, t schema.TableName) error {
	c := s.copies
	if c.inBatch(t) {
		s.restartBatch(t, "dropped or no longer selected")
	}
	c.pending = slices.DeleteFunc(c.pending, func(x schema.TableName) bool { return x == t })
	c.mu.Lock()
	_, had := c.tables[t.String()]
	delete(c.tables, t.String())
	c.mu.Unlock()
	s.stopSkipping(t)
	s.noteCopies()
	if !had {
		return nil
	}
	db, table := s.sink.TableOf(t)
	return s.sink.DropTable(ctx, s.copyLog(), db, snapshot.ShadowName(table))
}

// tickCopies runs in the router's Tick: it takes requests, swaps in what
// a finished batch copied, and starts the next batch.
func (s *Router) tickCopies(ctx context.Context) error {
	c := s.copies
	for more := true; more; {
		select {
		case req := <-c.requests:
			if err := req(ctx); err != nil {
				return err
			}
		default:
			more = false
		}
	}
	if b := c.batch; b != nil {
		select {
		case <-b.done:
		default:
			return nil
		}
		if b.err == nil && s.stream.Position().Before(b.end) {
			return nil // its window's events not all read yet: see copyBatch.end
		}
		c.batch = nil
		if b.err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.failures++
			if c.failures >= 3 {
				return fmt.Errorf("online copy of %s from binlog %s failed %d times in a row: %w; the copy state is kept, and the next start resumes it once the cause is fixed", names(b.tables), b.at, c.failures, b.err)
			}
			s.copyLog().Warn("online copy failed; trying again from a new position", "tables", names(b.tables), "error", b.err, "attempt", c.failures)
			return s.requeue(b)
		}
		c.failures = 0
		if err := s.swapIn(ctx, b); err != nil {
			return err
		}
	}
	if len(c.pending) > 0 && ctx.Err() == nil {
		return s.startBatch(ctx)
	}
	return nil
}

// requeue puts a failed batch's tables back in line, from scratch.
func (s *Router) requeue(b *copyBatch) error {
	s.copies.mu.Lock()
	for _, x := range b.tables {
		if e := s.copies.tables[x.String()]; e != nil && e == b.entries[x.String()] {
			e.Progress = nil
			if !slices.Contains(s.copies.pending, x) {
				s.copies.pending = append(s.copies.pending, x)
			}
		}
	}
	s.copies.mu.Unlock()
	return nil
}

// startBatch copies the tables in line: those with the first one's saved
// progress resume at its position, else all of them from the current
// one.
func (s *Router) startBatch(ctx context.Context) error {
	r, c := s, s.copies
	c.mu.Lock()
	var resume *snapshot.State
	var tables []schema.TableName
	entries := map[string]*state.TableCopy{}
	if first := c.tables[c.pending[0].String()]; first != nil {
		resume = snapshot.ProgressOf(first.Progress, r.server.ID)
	}
	for _, t := range c.pending {
		e := c.tables[t.String()]
		if e == nil {
			continue
		}
		// With the first's position, or all of those with none.
		p := snapshot.ProgressOf(e.Progress, r.server.ID)
		if (resume == nil && p != nil) || (resume != nil && !resume.Join(p)) {
			continue
		}
		tables = append(tables, t)
		entries[t.String()] = e
	}
	c.mu.Unlock()
	c.pending = slices.DeleteFunc(c.pending, func(t schema.TableName) bool { return entries[t.String()] != nil })
	if len(tables) == 0 {
		return nil
	}
	tables, err := s.versionedInBatch(ctx, tables, r.readPos.Load().String())
	if err != nil || len(tables) == 0 {
		return err
	}
	// A failed table's events go to its writer again from here: those
	// the copy's position passes lose to the copy's rows.
	for _, t := range tables {
		s.stopSkipping(t)
	}
	if s.cfg.ClickHouse.Cluster != "" {
		return fmt.Errorf("%s must be copied online (%s), which is not built for a ClickHouse cluster yet: stop binlog2ch, copy them with `binlog2ch fullsync -recreate -tables %s`, and start it again",
			strings.Join(names(tables), ", "), entries[tables[0].String()].Reason, strings.Join(names(tables), ","))
	}
	st := resume
	if st == nil {
		pos, err := r.currentPosition(ctx)
		if err != nil {
			return err
		}
		// The server's position is on the history the stream reads: its
		// versions take the same offset.
		st = &snapshot.State{Server: r.server.ID, Position: pos, FileOffset: s.stream.Offset(), Started: time.Now().UTC(),
			Tables: map[string]*snapshot.TableProgress{}, Recreate: true}
	}
	version, f, err := st.Version()
	if err != nil {
		return err
	}
	// Every version in ClickHouse stays below the saved ceiling, where a
	// new binlog history would start: the copy's too.
	if f >= s.ceiling {
		if err := s.raiseCeiling(ctx, f); err != nil {
			return err
		}
	}
	b := &copyBatch{tables: tables, entries: entries, version: version, at: st.Position, done: make(chan struct{})}
	log := s.copyLog()
	opts := r.copyOptions(log, st, "")
	opts.RunMode, opts.Shadow, opts.Recreate = true, true, true
	opts.Save = func(st *snapshot.State) error { return s.copies.saveProgress(b, st) }
	opts.Progress = r.trackCopies
	var copyCtx context.Context
	copyCtx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.batch = b
	if resume != nil {
		log.Info("resuming the online copy", "tables", names(tables), "position", st.Position.String())
	} else {
		log.Info("copying tables online; the stream goes on", "tables", names(tables), "position", st.Position.String())
	}
	stop := context.AfterFunc(ctx, b.cancel) // a shutdown stops the copy; its progress is kept
	go func() {
		defer stop()
		defer s.stream.Wake()
		defer close(b.done)
		if _, b.err = snapshot.Copy(copyCtx, opts, tables); b.err != nil {
			return
		}
		if b.end, b.err = r.currentPosition(copyCtx); b.err != nil {
			b.err = fmt.Errorf("read the server's position at the copy's end: %w", b.err)
			return
		}
		if hook := s.hooks.CopyDone; hook != nil {
			hook(tables)
		}
	}()
	return nil
}

// saveProgress keeps a batch's progress in its tables' entries: the next
// checkpoint saves it.
func (c *onlineCopies) saveProgress(b *copyBatch, st *snapshot.State) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range b.tables {
		k := t.String()
		e := c.tables[k]
		if e == nil || e != b.entries[k] {
			continue // forgotten or asked for again since
		}
		data, err := st.Narrow(k)
		if err != nil {
			return err
		}
		e.Progress = data
	}
	return nil
}

// swapIn has each table of a finished batch swapped in by its writer.
// The tables are marked swapping, and saved so, first: a restart then
// finishes a swap rather than taking a swapped table for one not copied.
func (s *Router) swapIn(ctx context.Context, b *copyBatch) error {
	c := s.copies
	c.mu.Lock()
	var tables []schema.TableName
	for _, t := range b.tables {
		if e := c.tables[t.String()]; e != nil && e == b.entries[t.String()] {
			e.State = state.CopySwapping
			tables = append(tables, t)
		}
	}
	c.mu.Unlock()
	if len(tables) == 0 {
		return nil
	}
	if err := s.save(false, true); err != nil {
		return err
	}
	for _, t := range tables {
		t, e := t, b.entries[t.String()]
		run := func(ctx context.Context) error {
			log := s.copyLog().With("table", t.String())
			_, table := s.sink.TableOf(t)
			swapped, err := s.sink.SwapIn(ctx, log, t, snapshot.ShadowName(table), b.version)
			if err != nil {
				return fmt.Errorf("swap in the online copy: %w", err)
			}
			s.cascadeRunner.ForgetHorizon(t)
			c.mu.Lock()
			if c.tables[t.String()] == e {
				delete(c.tables, t.String())
			}
			c.mu.Unlock()
			s.noteCopies()
			s.m.TableCopies.WithLabelValues(e.Reason).Inc()
			log.Info("online copy swapped in; the table is streaming", "reason", e.Reason, "swapped", swapped, "copied_since", e.Since)
			s.stream.Wake() // the checkpoint records it
			return nil
		}
		if err := s.dispatch(ctx, t, sink.Message{Run: run, At: b.at}); err != nil {
			return err
		}
	}
	return nil
}

// copyAtStart puts in line, when the daemon starts from a checkpoint, the
// copies the checkpoint records, and the tables the config selects now
// that the checkpoint's selection did not.
func (s *Router) copyAtStart(ctx context.Context, from *state.Checkpoint) error {
	r, c := s, s.copies
	// CopyState reads the entries from other goroutines (status, tests).
	c.mu.Lock()
	for k, e := range c.tables {
		t, ok := schema.ParseTableName(k)
		if !ok || !r.replicates(t) {
			delete(c.tables, k) // no longer selected: it stops being replicated
			continue
		}
		if e.State == state.CopyFailed {
			e.State, e.Reason, e.Progress = state.CopyCopying, state.ReasonFailed, nil
			s.skipping[t] = true // until its copy starts, as while it ran
			r.log.Warn("copying a table marked failed before; its events are skipped until its copy starts", "table", k, "failed", e.Error)
		}
		c.pending = append(c.pending, t)
	}
	c.mu.Unlock()
	slices.SortFunc(c.pending, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	if from != nil && from.Selection != nil {
		was := &config.TablesConfig{Include: from.Selection.Include, Exclude: from.Selection.Exclude}
		if err := s.copyNewlySelected(ctx, was); err != nil {
			return err
		}
	}
	s.noteCopies()
	return nil
}

// copyNewlySelected puts in line the tables the selection selects that
// was did not.
func (s *Router) copyNewlySelected(ctx context.Context, was *config.TablesConfig) error {
	r := s
	cfg := *r.cfg
	cfg.Tables = *r.selection()
	tables, err := catalog.ListTables(ctx, r.my, &cfg)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if !r.selects(was, t) && r.replicates(t) {
			if err := s.requestCopy(ctx, t, state.ReasonSelected); err != nil {
				return err
			}
		}
	}
	return nil
}

// applySelection moves the router to a new selection (a reload): newly
// selected tables are copied, tables no longer selected stop.
func (s *Router) applySelection(ctx context.Context, tables config.TablesConfig) error {
	r := s
	was := r.selection()
	versioned, err := s.versionedSelected(ctx, was, &tables)
	if err != nil {
		return err
	}
	for _, t := range versioned {
		if !s.skipTables() || s.cascadeChild(t) {
			return VersionedError(t, r.readPos.Load().String(), "the reload selects it (the reload is refused: the selection stays as it was)")
		}
	}
	r.sel.set(&tables)
	if err := s.refuseVersioned(versioned, r.readPos.Load().String(), "the reload selects it"); err != nil {
		return err
	}
	if err := s.stream.ApplySelection(); err != nil {
		return err
	}
	var stopped []string
	for name := range s.writers {
		if !r.replicates(name) {
			stopped = append(stopped, name.String())
			s.stopWriter(name)
		}
	}
	for k := range s.copies.saved() {
		if t, ok := schema.ParseTableName(k); ok && !r.replicates(t) {
			if err := s.forgetCopy(ctx, t); err != nil {
				return err
			}
		}
	}
	r.log.Info("reload: table selection changed", "include", tables.Include, "exclude", tables.Exclude, "stopped", stopped)
	return s.copyNewlySelected(ctx, was)
}

// Resync has tables copied again online: each is copied into a shadow
// table while the stream goes on, and swapped in. It returns once the
// copies are in line. Call it from any goroutine.
func (s *Router) Resync(ctx context.Context, tables []schema.TableName) error {
	if s.cfg.ClickHouse.Cluster != "" {
		return errors.New("resync into a ClickHouse cluster is not built yet: stop binlog2ch and copy the tables with `binlog2ch fullsync -recreate -tables ...`")
	}
	for _, t := range tables {
		if !s.replicates(t) {
			return fmt.Errorf("%s is not selected by tables.include/exclude: binlog2ch does not replicate it", t)
		}
	}
	return s.ask(ctx, func(ctx context.Context) error {
		for _, t := range tables {
			if err := s.requestCopy(ctx, t, state.ReasonResync); err != nil {
				return err
			}
		}
		return nil
	})
}

// Reload replaces the table selection (a SIGHUP's config, which
// config.CheckReload allowed): tables it newly selects are copied online,
// tables it no longer selects stop being replicated (their ClickHouse
// tables stay). Call it from any goroutine.
func (s *Router) Reload(ctx context.Context, tables config.TablesConfig) error {
	return s.ask(ctx, func(ctx context.Context) error { return s.applySelection(ctx, tables) })
}

// ask runs f in the router's goroutine, at its next Tick, and waits for
// its answer.
func (s *Router) ask(ctx context.Context, f func(context.Context) error) error {
	answer := make(chan error, 1)
	req := func(ctx context.Context) error {
		answer <- f(ctx)
		return nil
	}
	select {
	case s.copies.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.stream.Wake()
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		return fmt.Errorf("the daemon did not take the request in time (it is busy; the request stays queued): %w", ctx.Err())
	}
}

func names(ts []schema.TableName) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// dropDatabase follows DROP DATABASE, which drops every table in it
// without a statement per table: each replicated table of the database
// with a writer, a copy, or a ClickHouse table binlog2ch made goes as a
// DROP TABLE goes. A database created again starts with no tables.
func (s *Router) dropDatabase(ctx context.Context, db string, st source.Statement) error {
	r := s
	seen := map[schema.TableName]bool{}
	var tables []schema.TableName
	add := func(t schema.TableName) {
		if t.Database == db && !seen[t] && r.replicates(t) {
			seen[t] = true
			tables = append(tables, t)
		}
	}
	for t := range s.writers {
		add(t)
	}
	for k := range s.copies.saved() {
		if t, ok := schema.ParseTableName(k); ok {
			add(t)
		}
	}
	registered, err := r.sink.RegisteredTables(db)
	if err != nil {
		return fmt.Errorf("binlog %s: DROP DATABASE %s: %w. Drop its replicated tables in ClickHouse by hand, then start binlog2ch again", st.At, db, err)
	}
	for _, t := range registered {
		add(t)
	}
	slices.SortFunc(tables, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	r.log.Info("database dropped: dropping its replicated tables in ClickHouse", "database", db, "tables", names(tables), "binlog", st.At.String())
	for _, t := range tables {
		if err := s.dispatch(ctx, t, sink.Message{DDL: ddl.Drop, At: st.At}); err != nil {
			return err
		}
		s.stopWriter(t)
		if err := s.forgetCopy(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
