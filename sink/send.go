package sink

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/budget"
	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// sendJob is a block on its way to ClickHouse; seq is the last message
// whose rows it holds.
type sendJob struct {
	block   *block.Block
	route   *route
	seq     uint64
	version uint64 // the writer's lastVersion at seq
	rows    int
	bytes   int // the block's size when handed off
	sent    bool
	scratch *shardScratch
	// The binlog positions of the first and last rows events; copied: some rows are a table copy's.
	from, to source.Position
	copied   bool
	// A streamed batch (stream.go): whether the stream stays open after
	// it, and its block's counters, told once the stream is stored.
	full     bool
	keepOpen bool
	opRows   [4]uint64
	fixups   [block.NumFixups]uint64
}

// largeRow is the average row size above which a sent block's buffers are
// let go rather than reused.
const largeRow = 4 << 20

// sendOne sends a block handed off, in a goroutine of its own, and
// returns it; the channels have room for every block in flight.
func (w *Writer) sendOne(ctx context.Context, job *sendJob) {
	defer w.sending.Done()
	if h := w.c.beforeSendOne; h != nil {
		h()
	}
	if err := w.send(ctx, job); err != nil {
		// The writer stops at the error and never takes the block back:
		// its bytes leave the buffer budget here.
		w.c.mem.Add(-job.bytes)
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
	defer w.noteQueue()
	job.sent = true
	for len(w.order) > 0 && w.order[0].sent {
		w.storedVersion.Store(w.order[0].version)
		w.flushed.Store(w.order[0].seq)
		w.order = w.order[1:]
	}
	if w.flushedHook != nil {
		defer w.flushedHook()
	}
	if b := job.block; b != nil {
		// A streamed batch's came back before (takeBack). Let go here:
		// takeBack may return a large block's memory to the system.
		job.block = nil
		w.takeBack(backBlock{block: b, bytes: job.bytes, rows: job.rows, scratch: job.scratch})
	}
	if w.inflight == 0 && (w.block == nil || w.block.Rows() == 0) {
		w.storedVersion.Store(w.lastVersion)
		w.flushed.Store(w.lastSeq)
	}
}

// takeBack takes back a sent block's buffers and its bytes in the budget.
func (w *Writer) takeBack(b backBlock) {
	w.c.mem.Add(-b.bytes)
	if b.scratch != nil {
		w.scratch = append(w.scratch, b.scratch)
	}
	switch {
	case b.block.Target() != w.target:
		w.blocks-- // built for an older schema
	case b.bytes > 2*w.c.cfg.Batch.MaxBytes, b.rows > 0 && b.bytes/b.rows > largeRow:
		// Grown by large values: its buffers are not kept for the next
		// rows, which would rarely need them, and go back to the system
		// now rather than when the runtime gets to it.
		w.blocks--
		b.block = nil
		debug.FreeOSMemory()
	case w.blocks > w.maxBlocks(false):
		w.blocks-- // one more than a stream needs

	default:
		w.free = append(w.free, b.block)
	}
}

// maxBlocks is how many blocks the writer may hold: one filling and one
// per batch in flight, but two while a stream is open (a streamed batch
// holds its block only until it is in the stream) or a full batch is to
// stream, or to prove the native path so that those after it stream: a
// third block, made for one batch at a stream's start and dropped, would
// only raise the heap's peak (a fifth of it in a catch-up).
func (w *Writer) maxBlocks(full bool) int {
	if w.stream.open || (full && w.mayStream(w.block)) {
		return 2
	}
	return w.c.cfg.Batch.MaxInFlight + 1
}

// handOff queues the current block for sending and continues with another,
// waiting for one to come back when both are in flight. full: the batch
// goes because it filled (it may start or extend a stream).
func (w *Writer) handOff(ctx context.Context, full bool) error {
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
			w.storedVersion.Store(w.lastVersion)
			w.flushed.Store(w.lastSeq)
		}
		return nil
	}
	if max := w.maxBlocks(full); len(w.free) == 0 && w.blocks >= max {
		start := time.Now()
		if h := w.c.blockWait; h != nil {
			h(w.blocks)
		}
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
		if h := w.c.newBlock; h != nil {
			h(w.blocks)
		}
	}
	w.lastSend = time.Now()
	if w.block.Size() <= 2*w.c.cfg.Batch.MaxBytes {
		// The next batch is likely as large (one grown by large values is
		// not kept, see recycle): room for it now, while the buffers are
		// empty, costs no copy.
		next.Reserve(w.block)
	}
	job := &sendJob{block: w.block, route: w.route, seq: w.lastSeq, version: w.lastVersion, rows: w.block.Rows(), bytes: w.block.Size(),
		from: w.blockFrom, to: w.blockTo, copied: w.blockCopied}
	// The block's bytes stay counted until it comes back.
	w.c.mem.Add(job.bytes - w.held)
	w.held = 0
	if n := len(w.scratch); n > 0 {
		job.scratch, w.scratch = w.scratch[n-1], w.scratch[:n-1]
	} else {
		job.scratch = &shardScratch{}
	}
	if (full || w.stream.open) && w.streams(job) {
		w.handStream(ctx, job, full)
	} else {
		w.closeStream()
		w.sending.Add(1)
		go w.sendOne(ctx, job)
	}
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
	case b := <-w.blockBack:
		w.takeBack(b)
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
		w.c.budget.Take(budget.GrantDrain)
	}
	if err := w.handOff(ctx, false); err != nil {
		return err
	}
	w.closeStream()
	for w.inflight > 0 {
		if err := w.await(ctx); err != nil {
			return err
		}
	}
	w.storedVersion.Store(w.lastVersion)
	w.flushed.Store(w.lastSeq)
	return nil
}

// send writes one block to ClickHouse, retrying until it takes it, and
// empties the block. With a route, the block goes to the shards.
func (w *Writer) send(ctx context.Context, job *sendJob) error {
	b, rt := job.block, job.route
	start := time.Now()
	rows := b.Rows()
	t := b.Target()
	token := batchToken(job)
	var err error
	if rt != nil && w.native(t) {
		err = w.sendShards(ctx, job)
	} else {
		err = w.c.Retry(ctx, w.log, metrics.StageInsert, "insert into ClickHouse", w.counted(func(ctx context.Context) error {
			if b.NativeOK() && w.native(t) {
				err := w.c.ins.Insert(ctx, "", t.InsertSQL(), b, nil, token)
				var mismatch *chconn.HeaderMismatch
				switch {
				case err == nil:
					w.provenNative.Store(true)
					return nil
				case w.protocolSurprise(err):
					// The whole block goes again, through clickhouse-go
					// below, unless it went out whole and a changelog
					// table holds it already (ambiguous.go).
					present, err := w.ambiguous(ctx, job, err, false)
					if err != nil || present {
						return err
					}
				case errors.As(err, &mismatch):
					// The server's columns differ from the block's: the
					// table changed by hand, or only the wire names a type
					// otherwise.
					if changed := w.c.tables.ChangedOnline(ctx, t, w.name.String()); changed != nil {
						return permanent(changed)
					}
					w.refuseNative(t, err)
				default:
					return w.explain(ctx, t, err)
				}
			}
			return w.explain(ctx, t, w.insertDriver(ctx, b, token))
		}))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	w.noteStored(b.OpRows, b.Fixups, rows)
	b.Fixups = [len(b.Fixups)]uint64{}
	took := time.Since(start)
	w.tm.FlushDuration.Observe(took.Seconds())
	b.Reset()
	w.log.Debug("flushed", "rows", rows, "duration", took)
	return nil
}

// noteStored counts a batch ClickHouse stored: its rows by operation, its
// fix-ups, its size.
func (w *Writer) noteStored(opRows [4]uint64, fixups [block.NumFixups]uint64, rows int) {
	w.noteFixups(fixups)
	for op := schema.OpInsert; op <= schema.OpDelete; op++ {
		w.tm.AddRows(op, opRows[op])
	}
	w.tm.Flushed(time.Now())
	w.tm.BatchRows.Observe(float64(rows))
}

// counted is an insert attempt whose failures the table's status counts.
func (w *Writer) counted(insert func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		err := insert(ctx)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errFallback) {
			w.tm.InsertFailed(err)
		}
		return err
	}
}

// explain turns an insert that failed for good into a
// chtables.TargetChangedError when the table changed under the writer
// (dropped, a column dropped or retyped by hand).
func (w *Writer) explain(ctx context.Context, t *schema.Target, err error) error {
	if err == nil || transient(err) {
		return err
	}
	if changed := w.c.tables.ChangedOnline(ctx, t, w.name.String()); changed != nil {
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
	var mismatch *chconn.HeaderMismatch
	if !errors.As(err, &mismatch) {
		return false
	}
	if w.nativeRefused.Swap(t) != t {
		w.c.m.NativeFallbacks.WithLabelValues(metrics.FallbackHeaderMismatch).Inc()
		w.tm.NativeFallback(metrics.FallbackHeaderMismatch)
		w.log.Warn("the ClickHouse table's columns differ on the wire from binlog2ch's mapping; inserting through clickhouse-go, which converts",
			"reason", metrics.FallbackHeaderMismatch, "detail", mismatch.Detail)
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
// answer chnative could not follow. A ReplacingMergeTree table takes it
// again harmlessly (each row carries the same _version both times, so
// FINAL and merges keep one); a changelog table, which would keep both,
// asks ClickHouse first (ambiguous.go).
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
func (w *Writer) insertDriver(ctx context.Context, b *block.Block, token string) error {
	batch, err := w.c.conn.PrepareBatch(w.c.driverContext(ctx, token), b.Target().InsertSQL())
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
