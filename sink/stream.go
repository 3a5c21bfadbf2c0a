package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// While a table catches up, its batches fill one after another, and an
// INSERT each costs ClickHouse a part each: twenty parts for 2M rows, each
// sorted, written and then merged again. With batch.max_insert_rows above
// max_rows (off by default: the server copies each batch into the
// squashed block, which on some machines costs it more than the parts it
// saves), a stream sends the full batches that follow each other into one
// INSERT instead (chnative.Stream), which
// the server squashes into one part when the data ends: up to
// batch.max_insert_rows rows, batch.max_insert_bytes as sent and
// flush_interval from its first batch, so a row still waits at most about
// as long as in a batch of its own. A batch that is not full (the load
// eased, a drain) ends the stream it goes into, and so does a writer whose
// queue stayed empty for streamIdle: a stream waits for rows being read,
// not for rows to come.
//
// A batch's block goes back to its writer as soon as it is written into
// the stream, to fill again: what a failure needs is the stream's
// recording (its data packets, compressed, as they went out), which a new
// connection sends again before the stream goes on (chnative.Resume). The
// stream ends once it passes batch.max_insert_bytes; it counts in the
// buffer budget. Its end (the server writing its part in the INSERT's
// thread, ~0.4 s for 300k rows here; waited for in line, it stopped the
// writer) is waited for in a goroutine while the next stream fills another
// recording, the two within 1.5 × max_insert_bytes.
//
// Every batch of a stream is stored when the stream's data ends, none
// before: the writer's flushed mark (and so the checkpoint) passes them
// only then. A stream that fails is aborted, which the server drops; a
// daemon killed mid-stream closes the connection cleanly, which 18.16
// takes as the end of the data and stores what it had: the checkpoint
// has not passed those rows, so they come again after the restart, with
// the same versions. That is exact in a ReplacingMergeTree table (FINAL and
// merges keep one row per version) and not in a changelog table, which
// keeps every row: changelog tables never stream. Nor do batches that carry
// an insert_deduplication_token (it names one batch's binlog range, and a
// stream's is not known when its INSERT starts), nor a cluster's, nor
// blocks that go through clickhouse-go.

// streamState is the writer's side of its stream.
type streamState struct {
	q     chan *sendJob // to streamLoop, in order; nil: no loop running
	open  bool          // the last job sent on q left the stream open
	rows  int           // the open stream's rows and bytes so far
	bytes int
	start time.Time // when its first batch was handed off
	timer *time.Timer
	// idle fires streamIdle after the writer found its queue empty.
	idle   *time.Timer
	idling bool
}

// streamsLikely reports whether the writer's full batches may stream, as
// far as the configuration tells (streams adds what the batch tells).
func (w *Writer) streamsLikely() bool {
	c := w.c
	return c.streamOK && c.cfg.Batch.MaxInsertRows > c.cfg.Batch.MaxRows && c.cfg.ClickHouse.Cluster == ""
}

// mayStream reports whether a full batch of b may stream, as far as the
// block tells (streams adds the native path proven, and the job's own).
func (w *Writer) mayStream(b *block.Block) bool {
	t := b.Target()
	return w.streamsLikely() && b.Size() <= w.c.cfg.Batch.MaxInsertBytes && t.Mode != schema.ModeChangelog && b.NativeOK() && w.native(t)
}

// streams reports whether job goes into a stream: not a batch larger than
// a stream's recording (large values, which LZ4 seldom shrinks: its part
// is large already).
func (w *Writer) streams(job *sendJob) bool {
	return w.mayStream(job.block) && w.provenNative.Load() && job.route == nil &&
		!(w.c.driverToken && batchToken(job) != "")
}

// handStream sends job into the stream, starting the loop that sends
// streams when none runs. full: the batch went because it filled, and the
// stream stays open for the next one if it has room.
func (w *Writer) handStream(ctx context.Context, job *sendJob, full bool) {
	s := &w.stream
	if s.q == nil {
		// Every job in q holds one of the writer's blocks, and a close
		// follows an open job at most: q never fills.
		s.q = make(chan *sendJob, 2*(w.c.cfg.Batch.MaxInFlight+2))
		w.sending.Add(1)
		go w.streamLoop(ctx, s.q)
	}
	now := time.Now()
	if !s.open {
		s.rows, s.bytes, s.start = 0, 0, now
	}
	s.rows += job.rows
	s.bytes += job.bytes
	b := w.c.cfg.Batch
	job.full = full
	job.keepOpen = full && s.rows+b.MaxRows <= b.MaxInsertRows && s.bytes+b.MaxBytes <= 4*b.MaxBytes &&
		now.Sub(s.start) < b.FlushInterval
	switch {
	case job.keepOpen && !s.open:
		if s.timer == nil {
			s.timer = time.NewTimer(time.Hour)
		}
		s.timer.Reset(b.FlushInterval - now.Sub(s.start))
	case !job.keepOpen && s.timer != nil:
		s.timer.Stop()
	}
	s.open = job.keepOpen
	s.q <- job
}

// closeStream ends the open stream: its batches are stored, then come back.
func (w *Writer) closeStream() {
	s := &w.stream
	if !s.open {
		return
	}
	s.open, s.idling = false, false
	for _, t := range []*time.Timer{s.timer, s.idle} {
		if t != nil {
			t.Stop()
		}
	}
	s.q <- &sendJob{}
}

// streamIdle is how long an open stream waits for rows once the writer's
// queue is empty: the reader, on the same cores, refills it within that
// while a catch-up lasts.
const streamIdle = 20 * time.Millisecond

// queueEmpty arms the idle close of an open stream when the writer's
// queue is empty, and disarms it when it is not.
func (s *streamState) queueEmpty(empty bool) {
	switch {
	case !s.open:
	case empty && s.idle == nil:
		s.idle = time.NewTimer(streamIdle)
	case empty:
		s.idle.Reset(streamIdle)
	case s.idle != nil:
		s.idle.Stop()
	}
	s.idling = s.open && empty
}

// idleC fires when an open stream's writer had an empty queue for
// streamIdle.
func (s *streamState) idleC() <-chan time.Time {
	if !s.open || !s.idling {
		return nil
	}
	return s.idle.C
}

// streamTimerC fires when the open stream's time is up.
func (w *Writer) streamTimerC() <-chan time.Time {
	if !w.stream.open {
		return nil
	}
	return w.stream.timer.C
}

// stopStream forgets the loop of a run that ended (it returns with the
// run's context).
func (w *Writer) stopStream() {
	for _, t := range []*time.Timer{w.stream.timer, w.stream.idle} {
		if t != nil {
			t.Stop()
		}
	}
	w.stream = streamState{}
}

// backBlock is a streamed batch's block, back to its writer before the
// stream is stored; the job follows then, without it.
type backBlock struct {
	block   *block.Block
	bytes   int
	rows    int
	scratch *shardScratch
}

// openStream is the stream loop's INSERT in progress.
type openStream struct {
	s      *chnative.Stream // nil after a failure, until resumed
	failed *chnative.Stream // the failed one, holding the recording
	target *schema.Target
	rec    *chnative.Recording
	jobs   []*sendJob
	rows   int
	start  time.Time
	held   int // recorded bytes counted in the buffer budget
}

// streamEnd is a stream whose end is awaited (done nil: none): its
// outcome, its recording and the bytes recorded.
type streamEnd struct {
	done  chan error
	rec   *chnative.Recording
	bytes int
}

// errFallback: the stream's first batch goes the single-batch way, which
// knows what to do with a table that differs from the mapping.
var errFallback = errors.New("the table's columns differ from the mapping")

// streamLoop sends the jobs of q into streams until the run's context
// ends; a close (a job with no block) ends the open stream.
func (w *Writer) streamLoop(ctx context.Context, q <-chan *sendJob) {
	defer w.sending.Done()
	var cur *openStream
	var recs chnative.Recordings // their chunks reused from stream to stream
	var ending streamEnd
	settle := func() bool { // waits for ending; false if it failed
		if ending.done == nil {
			return true
		}
		err := <-ending.done
		ending = streamEnd{}
		return err == nil
	}
	release := func() bool { // the recordings' chunks back to the system
		ok := settle()
		recs.Release()
		return ok
	}
	defer release()
	end := func(st *openStream) bool { // in the background, once the one before has ended
		if !settle() {
			return false
		}
		done := make(chan error, 1)
		ending = streamEnd{done: done, rec: st.rec, bytes: st.held}
		go func() {
			err := w.commitStream(ctx, st)
			if err != nil {
				deliver(ctx, w.sendErr, err)
			}
			done <- err
		}()
		return true
	}
	defer func() {
		if cur != nil {
			cur.abort(w)
		}
		// The writer stopped: the batches still queued, and one that
		// failed, leave the buffer budget, as a failed sender's do.
		for {
			select {
			case job := <-q:
				w.c.mem.Add(-job.bytes)
			default:
				return
			}
		}
	}()
	for {
		var job *sendJob
		select {
		case job = <-q:
		case err := <-ending.done:
			ending = streamEnd{}
			if err != nil {
				return
			}
			continue
		case <-ctx.Done():
			return
		}
		if job.block == nil || (cur != nil && cur.target != job.block.Target()) {
			if cur != nil {
				st := cur
				cur = nil
				if !end(st) {
					return
				}
			}
			if job.block == nil {
				continue
			}
		}
		if cur == nil {
			cur = &openStream{target: job.block.Target(), start: time.Now(), rec: recs.Other(ending.rec)}
		} else if ending.done != nil && 2*(cur.held+ending.bytes) > 3*w.c.cfg.Batch.MaxInsertBytes && !settle() {
			w.c.mem.Add(-job.bytes)
			return
		}
		single, err := w.appendStream(ctx, cur, job)
		if err != nil {
			w.c.mem.Add(-job.bytes) // 0 once its block came back
			deliver(ctx, w.sendErr, err)
			return
		}
		if single {
			// Sent alone, counted by send: stored, and back like any
			// batch.
			if !deliver(ctx, w.returned, job) {
				return
			}
			cur = nil
			continue
		}
		if !job.keepOpen || cur.s.Recorded() >= w.c.cfg.Batch.MaxInsertBytes {
			st := cur
			cur = nil
			if !end(st) {
				return
			}
			if !job.full {
				if !release() { // the catch-up is over
					return
				}
			}
		}
	}
}

// deliver sends v on ch unless ctx ends first.
func deliver[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

// header checks the server's columns for the stream's target.
func (st *openStream) header(cols []chnative.Column) error {
	return chconn.CheckHeader(st.target, cols)
}

// appendStream writes job's block into the stream, beginning or resuming
// it, retrying until the server takes it; the block then goes back to the
// writer. single: the stream could not begin natively and job went the
// single-batch way (send), whole.
func (w *Writer) appendStream(ctx context.Context, st *openStream, job *sendJob) (single bool, err error) {
	b := job.block
	var encodeErr error
	err = w.c.Retry(ctx, w.log, metrics.StageInsert, "insert into ClickHouse", w.counted(func(ctx context.Context) error {
		if err := w.resume(ctx, st); err != nil {
			return err
		}
		plain, probed := st.s.Conn().UncompressedFrames()
		err := st.s.Block(ctx, func(e *chnative.Encoder) error {
			encodeErr = b.EncodeNativeRows(e, nil)
			return encodeErr
		})
		w.c.ins.CountFrames(st.s.Conn(), plain, probed)
		if err != nil {
			w.breakStream(st)
			if encodeErr != nil {
				return permanent(encodeErr) // the batch itself: retrying cannot help
			}
			return w.streamErr(ctx, st, err)
		}
		return nil
	}))
	if errors.Is(err, errFallback) {
		return true, w.send(ctx, job)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", st.target.FullName(), err)
	}
	w.c.mem.Add(st.s.Recorded() - st.held)
	st.held = st.s.Recorded()
	st.jobs = append(st.jobs, job)
	if h := w.c.afterStreamBlock; h != nil {
		h(st.s, len(st.jobs))
	}
	st.rows += job.rows
	// What the block's counters say is told when the stream is stored.
	job.opRows, job.fixups = b.OpRows, b.Fixups
	b.Fixups = [len(b.Fixups)]uint64{}
	b.Reset()
	back := backBlock{block: b, bytes: job.bytes, rows: job.rows, scratch: job.scratch}
	job.block, job.bytes, job.scratch = nil, 0, nil
	if !deliver(ctx, w.blockBack, back) {
		return false, ctx.Err()
	}
	return false, nil
}

// resume gives st a stream: a new INSERT for its first batch, or, after a
// failure, one that sends what the failed one recorded again.
func (w *Writer) resume(ctx context.Context, st *openStream) error {
	if st.s != nil {
		return nil
	}
	c, err := w.c.ins.Get(ctx, "")
	if err != nil {
		return err
	}
	switch {
	case len(st.jobs) == 0 && (!c.Sends(chsettings.MinRowsName) || !c.Sends(chsettings.MinBytesName)):
		// Its settings chosen from what another server knows: without
		// the minimums this one may store a part per block, or some of
		// them before the data ends.
		w.c.ins.Put("", c)
		return permanent(errFallback)
	case st.failed == nil:
		st.s, err = c.Begin(ctx, st.target.InsertSQL(), st.header, st.rec)
	default:
		st.s, err = c.Resume(ctx, st.failed, st.header)
		if err == nil {
			st.failed = nil
		}
	}
	if err == nil {
		return nil
	}
	c.Close()
	w.c.ins.Drop("")
	var mismatch *chconn.HeaderMismatch
	isMismatch := errors.As(err, &mismatch)
	if !isMismatch && !w.protocolSurprise(err) {
		return w.explain(ctx, st.target, err)
	}
	// Nothing sent yet: the batch goes the single-batch way, which knows
	// both (clickhouse-go).
	if len(st.jobs) == 0 {
		return permanent(errFallback)
	}
	if isMismatch {
		if changed := w.c.tables.ChangedOnline(ctx, st.target, w.name.String()); changed != nil {
			return permanent(changed)
		}
	}
	return permanent(w.lostStream(st, err))
}

// lostStream: st's batches can no longer go as recorded, nor as rows.
func (w *Writer) lostStream(st *openStream, err error) error {
	first, last := st.jobs[0], st.jobs[len(st.jobs)-1]
	return fmt.Errorf("an INSERT of %d batches (%d rows, binlog %s to %s) failed and cannot be sent again as it went: %w; "+
		"binlog2ch stopped before its checkpoint passed those rows, and sends them again when started again "+
		"(batch.max_insert_rows: %d sends an INSERT per batch)", len(st.jobs), st.rows, first.from, last.to, err, w.c.cfg.Batch.MaxRows)
}

// breakStream aborts st's stream after a failure; its recording stays for
// resume.
func (w *Writer) breakStream(st *openStream) {
	st.s.Abort()
	st.failed, st.s = st.s, nil
	w.c.ins.Drop("")
}

// streamErr classifies a failure of the stream's connection.
func (w *Writer) streamErr(ctx context.Context, st *openStream, err error) error {
	if w.protocolSurprise(err) {
		return permanent(w.lostStream(st, err))
	}
	return w.explain(ctx, st.target, err)
}

// commitStream ends st's data and waits until the server has stored it,
// resuming it after failures; then its batches come back to the writer.
func (w *Writer) commitStream(ctx context.Context, st *openStream) error {
	if h := w.c.beforeStreamEnd; h != nil {
		h(st.s)
	}
	err := w.c.Retry(ctx, w.log, metrics.StageInsert, "insert into ClickHouse", w.counted(func(ctx context.Context) error {
		if err := w.resume(ctx, st); err != nil {
			return err
		}
		if err := st.s.Commit(ctx); err != nil {
			w.breakStream(st)
			return w.streamErr(ctx, st, err)
		}
		return nil
	}))
	if err != nil {
		st.abort(w)
		return fmt.Errorf("%s: %w", st.target.FullName(), err)
	}
	w.c.ins.Put("", st.s.Conn())
	w.c.mem.Add(-st.held)
	st.held = 0
	took := time.Since(st.start)
	w.tm.FlushDuration.Observe(took.Seconds())
	if len(st.jobs) > 1 {
		w.c.m.InsertStreams.Inc()
		w.c.m.StreamedBatches.Add(float64(len(st.jobs)))
	}
	for _, job := range st.jobs {
		w.noteStored(job.opRows, job.fixups, job.rows)
		if !deliver(ctx, w.returned, job) {
			return ctx.Err()
		}
	}
	w.log.Debug("flushed a stream", "batches", len(st.jobs), "rows", st.rows, "duration", took)
	return nil
}

// abort drops a stream that will not be stored.
func (st *openStream) abort(w *Writer) {
	if st.s != nil {
		st.s.Abort()
		st.s = nil
	}
	w.c.mem.Add(-st.held)
	st.held = 0
}
