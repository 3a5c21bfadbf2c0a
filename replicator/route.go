package replicator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// router is the source's Handler: it routes each table's events, in
// binlog order, to that table's writer, starting writers as tables appear,
// and saves the checkpoint as the writers report their rows durable. It
// runs in the stream's goroutine.
type router struct {
	r       *Replicator
	stream  *source.Stream
	writers map[schema.TableName]*route
	all     []*route // every writer started, for shutdown and checkpoints
	// start runs a writer in its own goroutine.
	start func(*sink.Writer)
	wg    sync.WaitGroup

	seq       uint64        // messages dispatched
	commits   []commitPoint // not yet checkpointed, oldest first
	lastSaved time.Time
	saved     source.Position
	// ceiling is the saved checkpoint's version ceiling: rows of a file
	// with F at or above it wait until a save raises it (versionCeiling).
	ceiling uint32
	readF   uint32 // F of the file the reader is in
	lastTS  int64  // timestamp (Unix ns) of the newest event read
	// retired are writers whose MySQL table name a DROP or RENAME freed
	// while they may still be working on that name's ClickHouse table: a
	// new writer for the name waits until they are past the DDL, so two
	// writers never write one table at once.
	retired map[schema.TableName]retiredWriter
	// partitions are the partitioned tables' partitions, read when their
	// writers start (replication.on_partition_maintenance: apply only).
	partitions map[schema.TableName]*catalog.Partitions
	// queued is the bytes of rows events sent to writers and not yet taken
	// into their blocks (see maxQueuedBytes).
	queued atomic.Int64
	// pendingNoted is when notePending last ran.
	pendingNoted time.Time
	// cascades are the foreign-key cascades of the events read: every
	// rows event and commit goes through them (cascade.go).
	cascades *cascade.Follower
}

// route is a writer and what the router sent it.
type route struct {
	w          *sink.Writer
	dispatched uint64 // seq of the last message sent to it
	closed     bool   // its queue is closed
	// tm is the table's metrics, where the router keeps PendingSince.
	tm *metrics.Table
	// marks are the commit times of the messages sent and not known to be
	// durable, oldest first, one per run of messages with the same
	// timestamp (binlog timestamps are whole seconds, so a busy table
	// has few): the table's lag on the status page counts from the first.
	marks []mark
}

// mark says the messages up to seq, after the previous mark's, carry rows
// committed at at (Unix ns).
type mark struct {
	seq uint64
	at  int64
}

// sent records a message handed to the route's writer.
func (s *router) sent(rt *route, seq uint64) {
	rt.dispatched = seq
	at := s.lastTS
	if at == 0 {
		at = time.Now().UnixNano() // an event without a time: count from now
	}
	if n := len(rt.marks); n > 0 && rt.marks[n-1].at == at {
		rt.marks[n-1].seq = seq
		return
	}
	rt.marks = append(rt.marks, mark{seq: seq, at: at})
	if len(rt.marks) == 1 {
		rt.tm.PendingSince.Store(at)
	}
}

// pendingEvery is how often the router moves each table's PendingSince
// past what its writer has stored: often enough for a page refreshed
// every 2 s, rarely enough to cost nothing per event.
const pendingEvery = 250 * time.Millisecond

// notePending moves every table's PendingSince to its oldest message not
// yet durable (0: none).
func (s *router) notePending(now time.Time) {
	s.pendingNoted = now
	for _, rt := range s.all {
		if len(rt.marks) == 0 {
			continue
		}
		f := rt.w.Flushed()
		i := 0
		for i < len(rt.marks) && rt.marks[i].seq <= f {
			i++
		}
		if i == 0 {
			continue
		}
		rt.marks = rt.marks[:copy(rt.marks, rt.marks[i:])]
		if len(rt.marks) == 0 {
			rt.tm.PendingSince.Store(0)
		} else {
			rt.tm.PendingSince.Store(rt.marks[0].at)
		}
	}
}

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

// ceilingGap is how many binlog files past the one being read a saved
// version ceiling reaches: a save every that many files keeps it ahead.
const ceilingGap = 16

// retiredWriter is a writer and the DDL message after which it no longer
// touches its old name's table.
type retiredWriter struct {
	w   *sink.Writer
	seq uint64
}

// past reports whether the writer is done with the DDL (or stopped).
func (rw retiredWriter) past() bool { return rw.w.Done() || rw.w.Flushed() >= rw.seq }

// newRouter routes a stream that starts at st, from a checkpoint saved by
// server with version ceiling ceiling (0: none saved yet).
func newRouter(r *Replicator, stream *source.Stream, st source.Start, from *state.Checkpoint, run func(*sink.Writer)) *router {
	first := commitPoint{seq: 0, pos: st.Position, server: from.Server, gtid: st.GTID, hist: st.History, offset: st.Offset, byGTID: from.ResumeByGTID}
	ceiling := from.Ceiling
	return &router{r: r, stream: stream, writers: map[schema.TableName]*route{}, start: run, partitions: map[schema.TableName]*catalog.Partitions{},
		commits: []commitPoint{first}, lastSaved: time.Now(), saved: st.Position, ceiling: ceiling}
}

// Event updates liveness and the lag metrics for an event read.
func (s *router) Event(e source.Event) {
	r := s.r
	now := time.Now().UnixNano()
	r.checkin.Store(now) // as checkIn, with the clock read once per event
	r.mysqlUp.Store(true)
	if e.Heartbeat {
		// The server has nothing newer: the reader is at its end, and
		// with nothing pending in the writers, so is ClickHouse.
		r.sink.SetCaughtUp(true)
		metrics.AdvanceTo(&r.m.Read, now)
		if !s.pending() {
			metrics.AdvanceTo(&r.m.Durable, now)
		}
		return
	}
	r.m.EventsRead.Inc()
	if e.Timestamp != 0 {
		s.lastTS = e.Timestamp
		metrics.AdvanceTo(&r.m.Read, e.Timestamp)
		// Live: reading events of the last seconds (binlog timestamps are
		// whole seconds), so writers may send small batches early.
		r.sink.SetCaughtUp(now-e.Timestamp < liveWithin)
	}
}

// Down counts a failed binlog connection.
func (s *router) Down(error, source.Position, time.Duration) {
	s.cascades.DropUncommitted()
	s.r.mysqlUp.Store(false)
	s.r.m.Errors.WithLabelValues(metrics.StageRead).Inc()
	s.r.checkIn()
}

// liveWithin is how recent (ns) the events read must be for the reader to
// count as live.
const liveWithin = int64(3 * time.Second)

// Commit records a transaction boundary.
func (s *router) Commit(c source.Commit) {
	s.cascades.Commit(c) // it may hold c with a run of deletes
}

// commit records a transaction boundary.
func (s *router) commit(c source.Commit) {
	// A restart must start at Resume: it is behind Position while an XA
	// transaction prepared before is still open.
	s.commits = append(s.commits, commitPoint{seq: s.seq, pos: c.Resume, at: c.Timestamp, server: s.r.server.ID, gtid: c.GTID, hist: c.History, offset: c.Offset})
	s.readF, _ = source.VersionFile(c.File, c.Offset)
	s.r.m.XAPrepared.Set(float64(c.Prepared))
	pos := c.Position
	s.r.readPos.Store(&pos)
	s.r.m.ReadFile.Set(float64(c.File))
	s.r.m.ReadPos.Set(float64(c.Position.Pos))
}

// Tick checkpoints once checkpoint.interval has passed since the last
// save; woken early by a writer's flush, it asks to be called again then.
func (s *router) Tick(woken bool) (time.Duration, error) {
	now := time.Now()
	if now.Sub(s.pendingNoted) >= pendingEvery {
		s.notePending(now)
	}
	hold, err := s.cascades.Tick() // until the held run of cascading deletes ends
	if err != nil {
		return 0, err
	}
	interval := s.r.cfg.Checkpoint.Interval
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
func (s *router) pending() bool {
	for _, rt := range s.all {
		if rt.w.Flushed() < rt.dispatched {
			return true
		}
	}
	return false
}

// maxQueuedBytes bounds the bytes of undecoded rows events queued for all
// writers together: a writer's queue holds up to queueLen events, which
// with large values (an UPDATE carries the row twice) would be gigabytes.
const maxQueuedBytes = 256 << 20

// Rows sends one rows event to its table's writer.
func (s *router) Rows(ctx context.Context, e source.Rows) error {
	if hook := s.r.hooks.rowsEvent; hook != nil {
		hook(e.Table)
	}
	if f := uint32(e.Version >> 44); f >= s.ceiling {
		if err := s.raiseCeiling(ctx, f); err != nil {
			return err
		}
	}
	// After its cascades (send, or held back with a run of deletes).
	return s.cascades.Rows(ctx, e)
}

// send hands a rows event to its table's writer.
func (s *router) send(ctx context.Context, e source.Rows) error {
	m := sink.Message{Schema: e.Schema, Rows: e.Rows, Raw: e.Raw, Op: e.Op, Version: e.Version, Slots: e.Slots, At: e.At}
	if size := int64(len(e.Raw)); size > 0 {
		if err := s.awaitQueueRoom(ctx, size); err != nil {
			return err
		}
		m.Queued, m.Bytes = &s.queued, size
	}
	return s.dispatch(ctx, e.Table, m)
}

// awaitQueueRoom waits until size more bytes fit under maxQueuedBytes (a
// larger event goes alone), checking in meanwhile, and counts them.
func (s *router) awaitQueueRoom(ctx context.Context, size int64) error {
	for n := 0; ; n++ {
		q := s.queued.Load()
		if q == 0 || q+size <= maxQueuedBytes {
			s.queued.Add(size)
			return nil
		}
		if n%500 == 0 {
			s.r.checkIn()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// dispatch queues a message for the table's writer, starting it if needed;
// it blocks while the writer's queue is full (backpressure).
func (s *router) dispatch(ctx context.Context, name schema.TableName, m sink.Message) error {
	rt := s.writers[name]
	if rt == nil {
		if err := s.awaitRetired(ctx, name); err != nil {
			return err
		}
		if s.r.cfg.Replication.OnPartitionMaintenance == config.OnApply && s.partitions[name] == nil {
			// Read now, while the partitions a later DROP names still exist.
			p, err := catalog.LoadPartitions(ctx, s.r.my, name)
			if err != nil {
				return err
			}
			if p != nil {
				s.partitions[name] = p
			}
		}
		w := s.r.sink.NewWriter(name, s.r.queueLen)
		w.OnFlushed(s.stream.Wake)
		w.ParkWhenIdle(s.r.parkAfter)
		rt = &route{w: w, tm: s.r.m.ForTable(name)}
		s.writers[name] = rt
		s.all = append(s.all, rt)
		s.start(w)
	}
	s.seq++
	m.Seq = s.seq
	select {
	case rt.w.In() <- &m:
		s.sent(rt, m.Seq)
		s.wake(rt.w)
		return nil
	default:
	}
	// The queue is full (ClickHouse is slow or away): wait, checking in
	// so the daemon still counts as alive.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case rt.w.In() <- &m:
			s.sent(rt, m.Seq)
			s.wake(rt.w)
			return nil
		case <-tick.C:
			s.r.checkIn()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Statement acts on DDL: each effect on a replicated table goes to its
// writer, in order with the table's rows.
func (s *router) Statement(ctx context.Context, st source.Statement) error {
	r := s.r
	// The held run of cascading deletes goes first: DDL may change the
	// keys or the tables.
	if err := s.cascades.EndRun(ctx); err != nil {
		return err
	}
	if st.NonTableKind != "" {
		// Routines, triggers, views, events, accounts, grants: routine
		// when a schema is loaded, and nothing for replication to do. Not
		// their text: account statements carry passwords.
		r.m.DDL.WithLabelValues(metrics.DDLIgnored).Inc()
		r.log.Debug("statement changes no table; ignored", "kind", st.NonTableKind, "binlog", st.At.String())
		return nil
	}
	if !st.Parsed {
		r.m.DDL.WithLabelValues(metrics.DDLNotUnderstood).Inc()
		r.log.Warn("DDL not understood; tables keep replicating with the columns the binlog shows", "statement", truncate(st.Text, 500), "binlog", st.At.String())
		if len(st.Effects) == 0 {
			return nil
		}
		// Its words still show a change the table maps will not: act on it.
	}
	if err := s.cascades.FollowDDL(ctx, st); err != nil {
		return err
	}
	applied := false
	defer func() {
		result := metrics.DDLSkipped // not about a replicated table, or nothing to do
		if applied {
			result = metrics.DDLApplied
		}
		if st.Parsed {
			r.m.DDL.WithLabelValues(result).Inc()
		}
	}()
	for _, ef := range st.Effects {
		oldIn := r.cfg.Replicates(ef.Table.Database, ef.Table.Table) && !schema.SystemDatabase(ef.Table.Database)
		switch ef.Kind {
		case ddl.RowsByStatement, ddl.PartitionRows:
			if !oldIn && ef.Table != (schema.TableName{}) {
				continue
			}
			policy := r.cfg.Replication.OnStatementDML
			if ef.Kind == ddl.PartitionRows {
				policy = r.cfg.Replication.OnPartitionMaintenance
			}
			switch {
			case ef.Table == (schema.TableName{}) || policy == config.OnStop:
				return rowsWithoutEvents(ef, st)
			case policy == config.OnApply:
				if err := s.applyPartitions(ctx, ef, st); err != nil {
					return err
				}
				applied = true
			case policy == config.OnKeep:
				r.m.StatementsWithoutRows.WithLabelValues(config.OnKeep).Inc()
				r.log.Warn("partition maintenance removed or moved rows in MySQL; ClickHouse keeps them (replication.on_partition_maintenance: keep)",
					"table", ef.Table.String(), "statement", truncate(st.Text, 300), "binlog", st.At.String())
			case policy == config.OnRecopy:
				if err := s.recopy(ctx, ef.Table, st); err != nil {
					return err
				}
				applied = true
			}
		case ddl.Drop, ddl.Truncate, ddl.RenameColumns, ddl.AddColumns:
			if !oldIn {
				continue
			}
			if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ef.Kind, Renames: ef.Renames, Defaults: ef.Defaults, Added: ef.Added, At: st.At}); err != nil {
				return err
			}
			applied = true
			if ef.Kind == ddl.Drop {
				s.stopWriter(ef.Table)
			}
		case ddl.Create:
			if oldIn {
				if err := r.sink.ForgetTable(ef.Table); err != nil {
					return err
				}
			}
		case ddl.RenameTable:
			newIn := r.cfg.Replicates(ef.NewTable.Database, ef.NewTable.Table) && !schema.SystemDatabase(ef.NewTable.Database)
			switch {
			case oldIn && newIn && ef.Table.Database == ef.NewTable.Database:
				// A writer still dropping or renaming away the new name's
				// table must be done before this rename runs.
				if err := s.awaitRetired(ctx, ef.NewTable); err != nil {
					return err
				}
				if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.RenameTable, NewName: ef.NewTable.Table, At: st.At}); err != nil {
					return err
				}
				applied = true
				rt := s.writers[ef.Table]
				rt.tm = r.m.ForTable(ef.NewTable) // the writer's too, once it has renamed
				rt.tm.PendingSince.Store(0)
				if len(rt.marks) > 0 {
					rt.tm.PendingSince.Store(rt.marks[0].at)
				}
				s.writers[ef.NewTable] = rt
				delete(s.writers, ef.Table)
				s.retire(ef.Table, rt.w, s.seq)
			case oldIn:
				r.log.Warn("table renamed out of the replicated set (or to another database); its ClickHouse table is kept but no longer updated", "from", ef.Table.String(), "to", ef.NewTable.String())
				s.stopWriter(ef.Table)
			case newIn:
				r.log.Warn("table renamed into the replicated set: only changes from now on are replicated; copy its existing rows with binlog2ch fullsync", "from", ef.Table.String(), "to", ef.NewTable.String())
			}
		}
	}
	return nil
}

// recopy is the way out after a change the binlog cannot replay: a
// restart alone would stop at the same event again.
const recopy = "re-copy: stop binlog2ch, run `binlog2ch fullsync -recreate -checkpoint` (it copies every table into emptied tables and moves the checkpoint past this event), and start binlog2ch again"

// rowsWithoutEvents is the error that stops the daemon at a statement that
// changed a replicated table's rows without row events: binlog2ch cannot
// know which rows, and will not guess.
func rowsWithoutEvents(ef ddl.Effect, st source.Statement) error {
	if ef.Kind == ddl.PartitionRows {
		return fmt.Errorf("binlog %s: %s: partition maintenance removed or moved rows without row events (statement %q). ClickHouse still holds the rows MySQL no longer has. To make it equal again, %s. Or choose in the config what such statements do from now on: replication.on_partition_maintenance: recopy (copy the table again, then go on) or keep (ClickHouse keeps the rows, as an archive)",
			st.At, ef.Table, truncate(st.Text, 300), recopy)
	}
	table := ef.Table.String()
	if ef.Table == (schema.TableName{}) {
		table = "a table binlog2ch could not tell (it cannot parse the statement)"
	}
	return fmt.Errorf("binlog %s: %s: rows changed by a statement the binlog holds as SQL text, not as row events: the session that ran it had binlog_format STATEMENT or MIXED (statement %q). binlog2ch replicates row events only and will not guess the rows. Set binlog_format = ROW globally and make sure no session sets it otherwise (SET SESSION binlog_format), then %s. Or set replication.on_statement_dml: recopy, which copies such a table again by itself and goes on",
		st.At, table, truncate(st.Text, 300), recopy)
}

// applyPartitions sends a TRUNCATE or DROP PARTITION to the table's writer,
// which deletes the partitions' rows by their bounds. The bounds are those
// read when the table's writer started, as DROPs since have left them: a
// dropped partition is gone from information_schema by the time its
// statement is read.
func (s *router) applyPartitions(ctx context.Context, ef ddl.Effect, st source.Statement) error {
	r := s.r
	if ef.PartitionOp != "TRUNCATE" && ef.PartitionOp != "DROP" {
		return fmt.Errorf("binlog %s: %s: partition maintenance that moves rows (statement %q) cannot be applied by bounds; set replication.on_partition_maintenance: recopy, or %s",
			st.At, ef.Table, truncate(st.Text, 300), recopy)
	}
	parts := s.partitions[ef.Table]
	if parts == nil || !parts.Has(ef.Partitions) {
		var err error
		if parts, err = catalog.LoadPartitions(ctx, r.my, ef.Table); err != nil {
			return err
		}
		if parts == nil {
			parts = &catalog.Partitions{}
		}
	}
	// The writer reads parts now; the router keeps its own copy.
	sent := *parts
	sent.Parts = append([]catalog.Partition(nil), parts.Parts...)
	if err := s.dispatch(ctx, ef.Table, sink.Message{DDL: ddl.PartitionRows, Partitions: &sent, Removed: ef.Partitions, At: st.At}); err != nil {
		return err
	}
	if ef.PartitionOp == "DROP" {
		parts.Drop(ef.Partitions)
	}
	s.partitions[ef.Table] = parts
	r.m.StatementsWithoutRows.WithLabelValues(config.OnApply).Inc()
	r.log.Info("partition maintenance applied: the partitions' rows deleted in ClickHouse by their bounds", "table", ef.Table.String(), "partitions", ef.Partitions, "binlog", st.At.String())
	return nil
}

// recopyFile is the progress file of a table copied again while running.
const recopyFile = "recopy.json"

// recopy copies a table again from MySQL after a statement changed its rows
// without row events (replication.on_... recopy). The stream waits: the
// table's writer finishes, its ClickHouse table is emptied and copied at
// the current binlog position, and the table's events read from here on
// apply over the copy by their versions (those before the copy's position
// lose to it, those after win), as for `fullsync -recreate -tables`. A
// crash meanwhile leaves the checkpoint before the statement: the restart
// reads it again and copies again.
func (s *router) recopy(ctx context.Context, t schema.TableName, st source.Statement) error {
	r := s.r
	// The tables t's rows cascade to are copied with it: their cascades
	// through t cannot be derived from a copy of t (package cascade).
	tables := append([]schema.TableName{t}, s.cascades.Descendants(t)...)
	for _, x := range tables {
		s.stopWriter(x)
	}
	for _, x := range tables {
		if err := s.awaitRetired(ctx, x); err != nil {
			return err
		}
	}
	pos, err := r.currentPosition(ctx)
	if err != nil {
		return err
	}
	log := r.log.With("component", "recopy", "table", t.String())
	log.Warn("a statement changed the table's rows without row events; copying it again from MySQL (replication.on_... recopy)",
		"statement", truncate(st.Text, 300), "binlog", st.At.String(), "copy_position", pos.String(), "with_cascade_children", len(tables)-1)
	// The server's position is on the history the stream reads: its
	// versions take the same offset.
	snap := &snapshot.State{Server: r.server.ID, Position: pos, FileOffset: s.stream.Offset(), Started: time.Now().UTC(), Tables: map[string]*snapshot.TableProgress{}, Recreate: true}
	opts := r.copyOptions(log, snap, recopyFile)
	opts.Recreate = true
	statuses, err := snapshot.Copy(ctx, opts, tables)
	if err != nil {
		return fmt.Errorf("binlog %s: %s: copying the table again after a statement that changed its rows without row events: %w", st.At, t, err)
	}
	_ = os.Remove(filepath.Join(r.cfg.StateDir, recopyFile))
	for _, x := range tables {
		r.cascadeRunner.ForgetHorizon(x)
	}
	r.m.StatementsWithoutRows.WithLabelValues(config.OnRecopy).Inc()
	var rows uint64
	for _, x := range statuses {
		rows += x.Rows
	}
	log.Info("table copied again", "rows", rows)
	return nil
}

// stopWriter closes a writer's queue: it finishes what it holds and exits.
func (s *router) stopWriter(name schema.TableName) {
	if rt := s.writers[name]; rt != nil {
		close(rt.w.In())
		s.wake(rt.w)
		rt.closed = true
		delete(s.writers, name)
		s.retire(name, rt.w, rt.dispatched)
	}
}

// closeAll closes every writer's queue, at shutdown.
func (s *router) closeAll() {
	for _, rt := range s.all {
		if !rt.closed {
			close(rt.w.In())
			s.wake(rt.w)
			rt.closed = true
		}
	}
}

// wake runs a parked writer again after a message was sent to it or its
// queue closed.
func (s *router) wake(w *sink.Writer) {
	if w.Wake() {
		s.start(w)
	}
}

func (s *router) retire(name schema.TableName, w *sink.Writer, seq uint64) {
	if s.retired == nil {
		s.retired = map[schema.TableName]retiredWriter{}
	}
	s.retired[name] = retiredWriter{w: w, seq: seq}
}

// awaitRetired waits until the writer that last had the name is past the
// DDL that freed it.
func (s *router) awaitRetired(ctx context.Context, name schema.TableName) error {
	rw, ok := s.retired[name]
	if !ok {
		return nil
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for n := 0; !rw.past(); n++ {
		select {
		case <-tick.C:
			if n%250 == 0 {
				s.r.checkIn() // still alive, waiting on a writer
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	delete(s.retired, name)
	return nil
}

// checkpoint saves the newest transaction boundary before which every
// dispatched row is in ClickHouse. final is set at shutdown, when every
// writer has flushed.
func (s *router) checkpoint(final bool) error { return s.save(final, false) }

// raiseCeiling saves the checkpoint with a version ceiling above f before
// rows of a file with F f go out: every version in ClickHouse then stays
// below the ceiling saved, where a new binlog history would start.
func (s *router) raiseCeiling(ctx context.Context, f uint32) error {
	s.readF = max(s.readF, f)
	for {
		if err := s.save(false, true); err != nil {
			return err
		}
		if f < s.ceiling {
			return nil
		}
		// Not saved (a ClickHouse store's hiccup, logged): rows wait.
		s.r.checkIn()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// save saves the newest transaction boundary before which every
// dispatched row is in ClickHouse; force saves it even when unchanged.
func (s *router) save(final, force bool) error {
	r := s.r
	if hook := r.hooks.checkpointed; hook != nil {
		defer hook()
	}
	s.lastSaved = time.Now()
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
	cp := s.commits[i].pos
	if at := s.commits[i].at; at != 0 {
		metrics.AdvanceTo(&r.m.Durable, at)
	}
	if i == len(s.commits)-1 && !s.pending() {
		// Everything read is in: as current as the newest event read.
		metrics.AdvanceTo(&r.m.Durable, s.lastTS)
	}
	s.commits = s.commits[i:]
	// Forget writers that have finished.
	s.all = slices.DeleteFunc(s.all, func(rt *route) bool { return rt.w.Done() && rt.closed })
	if cp == s.saved && !force {
		return nil
	}
	point := s.commits[0]
	ceiling := max(s.ceiling, s.readF+ceilingGap)
	ext := state.StreamState{GTID: point.gtid, History: point.hist, Offset: point.offset, Ceiling: ceiling, TableGTIDs: s.stream.TableGTIDs(), ResumeByGTID: point.byGTID}
	if s.cascades != nil {
		ext.ForeignKeys = s.cascades.KeysAt(cp)
	}
	if g := s.stream.GTIDs(); !g.IsEmpty() {
		ext.ReadGTID = g.String()
	}
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
	s.saved, s.ceiling = cp, ceiling
	r.savedPos.Store(&cp)
	r.noteCheckpoint(&saved)
	r.m.CheckpointTS.Set(float64(time.Now().UnixNano()) / 1e9)
	if idx, err := source.FileIndex(cp.File); err == nil {
		r.m.CheckpointFile.Set(float64(idx))
	}
	r.m.CheckpointPos.Set(float64(cp.Pos))
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
