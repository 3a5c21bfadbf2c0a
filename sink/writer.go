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
	"github.com/binlog2ch/binlog2ch/budget"
	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Message is one unit of work for a writer, in binlog order: the rows of
// one rows event, or a DDL action.
type Message struct {
	// Seq numbers the messages a writer is sent, from 1 up; Writer.Flushed
	// reports the last one whose rows are durable.
	Seq    uint64
	Schema *schema.Table // the rows' schema, from the binlog's table map
	Rows   [][]any
	// Partial, when set, says which columns Rows hold (binlog_row_image
	// NOBLOB or MINIMAL; partial.go).
	Partial *source.Images
	Raw     binlog.RawRows // the row images undecoded, instead of Rows
	// Lease is the event buffer Raw lies in, freed once the rows are in
	// the block (a message dropped unapplied leaves it to the GC).
	Lease binlog.Lease
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
	// Version is the _version of the first row; Versions is how many
	// distinct versions the rows get: row i has Version +
	// min(i, Versions-1). Rows copied by a snapshot all share one version
	// (Versions 1), at or above every event ending at or before the copy's
	// position and below every later one.
	Version  uint64
	Versions int
	At       source.Position // for error messages
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
	// FlushDone, when set, asks the writer to send what it holds and wait
	// for ClickHouse to have it, then close the channel (a foreign-key
	// cascade reads the table next).
	FlushDone chan struct{}
	// Run, when set, has the writer send what it holds and wait for
	// ClickHouse to have it, then run Run between that and the next
	// message, with nothing written to the table meanwhile (an online
	// copy's shadow table swapped in). The table is read again at the
	// next rows.
	Run func(ctx context.Context) error
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
	place  []int // target.Placement: the columns an UPDATE moves the row by
	block  *block.Block

	// ticket asks the insert budget for the current batch's turn (nil:
	// none asked); due is when its timer fires.
	ticket *budget.Ticket
	due    time.Time

	lastSeq uint64        // seq of the last message taken from in
	flushed atomic.Uint64 // every message with seq <= flushed is in ClickHouse
	// lastVersion is the first version of the last binlog rows event
	// taken; storedVersion that of the last one in ClickHouse with every
	// earlier message; skipStored the version SkipStored skips up to
	// (replay.go).
	lastVersion   uint64
	storedVersion atomic.Uint64
	skipStored    uint64
	skippedStored int
	copy          bool        // NewCopyWriter's
	done          atomic.Bool // Run has returned nil
	firstRow      time.Time   // when the block got its first row
	lastSend      time.Time   // when the last batch was handed off

	returned chan *sendJob // blocks sent, back from their senders
	// blockBack: streamed batches' blocks, back before their stream is
	// stored (stream.go); stream is the writer's side of it.
	blockBack chan backBlock
	stream    streamState
	sendErr   chan error // a sender's fatal error
	sending   sync.WaitGroup
	scratch   []*shardScratch // senders' buffers, kept between blocks
	inflight  int             // blocks handed off and not yet returned
	order     []*sendJob      // blocks handed off, oldest first, until sent in order
	waited    time.Duration   // time spent waiting for ClickHouse to take a block
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
	// provenNative: a batch of the table went through chnative whole, its
	// answer read. Only then do batches stream: a protocol surprise in a
	// stream, whose rows the writer no longer holds, stops the writer,
	// where a batch of its own goes again through clickhouse-go.
	provenNative atomic.Bool
	// flushedHook, if set, is called when blocks sent advance flushed.
	flushedHook  func()
	tm           *metrics.Table
	inflightRows int // rows in blocks handed off and not yet returned
	// route sends the target's blocks straight to a cluster's shards; nil:
	// to the configured servers (in a cluster, the Distributed table).
	route *route
	// The current block's first and last rows events; copied: some rows
	// are a table copy's (sendJob's from, to, copied).
	blockFrom, blockTo source.Position
	blockCopied        bool
	// held is the current block's bytes counted in the daemon's buffer
	// budget (budget.Memory).
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
		// Room for every block the writer has.
		blockBack: make(chan backBlock, c.cfg.Batch.MaxInFlight+1),
		sendErr:   make(chan error, c.cfg.Batch.MaxInFlight),
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
	w.noteState(metrics.WriterRunning)
	err := w.run(parent)
	switch {
	case err == errParked:
		w.c.m.Writers.WithLabelValues(metrics.WriterParked).Inc()
		w.noteState(metrics.WriterParked)
		return nil
	case err == nil:
		w.done.Store(true)
	}
	w.noteState(metrics.WriterStopped)
	return err
}

// noteState tells the status page the state of the table's writer; a
// copy's writers, beside it, do not.
func (w *Writer) noteState(state string) {
	if !w.copy {
		w.tm.SetWriter(state)
	}
}

// errParked is run's return when the writer parked (ParkWhenIdle).
var errParked = errors.New("parked")

func (w *Writer) run(parent context.Context) (err error) {
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
		w.stopStream()
		if err != nil && err != errParked {
			w.releaseMemory()
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
				return err // the Lease too: an error may point into it
			}
			m.Lease.Free() // the block holds copies of what it read
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
				w.c.mem.Add(size - w.held)
				w.held = size
				switch {
				case w.block.Rows() >= w.c.cfg.Batch.MaxRows || size >= w.c.cfg.Batch.MaxBytes:
					w.c.budget.Take(budget.GrantFull)
					if err := w.handOff(ctx, true); err != nil {
						return err
					}
				case w.c.mem.Over():
					if err := w.relieveMemory(ctx); err != nil {
						return err
					}
				default:
					w.schedule(timer)
				}
			} else if w.inflight == 0 {
				// Nothing pending: everything taken so far is durable.
				w.storedVersion.Store(w.lastVersion)
				w.flushed.Store(w.lastSeq)
			}
			w.stream.queueEmpty(len(w.in) == 0)
		case <-timer.C:
			// The batch waited out its interval: its turn comes from the
			// insert budget.
			w.due = time.Time{}
			if w.ticket == nil && w.block != nil && w.block.Rows() > 0 {
				reason := budget.GrantInterval
				if time.Since(w.firstRow) < w.c.cfg.Batch.FlushInterval {
					reason = budget.GrantLive
				}
				w.ticket = w.c.budget.Request(w.firstRow, reason)
			}
		case <-w.ticketC():
			w.ticket = nil
			if err := w.handOff(ctx, false); err != nil {
				return err
			}
		case job := <-w.returned:
			w.recycle(job)
		case b := <-w.blockBack:
			w.takeBack(b)
		case <-w.streamTimerC():
			w.closeStream()
		case <-w.stream.idleC():
			w.closeStream()
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

// handle takes one message: a flush barrier, DDL, or rows (after a
// schema change, when their schema differs).
func (w *Writer) handle(ctx context.Context, m Message) error {
	if m.FlushDone != nil {
		if err := w.drain(ctx); err != nil {
			return err
		}
		close(m.FlushDone)
		return nil
	}
	if m.Run != nil {
		if err := w.drain(ctx); err != nil {
			return err
		}
		if err := m.Run(ctx); err != nil {
			return fmt.Errorf("%s at binlog %s: %w", w.name, m.At, err)
		}
		w.source, w.target, w.block, w.route = nil, nil, nil, nil
		return nil
	}
	if w.skipStored != 0 && w.stored(&m) {
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
	if w.block.Rows() == 0 {
		w.blockFrom, w.blockCopied = m.At, false
	}
	w.blockTo, w.blockCopied = m.At, w.blockCopied || m.Snapshot
	if err := w.appendRows(m); err != nil {
		if _, ok := err.(*source.PartialImageError); ok {
			return err // names the table and position
		}
		return fmt.Errorf("%s: %w", m.where(), err)
	}
	if !m.Snapshot {
		w.lastVersion = m.Version
	}
	return nil
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
	w.c.budget.Take(budget.GrantMemory)
	if err := w.handOff(ctx, false); err != nil {
		return err
	}
	for w.inflight > 0 && w.c.mem.Over() {
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

// largeEvent is the size of a rows event after which the writer collects
// garbage at once (values of tens of MiB: the heap would otherwise hold
// several of them before the collector's next cycle).
const largeEvent = 32 << 20

// releaseMemory gives back a failed writer's share of the daemon's buffer
// budget (budget.Memory): its block's bytes and those of the blocks its
// senders returned. A writer that stops for good (a table marked failed,
// replication.on_table_error: skip_table) must not leave the other
// writers sending small batches under a budget it holds.
func (w *Writer) releaseMemory() {
	w.c.mem.Add(-w.held)
	w.held = 0
	for {
		select {
		case job := <-w.returned:
			w.c.mem.Add(-job.bytes)
		default:
			return
		}
	}
}
