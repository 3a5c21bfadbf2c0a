package router

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/partitioning"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Router is the source's Handler: it routes each table's events, in
// binlog order, to that table's writer, starting writers as tables appear,
// and saves the checkpoint as the writers report their rows durable. It
// runs in the stream's goroutine.
type Router struct {
	opt    Options
	stream *source.Stream
	// From Options, under the names the daemon's were (run.go).
	cfg                *config.Config
	log                *slog.Logger
	m                  *metrics.Metrics
	sink               *sink.ClickHouse
	server             source.Server
	my                 *sql.DB
	hooks              Hooks
	cascadeRunner      *cascade.Runner
	snapshotEndVersion uint64
	queueLen           int
	parkAfter          time.Duration
	readPos, savedPos  *atomic.Pointer[source.Position]
	mysqlUp            *atomic.Bool
	checkin            *atomic.Int64
	// eventNow is the clock as Event last read it (its monotonic reading
	// kept), for the Tick after that event (zero: Tick reads it). Both run
	// on the stream's goroutine.
	eventNow     time.Time
	sel          *Selection
	migrations   *migrations
	copyProgress atomic.Pointer[[]snapshot.TableStatus] // the running online copy's, latest
	writers      map[schema.TableName]*tableWriter
	all          []*tableWriter // every writer started, for shutdown and checkpoints
	// start runs a writer in its own goroutine.
	start func(*tableWriter)
	wg    sync.WaitGroup

	seq       uint64        // messages dispatched
	commits   []commitPoint // not yet checkpointed, oldest first
	lastSaved time.Time
	saved     source.Position
	// ceiling is the saved checkpoint's version ceiling: rows of a file
	// with F at or above it wait until a save raises it (versionCeiling).
	ceiling         uint32
	readVersionFile uint32 // F of the file the reader is in
	lastTS          int64  // timestamp (Unix ns) of the newest event read
	// retired are writers whose MySQL table name a DROP or RENAME freed
	// while they may still be working on that name's ClickHouse table: a
	// new writer for the name waits until they are past the DDL, so two
	// writers never write one table at once.
	retired map[schema.TableName]retiredWriter
	// partitions are the partition layouts as of the position read
	// (replication.on_partition_maintenance: apply only; layouts.go).
	partitions *partitioning.Layouts
	// queued is the bytes of rows events sent to writers and not yet taken
	// into their blocks (see maxQueuedBytes).
	queued atomic.Int64
	// pendingNoted is when notePending last ran.
	pendingNoted time.Time
	// cascades are the foreign-key cascades of the events read: every
	// rows event and commit goes through them (cascade.go).
	cascades *cascade.Follower
	// copies are the tables copied online (copies.go).
	copies *onlineCopies
	// ctx is the reader's, for what Tick does.
	ctx context.Context
	// savedCopies is the copy state last saved.
	savedCopies map[string]*state.TableCopy
	// stored are the start checkpoint's records of tables stored past it,
	// until their writers take them (stored.go).
	stored      map[schema.TableName]uint64
	savedStored map[string]uint64 // the last checkpoint's Stored
	// flushes is set by a writer's flush until Tick moves the lag's clock.
	flushes atomic.Bool
	// failures are writers' failures to mark; skipping, the failed tables
	// whose events are skipped until their copy starts (failed.go).
	failures writerFailures
	skipping map[schema.TableName]bool
	fkeys    *cascade.Keys // the cascades' keys, which they change in place
}

// tableWriter is a writer and what the router sent it.
type tableWriter struct {
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
	// exited is closed, and gone set, when its Run returned an error: it
	// takes nothing more. sentBytes (router) and takenBytes (writer) count
	// the bytes of rows events sent and taken, with skip_table only.
	exited     chan struct{}
	gone       atomic.Bool
	sentBytes  int64
	takenBytes atomic.Int64
}

// mark says the messages up to seq, after the previous mark's, carry rows
// committed at at (Unix ns).
type mark struct {
	seq uint64
	at  int64
}

// sent records a message handed to the route's writer.
func (s *Router) sent(rt *tableWriter, seq uint64) {
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
func (s *Router) notePending(now time.Time) {
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

// retiredWriter is a writer and the DDL message after which it no longer
// touches its old name's table.
type retiredWriter struct {
	w    *sink.Writer
	seq  uint64
	gone *atomic.Bool // the tableWriter's
}

// past reports whether the writer is done with the DDL (or stopped, or
// failed: it touches nothing any more).
func (rw retiredWriter) past() bool { return rw.w.Done() || rw.w.Flushed() >= rw.seq || rw.gone.Load() }

// Event updates liveness and the lag metrics for an event read.
func (s *Router) Event(e source.Event) {
	r := s
	r.eventNow = time.Now()
	now := r.eventNow.UnixNano()
	r.checkin.Store(now) // as checkIn, with the clock read once per event
	r.mysqlUp.Store(true)
	if e.Heartbeat {
		// The server has nothing newer: the reader is at its end, and
		// with nothing pending in the writers, so is ClickHouse, until
		// the next heartbeat is overdue (metrics.AtEnd).
		r.sink.SetCaughtUp(true)
		metrics.AdvanceTo(&r.m.Read, now)
		p := s.cfg.MySQL.HeartbeatPeriod
		atEnd := now + int64(p+max(p/2, 100*time.Millisecond))
		r.m.AtEnd.Store(atEnd)
		if !s.pending() {
			metrics.AdvanceTo(&r.m.Durable, now)
			r.m.DurableAtEnd.Store(atEnd)
		}
		return
	}
	if r.m.AtEnd.Load() != 0 {
		// The first event after a wait at the end: everything before it
		// was read, and (DurableAtEnd) stored.
		r.m.AtEnd.Store(0)
		metrics.AdvanceTo(&r.m.Read, now)
		if r.m.DurableAtEnd.Swap(0) != 0 {
			metrics.AdvanceTo(&r.m.Durable, now)
		}
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
func (s *Router) Down(error, source.Position, time.Duration) {
	s.cascades.DropUncommitted()
	s.mysqlUp.Store(false)
	s.m.Errors.WithLabelValues(metrics.StageRead).Inc()
	s.checkIn()
}

// maxQueuedBytes bounds the bytes of undecoded rows events queued for all
// writers together: a writer's queue holds up to queueLen events, which
// with large values (an UPDATE carries the row twice) would be gigabytes.
const maxQueuedBytes = 256 << 20

// Rows sends one rows event to its table's writer.
func (s *Router) Rows(ctx context.Context, e source.Rows) error {
	if hook := s.hooks.RowsEvent; hook != nil {
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
func (s *Router) send(ctx context.Context, e source.Rows) error {
	if s.skipping[e.Table] {
		return nil // failed: its copy brings these rows
	}
	m := sink.Message{Schema: e.Schema, Rows: e.Rows, Partial: e.Partial, Raw: e.Raw, Lease: e.Lease, Op: e.Op, Version: e.Version, Versions: e.Versions, At: e.At}
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
func (s *Router) awaitQueueRoom(ctx context.Context, size int64) error {
	for n := 0; ; n++ {
		// A failed writer's queue gives its bytes back when it is marked.
		if err := s.takeFailures(); err != nil {
			return err
		}
		q := s.queued.Load()
		if q == 0 || q+size <= maxQueuedBytes {
			s.queued.Add(size)
			return nil
		}
		if n%500 == 0 {
			s.checkIn()
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
func (s *Router) dispatch(ctx context.Context, name schema.TableName, m sink.Message) error {
	if s.skipped(name, &m) {
		return nil
	}
	rt := s.writers[name]
	if rt == nil {
		if err := s.awaitRetired(ctx, name); err != nil {
			return err
		}
		w := s.sink.NewWriter(name, s.queueLen)
		if v, ok := s.takeStored(name); ok {
			w.SkipStored(v)
		}
		w.OnFlushed(s.storedNow)
		w.ParkWhenIdle(s.parkAfter)
		rt = &tableWriter{w: w, tm: s.m.ForTable(name), exited: make(chan struct{})}
		s.writers[name] = rt
		s.all = append(s.all, rt)
		s.start(rt)
	}
	if s.skipTables() {
		rt.track(&m)
	}
	s.seq++
	m.Seq = s.seq
	select {
	case rt.w.In() <- &m:
		s.sent(rt, m.Seq)
		s.wake(rt)
		return nil
	default:
	}
	// The queue is full (ClickHouse is slow or away): wait, checking in
	// so the daemon still counts as alive.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	exited := rt.exited
	for {
		select {
		case rt.w.In() <- &m:
			s.sent(rt, m.Seq)
			s.wake(rt)
			return nil
		case <-tick.C:
			s.checkIn()
		case <-exited:
			// The writer failed: marked failed now, its table's messages
			// are skipped; else the daemon stops (ctx).
			exited = nil
			if err := s.takeFailures(); err != nil {
				return err
			}
			if s.writers[name] != rt {
				return nil // its bytes went back with the writer's (markFailed)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stopWriter closes a writer's queue: it finishes what it holds and exits.
func (s *Router) stopWriter(name schema.TableName) {
	if rt := s.writers[name]; rt != nil {
		close(rt.w.In())
		s.wake(rt)
		rt.closed = true
		delete(s.writers, name)
		s.retire(name, rt.w, rt.dispatched)
	}
}

// closeAll closes every writer's queue, at shutdown.
func (s *Router) closeAll() {
	for _, rt := range s.all {
		if !rt.closed {
			close(rt.w.In())
			s.wake(rt)
			rt.closed = true
		}
	}
}

// wake runs a parked writer again after a message was sent to it or its
// queue closed.
func (s *Router) wake(rt *tableWriter) {
	if rt.w.Wake() {
		s.start(rt)
	}
}

func (s *Router) retire(name schema.TableName, w *sink.Writer, seq uint64) {
	if s.retired == nil {
		s.retired = map[schema.TableName]retiredWriter{}
	}
	rw := retiredWriter{w: w, seq: seq, gone: &atomic.Bool{}}
	for _, rt := range s.all {
		if rt.w == w {
			rw.gone = &rt.gone
		}
	}
	s.retired[name] = rw
}

// awaitRetired waits until the writer that last had the name is past the
// DDL that freed it.
func (s *Router) awaitRetired(ctx context.Context, name schema.TableName) error {
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
				s.checkIn() // still alive, waiting on a writer
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	delete(s.retired, name)
	return nil
}
