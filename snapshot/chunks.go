package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
)

// plan hands the table's remaining ranges to the readers, walking the key
// a chunk ahead; a table without a usable key is one scan.
func (c *copier) plan(t *tableCopy, jobs chan<- chunkJob) {
	c.stateMu.Lock()
	complete := t.prog.Complete
	done := slices.Clone(t.prog.Done)
	c.stateMu.Unlock()
	if complete {
		return
	}
	send := func(j chunkJob) bool {
		t.jobs.Add(1)
		select {
		case jobs <- j:
			return true
		case <-t.ctx.Done():
			t.jobs.Done()
			return false
		}
	}
	if t.reader.key == nil {
		c.stateMu.Lock()
		t.prog.ScanStarted = true
		c.stateMu.Unlock()
		if err := c.save(); err != nil {
			t.cancel(err)
			return
		}
		send(chunkJob{t: t, scan: true})
		return
	}
	n := c.Config.FullSync.ChunkRows
	// Segments in key order: the ranges done before (kept as they are)
	// between the gaps still to read.
	var segs []keyRange
	var isGap []bool
	if len(done) == 0 {
		segs, isGap = []keyRange{{}}, []bool{true}
	} else {
		g := gaps(done)
		gi := 0
		if done[0].Lo != nil {
			segs, isGap = append(segs, g[0]), append(isGap, true)
			gi++
		}
		for i, d := range done {
			segs, isGap = append(segs, d), append(isGap, false)
			if i < len(done)-1 || d.Hi != nil {
				segs, isGap = append(segs, g[gi]), append(isGap, true)
				gi++
			}
		}
	}
	t.mu.Lock()
	for i, s := range segs {
		if !isGap[i] {
			t.done = append(t.done, orderedRange{seg: i, r: s})
		}
	}
	t.mu.Unlock()
	for si, s := range segs {
		if !isGap[si] {
			continue
		}
		cur := s.Lo
		for ci := 0; ; ci++ {
			var last [][]byte
			var count int
			err := c.retryRead(t, "walk the key", func() error {
				var err error
				last, count, err = t.reader.nextBoundary(t.ctx, c.pool, keyRange{Lo: cur, Hi: s.Hi}, n)
				return err
			})
			if err != nil {
				t.cancel(fmt.Errorf("walk the key after %s: %w", showKey(cur), err))
				return
			}
			if count < n || equalKey(last, s.Hi) {
				send(chunkJob{t: t, orderedRange: orderedRange{seg: si, chunk: ci, r: keyRange{Lo: cur, Hi: s.Hi}}})
				break
			}
			if !send(chunkJob{t: t, orderedRange: orderedRange{seg: si, chunk: ci, r: keyRange{Lo: cur, Hi: last}}}) {
				return
			}
			cur = last
		}
	}
}

func showKey(k [][]byte) string {
	if k == nil {
		return "the start"
	}
	parts := make([]string, len(k))
	for i, v := range k {
		parts[i] = fmt.Sprintf("%q", v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// rangeText names a job's rows in errors: its key range, or the scan.
func rangeText(j chunkJob) string {
	if j.scan || j.t.reader.key == nil {
		return "the table's scan"
	}
	hi := "the end"
	if j.r.Hi != nil {
		hi = showKey(j.r.Hi)
	}
	return "key range after " + showKey(j.r.Lo) + " up to " + hi
}

// retryRead runs a MySQL read, retrying what retrying can fix.
func (c *copier) retryRead(t *tableCopy, what string, op func() error) error {
	return c.retryMySQL(t.ctx, t.log, what, op)
}

// readJob reads one range (or a whole table) into the table's writer.
func (c *copier) readJob(j chunkJob) {
	t := j.t
	defer t.jobs.Done()
	if h := c.BeforeChunk; h != nil {
		h(t.ctx, t.name)
	}
	if t.ctx.Err() != nil {
		return
	}
	var rows, lastSeq uint64
	where := rangeText(j)
	emit := func(batch rowBatch) error {
		t.sendMu.Lock()
		defer t.sendMu.Unlock()
		t.seq++
		m := sink.Message{Seq: t.seq, Schema: t.source, Result: batch.data, ResultCols: batch.cols, Op: source.OpInsert,
			Version: c.version, Versions: 1, At: c.State.Position, Snapshot: true, Range: where,
			Taken: func() { c.pool.recycle(batch.data) }}
		select {
		case t.w.In() <- &m:
			lastSeq = m.Seq
			rows += uint64(batch.rows)
			t.rowsRead.Add(uint64(batch.rows))
			return nil
		case <-t.ctx.Done():
			t.seq--
			return context.Cause(t.ctx)
		}
	}
	what := "read rows after " + showKey(j.r.Lo)
	op := func() error {
		rows = 0 // a retry sends the range again
		_, err := t.reader.read(t.ctx, c.pool, j.r, emit)
		return err
	}
	var err error
	if j.scan && t.target.Mode == schema.ModeChangelog {
		// A changelog keeps duplicates: a failed scan is not retried here
		// (a new run deletes its rows and scans again).
		err = op()
	} else {
		// Rows sent before a failure are sent again: same versions, so
		// the table's FINAL state is unchanged.
		err = c.retryRead(t, what, op)
	}
	if err != nil {
		if t.ctx.Err() == nil {
			t.cancel(fmt.Errorf("%s: %w", what, err))
		}
		return
	}
	t.chunks.Add(1)
	t.mu.Lock()
	t.pending = append(t.pending, chunkDone{orderedRange: j.orderedRange, lastSeq: lastSeq, rows: rows})
	t.mu.Unlock()
}

// confirmAll records every table's confirmed ranges in the state.
func (c *copier) confirmAll() {
	for _, t := range c.tables {
		c.confirm(t)
	}
}

// confirm moves the table's ranges whose rows the writer has confirmed
// into the state; the next save writes them.
func (c *copier) confirm(t *tableCopy) {
	t.mu.Lock()
	if t.w == nil {
		t.mu.Unlock()
		return
	}
	flushed := t.w.Flushed()
	keyed := t.reader.key != nil
	var rows, chunks uint64
	scanDone := false
	kept := t.pending[:0]
	for _, p := range t.pending {
		if p.lastSeq > flushed {
			kept = append(kept, p)
			continue
		}
		rows += p.rows
		chunks++
		if !keyed {
			scanDone = true
			continue
		}
		t.done = append(t.done, p.orderedRange)
	}
	t.pending = kept
	if chunks == 0 {
		t.mu.Unlock()
		return
	}
	slices.SortFunc(t.done, func(a, b orderedRange) int {
		if a.seg != b.seg {
			return a.seg - b.seg
		}
		return a.chunk - b.chunk
	})
	ranges := make([]keyRange, len(t.done))
	for i, d := range t.done {
		ranges[i] = d.r
	}
	t.mu.Unlock()
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	t.prog.Rows += rows
	t.prog.Chunks += chunks
	if keyed {
		t.prog.Done = mergeAdjacent(ranges)
	}
	if scanDone {
		t.prog.Complete = true
	}
	c.dirty = true
}

// markComplete records a table as copied in the state; the next save
// writes it.
func (c *copier) markComplete(t *tableCopy) error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if t.prog == nil {
		t.prog = &TableProgress{}
		c.State.Tables[t.name.String()] = t.prog
	}
	if t.reader != nil && t.reader.key != nil && !t.prog.Complete && !covered(t.prog.Done) {
		return fmt.Errorf("internal error: copy ended with key ranges missing: %d ranges done", len(t.prog.Done))
	}
	t.prog.Complete = true
	c.dirty = true
	return nil
}
