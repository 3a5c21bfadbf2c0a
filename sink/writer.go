package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Message is one unit of work for a writer, in binlog order: the rows of
// one rows event, or a DDL action.
type Message struct {
	// Seq numbers the messages a writer is sent, from 1 up; Flushed
	// reports the last one whose rows are durable.
	Seq    uint64
	Schema *schema.Table // the rows' schema, from the binlog's table map
	Rows   [][]any
	Raw    binlog.RawRows // the row images undecoded, instead of Rows
	// Result is rows a table copy read in MySQL's binary protocol, framed
	// by mysqlproto, whose columns are ResultCols: the writer decodes them
	// straight into its block (instead of Rows).
	Result     []byte
	ResultCols []mysqlproto.Column
	// Taken, when set, is called once the writer is done with the
	// message's rows (taken into a block, or failed): Result's bytes may
	// be reused from then on.
	Taken func()
	Op    source.Op
	// Version is the _version of the first row; row i has Version +
	// min(i, Slots-1). Rows copied by a snapshot all share one version
	// (Slots 1), at or above every event ending at or before the copy's
	// position and below every later one.
	Version uint64
	Slots   int
	At      source.Position // for error messages
	// Snapshot marks rows read from the table rather than the binlog;
	// Range names their key range, for errors.
	Snapshot bool
	Range    string
	// Queued, when set, counts the bytes of events sent and not yet taken
	// into a block: the writer takes Bytes off it once it has the rows.
	Queued *atomic.Int64
	Bytes  int64

	DDL      ddl.Kind
	NewName  string            // ddl.RenameTable: new MySQL table name
	Renames  map[string]string // ddl.RenameColumns: old -> new
	Defaults map[string]string // ddl.AddColumns: column -> literal
	Added    []string          // ddl.AddColumns: the columns added
	// ddl.PartitionRows, applied: the table's partitions before the
	// statement and those it removed.
	Partitions *catalog.Partitions
	Removed    []string
	// Flushed, when set, asks the writer to send what it holds and wait
	// for ClickHouse to have it, then close the channel (a foreign-key
	// cascade reads the table next).
	Flushed chan struct{}
}

// where says where a message's rows come from, for errors.
func (m *Message) where() string {
	if m.Snapshot {
		if m.Range != "" {
			return "the snapshot taken at binlog " + m.At.String() + ", " + m.Range
		}
		return "the snapshot taken at binlog " + m.At.String()
	}
	return "binlog " + m.At.String()
}

// Writer owns one ClickHouse table: it converts that table's rows into
// columnar batches and sends them, in binlog order.
type Writer struct {
	c    *ClickHouse
	name schema.TableName // MySQL table
	// in carries pointers: a queue of 256 Messages by value would be
	// 60 KiB a writer, allocated up front, 120 MiB with 2,000 tables.
	in  chan *Message
	log *slog.Logger

	source *schema.Table
	target *schema.Target
	block  *block.Block

	// ticket asks the insert budget for the current batch's turn (nil:
	// none asked); due is when its timer fires.
	ticket *Ticket
	due    time.Time

	lastSeq  uint64        // seq of the last message taken from in
	flushed  atomic.Uint64 // every message with seq <= flushed is in ClickHouse
	done     atomic.Bool   // Run has returned nil
	firstRow time.Time     // when the block got its first row
	lastSend time.Time     // when the last batch was handed off

	returned chan *sendJob // blocks sent, back from their senders
	sendErr  chan error    // a sender's fatal error
	sending  sync.WaitGroup
	scratch  []*shardScratch // senders' buffers, kept between blocks
	inflight int             // blocks handed off and not yet returned
	order    []*sendJob      // blocks handed off, oldest first, until sent in order
	waited   time.Duration   // time spent waiting for ClickHouse to take a block
	// fixups count values changed by schema.invalid_dates, by kind, in
	// batches sent; the senders update them.
	fixups       [block.NumFixups]atomic.Uint64
	fixupsLogged atomic.Int64  // when the totals were last logged (Unix ns)
	busy         time.Duration // time spent converting rows
	free         []*block.Block
	blocks       int // blocks built for the current target
	// defaults are the DEFAULTs of columns an ALTER added, used when
	// ClickHouse gets the column (at the next table map).
	defaults map[string]string
	// nativeRefused is a target whose ClickHouse table differs from the
	// mapping, so its blocks go through clickhouse-go.
	nativeRefused atomic.Pointer[schema.Target]
	// nativeOff: the server answered the native inserter with something
	// it cannot follow (chnative.ProtocolError). Every later block of the
	// table goes through clickhouse-go, whatever its target: the server's
	// protocol does not change with the table's schema.
	nativeOff atomic.Bool
	// flushedHook, if set, is called when blocks sent advance flushed.
	flushedHook  func()
	tm           *metrics.Table
	inflightRows int // rows in blocks handed off and not yet returned
	// route sends the target's blocks straight to a cluster's shards; nil:
	// to the configured servers (in a cluster, the Distributed table).
	route *route
	// held is the current block's bytes counted in the daemon's buffer
	// budget (memory.go).
	held int
	// parkAfter, when set, lets the writer's goroutine exit after that
	// long with nothing pending; parked says it has (see Wake).
	parkAfter time.Duration
	parkMu    sync.Mutex // orders parking with Wake
	parked    bool
}

// NewWriter returns the writer of MySQL table name, which may have queue
// messages waiting. Run runs it.
func (c *ClickHouse) NewWriter(name schema.TableName, queue int) *Writer {
	return &Writer{
		c:        c,
		name:     name,
		in:       make(chan *Message, queue),
		log:      c.log.With("table", name.String()),
		tm:       c.m.ForTable(name),
		returned: make(chan *sendJob, c.cfg.Batch.MaxInFlight),
		sendErr:  make(chan error, c.cfg.Batch.MaxInFlight),
	}
}

// ParkWhenIdle lets Run return after d with nothing pending and nothing
// queued, its batch buffers let go: a table that went quiet costs no
// goroutine and no batch memory. The writer keeps its schema and
// counters; whoever sends it a message calls Wake afterwards and runs it
// again if Wake says so. Set it before Run.
func (w *Writer) ParkWhenIdle(d time.Duration) { w.parkAfter = d }

// Wake reports whether the writer was parked and is no longer: the caller
// must then call Run (in a new goroutine) for the messages it sent. Call it
// after every send to In, and after closing In.
func (w *Writer) Wake() bool {
	w.parkMu.Lock()
	was := w.parked
	w.parked = false
	w.parkMu.Unlock()
	if was {
		w.c.m.Writers.WithLabelValues(metrics.WriterParked).Dec()
	}
	return was
}

// In is the writer's queue. Closing it stops the writer once it has
// written everything before.
func (w *Writer) In() chan<- *Message { return w.in }

// Flushed is the Seq of the newest message up to which every row is
// durably in ClickHouse (and every DDL applied).
func (w *Writer) Flushed() uint64 { return w.flushed.Load() }

// Done reports whether Run has returned without an error.
func (w *Writer) Done() bool { return w.done.Load() }

// OnFlushed sets a function called (from the writer's goroutine) whenever
// Flushed advances after a batch came back. Set it before Run.
func (w *Writer) OnFlushed(f func()) { w.flushedHook = f }

// Name is the writer's MySQL table: after a RENAME TABLE, the new name.
// Call it from Run's goroutine or after Run returned.
func (w *Writer) Name() schema.TableName { return w.name }

// Run processes messages until In is closed (a clean shutdown: the pending
// rows are flushed) or an error stops it. Batches are sent by other
// goroutines while the next one fills.
func (w *Writer) Run(parent context.Context) error {
	running := w.c.m.Writers.WithLabelValues(metrics.WriterRunning)
	running.Inc()
	defer running.Dec()
	err := w.run(parent)
	switch {
	case err == errParked:
		w.c.m.Writers.WithLabelValues(metrics.WriterParked).Inc()
		return nil
	case err == nil:
		w.done.Store(true)
	}
	return err
}

// errParked is run's return when the writer parked (ParkWhenIdle).
var errParked = errors.New("parked")

func (w *Writer) run(parent context.Context) error {
	// Canceled when run returns, before it waits for the senders: a sender
	// retrying a failed insert must not keep a writer that is stopping for
	// another error. Up to batch.max_inflight batches of a table are sent
	// at once, each by a goroutine of its own while it is in flight
	// (ClickHouse works on each insert mostly on one thread; order does
	// not matter, every row carries its version) while one more fills.
	// Those are all the blocks a writer has: when every one is in flight
	// or full, the writer waits.
	ctx, cancel := context.WithCancel(parent)
	parked := false
	defer func() {
		cancel()
		if !parked {
			// Parked, none is in flight; and a Wait could then overlap
			// the next run's first Add.
			w.sending.Wait()
		}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	// idle fires parkAfter after the writer last had nothing pending.
	var idle *time.Timer
	var idleC <-chan time.Time
	if w.parkAfter > 0 {
		idle = time.NewTimer(w.parkAfter)
		defer idle.Stop()
		idleC = idle.C
	}
	for {
		select {
		case mp, ok := <-w.in:
			if !ok {
				err := w.drain(ctx)
				w.log.Debug("writer stopped", "waited_for_clickhouse", w.waited, "converting", w.busy)
				return err
			}
			m := *mp
			start := time.Now()
			err := w.handle(ctx, m)
			if m.Queued != nil {
				m.Queued.Add(-m.Bytes)
			}
			if m.Taken != nil {
				m.Taken()
			}
			if err != nil {
				return err
			}
			w.lastSeq = m.Seq
			if len(m.Raw) > largeEvent || len(m.Result) > largeEvent {
				// The event's buffer is garbage now: give it back before
				// the next large one comes, rather than when the heap has
				// doubled and the runtime returns memory at its pace.
				m = Message{}
				debug.FreeOSMemory()
			}
			w.busy += time.Since(start)
			w.noteQueue()
			if w.block != nil && w.block.Rows() > 0 {
				size := w.block.Size()
				w.c.mem.add(size - w.held)
				w.held = size
				switch {
				case w.block.Rows() >= w.c.cfg.Batch.MaxRows || size >= w.c.cfg.Batch.MaxBytes:
					w.c.budget.Take(GrantFull)
					if err := w.handOff(ctx); err != nil {
						return err
					}
				case w.c.mem.over():
					if err := w.relieveMemory(ctx); err != nil {
						return err
					}
				default:
					w.schedule(timer)
				}
			} else if w.inflight == 0 {
				// Nothing pending: everything taken so far is durable.
				w.flushed.Store(w.lastSeq)
			}
		case <-timer.C:
			// The batch waited out its interval: its turn comes from the
			// insert budget.
			w.due = time.Time{}
			if w.ticket == nil && w.block != nil && w.block.Rows() > 0 {
				reason := GrantInterval
				if time.Since(w.firstRow) < w.c.cfg.Batch.FlushInterval {
					reason = GrantLive
				}
				w.ticket = w.c.budget.Request(w.firstRow, reason)
			}
		case <-w.ticketC():
			w.ticket = nil
			if err := w.handOff(ctx); err != nil {
				return err
			}
		case job := <-w.returned:
			w.recycle(job)
		case err := <-w.sendErr:
			return err
		case <-idleC:
			if parked = w.park(); parked {
				return errParked
			}
		}
		if w.firstRow.IsZero() {
			timer.Stop()
			w.due = time.Time{}
		}
		if idle != nil && w.idle() {
			idle.Reset(w.parkAfter)
		}
	}
}

// idle reports whether the writer holds nothing: no rows, none in flight.
func (w *Writer) idle() bool {
	return w.inflight == 0 && (w.block == nil || w.block.Rows() == 0)
}

// park lets the writer's buffers go and marks it parked when it holds
// nothing and nothing is queued; false: it goes on (busy again, or a
// message came in while it parked and it took the writer back first).
func (w *Writer) park() bool {
	if !w.idle() {
		return false
	}
	// A new block is made from the target when rows come again.
	w.block, w.blocks, w.free, w.scratch = nil, 0, nil, nil
	// A sender puts its message in before it calls Wake, which takes the
	// lock: either the message is seen here, or Wake sees parked.
	w.parkMu.Lock()
	defer w.parkMu.Unlock()
	w.parked = len(w.in) == 0
	return w.parked
}

// relieveMemory sends the batch now because the writers' buffers together
// are over batch.max_buffer_bytes, and waits for this writer's batches in
// flight while they stay over: the memory is then in inserts that are
// finishing, not in batches that keep growing.
func (w *Writer) relieveMemory(ctx context.Context) error {
	w.c.budget.Take(GrantMemory)
	if err := w.handOff(ctx); err != nil {
		return err
	}
	for w.inflight > 0 && w.c.mem.over() {
		if err := w.await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// schedule sets the batch's flush: flush_interval after its first row; or,
// when the reader is live and nothing more is queued for the table, at
// once, but no sooner than live_flush_interval after the table's last
// insert. A light load's rows then wait for nothing but the insert, and
// a busy table makes at most one insert per live_flush_interval, whose
// rows waited at most that long.
func (w *Writer) schedule(timer *time.Timer) {
	now := time.Now()
	if w.firstRow.IsZero() {
		w.firstRow = now
		w.tm.OldestUnsent.Set(float64(now.UnixNano()) / 1e9)
		w.due = now.Add(w.c.cfg.Batch.FlushInterval)
		timer.Reset(w.c.cfg.Batch.FlushInterval)
	}
	if w.ticket != nil || !w.c.caughtUp.Load() || len(w.in) > 0 {
		return
	}
	live := w.lastSend.Add(w.c.cfg.Batch.LiveFlushInterval)
	if live.Before(now) {
		live = now
	}
	if !w.due.IsZero() && live.Before(w.due) {
		w.due = live
		timer.Reset(live.Sub(now))
	}
}

// ticketC is the channel the budget grants the batch's turn on; nil (never
// ready) when none was asked.
func (w *Writer) ticketC() <-chan struct{} {
	if w.ticket == nil {
		return nil
	}
	return w.ticket.C
}

// noteQueue updates binlog2ch_queue_rows: rows converted and not yet in
// ClickHouse.
func (w *Writer) noteQueue() {
	n := w.inflightRows
	if w.block != nil {
		n += w.block.Rows()
	}
	w.tm.SetQueued(n)
}

// sendJob is a block on its way to ClickHouse; seq is the last message
// whose rows it holds.
type sendJob struct {
	block   *block.Block
	route   *route
	seq     uint64
	rows    int
	bytes   int // the block's size when handed off
	sent    bool
	scratch *shardScratch
}

// largeEvent is the size of a rows event after which the writer collects
// garbage at once (values of tens of MiB: the heap would otherwise hold
// several of them before the collector's next cycle).
const largeEvent = 32 << 20

// largeRow is the average row size above which a sent block's buffers are
// let go rather than reused.
const largeRow = 4 << 20

// sendOne sends a block handed off, in a goroutine of its own, and
// returns it; the channels have room for every block in flight.
func (w *Writer) sendOne(ctx context.Context, job *sendJob) {
	defer w.sending.Done()
	if err := w.send(ctx, job.block, job.route, job.scratch); err != nil {
		w.sendErr <- err
		return
	}
	w.returned <- job
}

// recycle takes back a sent block. Blocks may come back out of order: the
// flushed mark advances over the longest prefix of handed-off blocks that
// are all sent.
func (w *Writer) recycle(job *sendJob) {
	w.inflight--
	w.inflightRows -= job.rows
	w.c.mem.add(-job.bytes)
	w.scratch = append(w.scratch, job.scratch)
	defer w.noteQueue()
	job.sent = true
	for len(w.order) > 0 && w.order[0].sent {
		w.flushed.Store(w.order[0].seq)
		w.order = w.order[1:]
	}
	if w.flushedHook != nil {
		defer w.flushedHook()
	}
	switch {
	case job.block.Target() != w.target:
		w.blocks-- // built for an older schema
	case job.bytes > 2*w.c.cfg.Batch.MaxBytes, job.rows > 0 && job.bytes/job.rows > largeRow:
		// Grown by large values: its buffers are not kept for the next
		// rows, which would rarely need them, and go back to the system
		// now rather than when the runtime gets to it.
		w.blocks--
		job.block = nil
		debug.FreeOSMemory()
	default:
		w.free = append(w.free, job.block)
	}
	if w.inflight == 0 && (w.block == nil || w.block.Rows() == 0) {
		w.flushed.Store(w.lastSeq)
	}
}

// handOff queues the current block for sending and continues with another,
// waiting for one to come back when both are in flight.
func (w *Writer) handOff(ctx context.Context) error {
	if w.ticket != nil {
		// Going out another way (full, drained): no turn needed.
		w.c.budget.Cancel(w.ticket)
		w.ticket = nil
	}
	if !w.firstRow.IsZero() {
		w.tm.OldestUnsent.Set(0)
	}
	w.firstRow = time.Time{}
	if w.block == nil || w.block.Rows() == 0 {
		if w.inflight == 0 {
			w.flushed.Store(w.lastSeq)
		}
		return nil
	}
	if max := w.c.cfg.Batch.MaxInFlight + 1; len(w.free) == 0 && w.blocks >= max {
		start := time.Now()
		for len(w.free) == 0 && w.blocks >= max {
			if err := w.await(ctx); err != nil {
				return err
			}
		}
		w.waited += time.Since(start)
	}
	var next *block.Block
	if n := len(w.free); n > 0 {
		next, w.free = w.free[n-1], w.free[:n-1]
	} else {
		next = block.NewBlock(w.target)
		w.blocks++
	}
	w.lastSend = time.Now()
	if w.block.Size() <= 2*w.c.cfg.Batch.MaxBytes {
		// The next batch is likely as large (one grown by large values is
		// not kept, see recycle): room for it now, while the buffers are
		// empty, costs no copy.
		next.Reserve(w.block)
	}
	job := &sendJob{block: w.block, route: w.route, seq: w.lastSeq, rows: w.block.Rows(), bytes: w.block.Size()}
	// The block's bytes stay counted until it comes back.
	w.c.mem.add(job.bytes - w.held)
	w.held = 0
	if n := len(w.scratch); n > 0 {
		job.scratch, w.scratch = w.scratch[n-1], w.scratch[:n-1]
	} else {
		job.scratch = &shardScratch{}
	}
	w.sending.Add(1)
	go w.sendOne(ctx, job)
	w.order = append(w.order, job)
	w.inflight++
	w.inflightRows += job.rows
	w.block = next
	return nil
}

// await waits for one block to come back from the sender.
func (w *Writer) await(ctx context.Context) error {
	select {
	case job := <-w.returned:
		w.recycle(job)
		return nil
	case err := <-w.sendErr:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain sends everything pending and waits until ClickHouse has it: before
// DDL, a schema change, and at shutdown.
func (w *Writer) drain(ctx context.Context) error {
	if w.block != nil && w.block.Rows() > 0 {
		w.c.budget.Take(GrantDrain)
	}
	if err := w.handOff(ctx); err != nil {
		return err
	}
	for w.inflight > 0 {
		if err := w.await(ctx); err != nil {
			return err
		}
	}
	w.flushed.Store(w.lastSeq)
	return nil
}

func (w *Writer) handle(ctx context.Context, m Message) error {
	if m.Flushed != nil {
		if err := w.drain(ctx); err != nil {
			return err
		}
		close(m.Flushed)
		return nil
	}
	if m.DDL != 0 {
		if err := w.drain(ctx); err != nil {
			return err
		}
		return w.applyDDL(ctx, m)
	}
	if w.source == nil || (m.Schema != w.source && !binlog.SameColumns(m.Schema, w.source)) {
		if err := w.drain(ctx); err != nil {
			return err
		}
		if err := w.changeSchema(ctx, m.Schema); err != nil {
			return fmt.Errorf("%s at %s: %w", w.name, m.where(), err)
		}
	}
	w.source = m.Schema
	if w.block == nil {
		// Let go while the writer was parked.
		w.block = block.NewBlock(w.target)
		w.blocks++
	}
	if err := w.appendRows(m); err != nil {
		return fmt.Errorf("%s: %w", m.where(), err)
	}
	return nil
}

// send writes one block to ClickHouse, retrying until it takes it, and
// empties the block. With a route, the block goes to the shards.
func (w *Writer) send(ctx context.Context, b *block.Block, rt *route, sc *shardScratch) error {
	start := time.Now()
	rows := b.Rows()
	t := b.Target()
	var err error
	if rt != nil && w.native(t) {
		err = w.sendShards(ctx, b, rt, sc)
	} else {
		err = w.c.Retry(ctx, w.log, metrics.StageInsert, "insert into ClickHouse", w.counted(func(ctx context.Context) error {
			if b.NativeOK() && w.native(t) {
				err := w.c.ins.insertNative(ctx, "", t.InsertSQL(), b, nil)
				var mismatch *headerMismatch
				switch {
				case w.protocolSurprise(err):
					// The whole block goes again, through clickhouse-go
					// below (see protocolSurprise on what the server may
					// already hold).
				case errors.As(err, &mismatch):
					// The server's columns differ from the block's: the
					// table changed by hand, or only the wire names a type
					// otherwise.
					if changed := w.c.changedOnline(ctx, t, w.name.String()); changed != nil {
						return permanent(changed)
					}
					w.refuseNative(t, err)
				default:
					return w.explain(ctx, t, err)
				}
			}
			return w.explain(ctx, t, w.insertDriver(ctx, b))
		}))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	w.noteFixups(b.Fixups)
	b.Fixups = [len(b.Fixups)]uint64{}
	for op := schema.OpInsert; op <= schema.OpDelete; op++ {
		w.tm.AddRows(op, b.OpRows[op])
	}
	w.tm.Flushed(time.Now())
	took := time.Since(start)
	w.tm.FlushDuration.Observe(took.Seconds())
	w.tm.BatchRows.Observe(float64(rows))
	b.Reset()
	w.log.Debug("flushed", "rows", rows, "duration", took)
	return nil
}

// counted is an insert attempt whose failures the table's status counts.
func (w *Writer) counted(insert func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		err := insert(ctx)
		if err != nil && ctx.Err() == nil {
			w.tm.InsertFailed(err)
		}
		return err
	}
}

// explain turns an insert that failed for good into a TargetChangedError
// when the table changed under the writer (dropped, a column dropped or
// retyped by hand).
func (w *Writer) explain(ctx context.Context, t *schema.Target, err error) error {
	if err == nil || transient(err) {
		return err
	}
	if changed := w.c.changedOnline(ctx, t, w.name.String()); changed != nil {
		return permanent(changed)
	}
	return err
}

// native reports whether blocks of target t go through chnative.
func (w *Writer) native(t *schema.Target) bool {
	return w.nativeRefused.Load() != t && !w.nativeOff.Load()
}

// refuseNative reports whether err says the ClickHouse table differs from
// the mapping; from then on the target's blocks go through clickhouse-go
// (a new target, after a schema change, tries chnative again).
func (w *Writer) refuseNative(t *schema.Target, err error) bool {
	var mismatch *headerMismatch
	if !errors.As(err, &mismatch) {
		return false
	}
	if w.nativeRefused.Swap(t) != t {
		w.c.m.NativeFallbacks.WithLabelValues(metrics.FallbackHeaderMismatch).Inc()
		w.tm.NativeFallback(metrics.FallbackHeaderMismatch)
		w.log.Warn("the ClickHouse table's columns differ on the wire from binlog2ch's mapping; inserting through clickhouse-go, which converts",
			"reason", metrics.FallbackHeaderMismatch, "detail", mismatch.detail)
	}
	return true
}

// protocolSurprise reports whether err is a protocol surprise from the
// native inserter (chnative.ProtocolError: a packet, compression method
// or header it cannot read). The first one switches the table to
// clickhouse-go for good, with one WARN and binlog2ch_native_fallbacks_total;
// the daemon goes on, and the caller sends the block that met it again,
// whole, through clickhouse-go.
//
// A surprise before the data went out leaves nothing on the server (the
// connection is closed mid-query, which cancels the INSERT). One after it
// (DataSent) is ambiguous: the server may have stored the block before the
// answer chnative could not follow. Sending it again is then what every
// retried insert does (Retry sends a failed block whole again, the native
// path included): each row carries the same _version both times, so
// ReplacingMergeTree keeps one (FINAL reads, merges) and the state is
// exact; a changelog table (no key) keeps both, as it keeps a replay's
// (docs/guarantees.md).
func (w *Writer) protocolSurprise(err error) bool {
	var pe *chnative.ProtocolError
	if !errors.As(err, &pe) {
		return false
	}
	if w.nativeOff.CompareAndSwap(false, true) {
		w.c.m.NativeFallbacks.WithLabelValues(pe.Reason).Inc()
		w.tm.NativeFallback(pe.Reason)
		w.log.Warn("ClickHouse answered the native inserter with something it cannot read; this table is inserting through clickhouse-go from now on",
			"reason", pe.Reason, "error", pe.Err, "block_sent", pe.DataSent)
	}
	return true
}

// insertDriver sends a block through clickhouse-go, into the table (in a
// cluster, its Distributed table, which routes each row to its shard).
func (w *Writer) insertDriver(ctx context.Context, b *block.Block) error {
	batch, err := w.c.conn.PrepareBatch(w.c.driverContext(ctx), b.Target().InsertSQL())
	if err != nil {
		return err
	}
	if err := b.AppendTo(batch); err != nil {
		_ = batch.Abort()
		return permanent(err)
	}
	return batch.Send()
}

// noteFixups adds a sent batch's fix-ups to the writer's totals and logs
// the totals at most once a minute (the first at once), not once a batch.
func (w *Writer) noteFixups(f [block.NumFixups]uint64) {
	changed := false
	for k, n := range f {
		if n > 0 {
			w.fixups[k].Add(n)
			w.tm.Fixups[k].Add(float64(n))
			changed = true
		}
	}
	if !changed {
		return
	}
	now := time.Now().UnixNano()
	last := w.fixupsLogged.Load()
	if now-last < int64(time.Minute) || !w.fixupsLogged.CompareAndSwap(last, now) {
		return
	}
	attrs := []any{}
	for k := range w.fixups {
		attrs = append(attrs, block.Fixup(k).String(), w.fixups[k].Load())
	}
	w.log.Warn("values changed by schema.invalid_dates so far", attrs...)
}
