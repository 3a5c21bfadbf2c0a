package replicator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// rowOp is the kind of a rows event.
type rowOp int8

const (
	opInsert rowOp = iota + 1
	opUpdate       // rows alternate before and after images
	opDelete
)

// message is one unit of work for a writer, in binlog order: the rows of
// one rows event, or a DDL action.
type message struct {
	seq    uint64
	source *schema.Table // the rows' schema, from the binlog's table map
	rows   [][]any
	raw    source.RawRows // the row images undecoded, instead of rows
	op     rowOp
	file   uint32 // binlog file index and event end position: the version
	pos    uint32
	at     source.Position // for error messages
	// snapshot marks rows read from the table rather than the binlog: they
	// all get version(file, pos, maxVersionRow), at or above every event
	// ending at or before pos and below every later one.
	snapshot bool

	ddl      source.DDLKind
	newName  string            // source.DDLRenameTable: new MySQL table name
	renames  map[string]string // source.DDLRenameColumns: old -> new
	defaults map[string]string // source.DDLColumnDefaults: column -> literal
}

// where says where a message's rows come from, for errors.
func (m *message) where() string {
	if m.snapshot {
		return "the snapshot taken at binlog " + m.at.String()
	}
	return "binlog " + m.at.String()
}

// writer owns one ClickHouse table: it converts that table's rows into
// columnar batches and sends them, in binlog order.
type writer struct {
	r    *Replicator
	name source.TableName // MySQL table
	in   chan message
	log  *slog.Logger

	source *schema.Table
	target *schema.Target
	block  *schema.Block

	lastSeq    uint64        // seq of the last message taken from in
	flushed    atomic.Uint64 // every message with seq <= flushed is in ClickHouse
	dispatched uint64        // seq of the last message sent to in (reader-owned)
	closed     bool          // in is closed (reader-owned)
	done       atomic.Bool   // run has returned
	firstRow   time.Time     // when the block got its first row

	sendq    chan *sendJob // blocks to send, to the sender goroutine
	returned chan *sendJob // blocks sent, back from it
	sendErr  chan error    // the sender's fatal error
	inflight int           // blocks handed off and not yet returned
	order    []*sendJob    // blocks handed off, oldest first, until sent in order
	waited   time.Duration // time spent waiting for ClickHouse to take a block
	// fixups count values changed by schema.invalid_dates, by kind, in
	// batches sent; the senders update them.
	fixups       [schema.NumFixups]atomic.Uint64
	fixupsLogged atomic.Int64  // when the totals were last logged (Unix ns)
	busy         time.Duration // time spent converting rows
	free         []*schema.Block
	blocks       int // blocks built for the current target
	// defaults are the DEFAULTs of columns an ALTER added, used when
	// ClickHouse gets the column (at the next table map).
	defaults map[string]string
	// nativeRefused is a target whose ClickHouse table differs from the
	// mapping, so its blocks go through clickhouse-go.
	nativeRefused atomic.Pointer[schema.Target]
	// flushedHook, if set, is called when blocks sent advance flushed.
	flushedHook  func()
	tm           *tableMetrics
	inflightRows int // rows in blocks handed off and not yet returned
	// route sends the target's blocks straight to a cluster's shards; nil:
	// to the configured servers (in a cluster, the Distributed table).
	route *route
}

func newWriter(r *Replicator, name source.TableName) *writer {
	return &writer{
		r:    r,
		name: name,
		in:   make(chan message, r.queueLen),
		log:  r.log.With("table", name.String()),
		tm:   r.m.forTable(name),
	}
}

// run processes messages until in is closed (a clean shutdown: the pending
// rows are flushed) or an error stops it. Batches are sent by other
// goroutines while the next one fills.
func (w *writer) run(parent context.Context) error {
	// Canceled when run returns, before it waits for the senders: a sender
	// retrying a failed insert must not keep a writer that is stopping for
	// another error.
	ctx, cancel := context.WithCancel(parent)
	// Up to batch.max_inflight batches of a table are sent at once
	// (ClickHouse works on each insert mostly on one thread; order does not
	// matter, every row carries its version) while one more fills. Those
	// are all the blocks a writer has: when every one is in flight or
	// full, the writer waits.
	senders := w.r.cfg.Batch.MaxInFlight
	w.sendq = make(chan *sendJob, senders)
	w.returned = make(chan *sendJob, senders)
	w.sendErr = make(chan error, senders)
	var sendersDone sync.WaitGroup
	for i := 0; i < senders; i++ {
		sendersDone.Add(1)
		go func() {
			defer sendersDone.Done()
			w.sender(ctx)
		}()
	}
	defer func() {
		cancel()
		close(w.sendq)
		sendersDone.Wait()
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case m, ok := <-w.in:
			if !ok {
				err := w.drain(ctx)
				w.log.Debug("writer stopped", "waited_for_clickhouse", w.waited, "converting", w.busy)
				return err
			}
			start := time.Now()
			if err := w.handle(ctx, m); err != nil {
				return err
			}
			w.busy += time.Since(start)
			w.lastSeq = m.seq
			w.noteQueue()
			if w.block != nil && w.block.Rows() > 0 {
				if w.block.Rows() >= w.r.cfg.Batch.MaxRows || w.block.Size() >= w.r.cfg.Batch.MaxBytes {
					if err := w.handOff(ctx); err != nil {
						return err
					}
				} else if w.firstRow.IsZero() {
					w.firstRow = time.Now()
					timer.Reset(w.r.cfg.Batch.FlushInterval)
				}
			} else if w.inflight == 0 {
				// Nothing pending: everything taken so far is durable.
				w.flushed.Store(w.lastSeq)
			}
		case <-timer.C:
			if err := w.handOff(ctx); err != nil {
				return err
			}
		case job := <-w.returned:
			w.recycle(job)
		case err := <-w.sendErr:
			return err
		}
		if w.firstRow.IsZero() {
			timer.Stop()
		}
	}
}

// noteQueue updates binlog2ch_queue_rows: rows converted and not yet in
// ClickHouse.
func (w *writer) noteQueue() {
	n := w.inflightRows
	if w.block != nil {
		n += w.block.Rows()
	}
	w.tm.queueRows.Set(float64(n))
}

// sendJob is a block on its way to ClickHouse; seq is the last message
// whose rows it holds.
type sendJob struct {
	block *schema.Block
	route *route
	seq   uint64
	rows  int
	sent  bool
}

// sender sends the blocks handed off and returns them.
func (w *writer) sender(ctx context.Context) {
	var sc shardScratch // kept across this sender's blocks
	for job := range w.sendq {
		if err := w.send(ctx, job.block, job.route, &sc); err != nil {
			w.sendErr <- err
			return
		}
		w.returned <- job
	}
}

// recycle takes back a sent block. Blocks may come back out of order: the
// flushed mark advances over the longest prefix of handed-off blocks that
// are all sent.
func (w *writer) recycle(job *sendJob) {
	w.inflight--
	w.inflightRows -= job.rows
	defer w.noteQueue()
	job.sent = true
	for len(w.order) > 0 && w.order[0].sent {
		w.flushed.Store(w.order[0].seq)
		w.order = w.order[1:]
	}
	if w.flushedHook != nil {
		defer w.flushedHook()
	}
	if job.block.Target() == w.target {
		w.free = append(w.free, job.block)
	} else {
		w.blocks-- // built for an older schema
	}
	if w.inflight == 0 && (w.block == nil || w.block.Rows() == 0) {
		w.flushed.Store(w.lastSeq)
	}
}

// handOff queues the current block for sending and continues with another,
// waiting for one to come back when both are in flight.
func (w *writer) handOff(ctx context.Context) error {
	w.firstRow = time.Time{}
	if w.block == nil || w.block.Rows() == 0 {
		if w.inflight == 0 {
			w.flushed.Store(w.lastSeq)
		}
		return nil
	}
	if max := w.r.cfg.Batch.MaxInFlight + 1; len(w.free) == 0 && w.blocks >= max {
		start := time.Now()
		for len(w.free) == 0 && w.blocks >= max {
			if err := w.await(ctx); err != nil {
				return err
			}
		}
		w.waited += time.Since(start)
	}
	var next *schema.Block
	if n := len(w.free); n > 0 {
		next, w.free = w.free[n-1], w.free[:n-1]
	} else {
		next = schema.NewBlock(w.target)
		w.blocks++
	}
	job := &sendJob{block: w.block, route: w.route, seq: w.lastSeq, rows: w.block.Rows()}
	select {
	case w.sendq <- job:
	case err := <-w.sendErr:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
	w.order = append(w.order, job)
	w.inflight++
	w.inflightRows += job.rows
	w.block = next
	return nil
}

// await waits for one block to come back from the sender.
func (w *writer) await(ctx context.Context) error {
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
func (w *writer) drain(ctx context.Context) error {
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

func (w *writer) handle(ctx context.Context, m message) error {
	if m.ddl != 0 {
		if err := w.drain(ctx); err != nil {
			return err
		}
		return w.applyDDL(ctx, m)
	}
	if w.source == nil || (m.source != w.source && !source.SameColumns(m.source, w.source)) {
		if err := w.drain(ctx); err != nil {
			return err
		}
		if err := w.changeSchema(ctx, m.source); err != nil {
			return fmt.Errorf("%s at %s: %w", w.name, m.where(), err)
		}
	}
	w.source = m.source
	if err := w.appendRows(m); err != nil {
		return fmt.Errorf("%s: %w", m.where(), err)
	}
	return nil
}

// appendRows converts one rows event. An UPDATE writes the after image; one
// that changes the key also deletes the old key. A DELETE writes the before
// image with _is_deleted = 1.
func (w *writer) appendRows(m message) error {
	if m.raw != nil {
		return w.appendImages(m)
	}
	b := w.block
	switch m.op {
	case opInsert:
		for i, row := range m.rows {
			v := version(m.file, m.pos, i)
			if m.snapshot {
				v = version(m.file, m.pos, maxVersionRow)
			}
			if err := b.Append(row, v, schema.OpInsert); err != nil {
				return err
			}
		}
	case opDelete:
		for i, row := range m.rows {
			if err := b.Append(row, version(m.file, m.pos, i), schema.OpDelete); err != nil {
				return err
			}
		}
	case opUpdate:
		for i := 0; i+1 < len(m.rows); i += 2 {
			before, after := m.rows[i], m.rows[i+1]
			v := version(m.file, m.pos, i/2)
			if !w.sameKey(before, after) {
				if err := b.Append(before, v, schema.OpDelete); err != nil {
					return err
				}
			}
			if err := b.Append(after, v, schema.OpUpdate); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendImages decodes the row images of one rows event straight from the
// binlog bytes, with appendRows' semantics.
func (w *writer) appendImages(m message) error {
	b := w.block
	if !b.RawOK() {
		return fmt.Errorf("%s: rows left undecoded for a table binlog2ch cannot decode", w.name)
	}
	data := []byte(m.raw)
	for i := 0; len(data) > 0; i++ {
		v := version(m.file, m.pos, i)
		switch m.op {
		case opInsert, opDelete:
			op := schema.OpInsert
			if m.op == opDelete {
				op = schema.OpDelete
			}
			n, err := b.AppendImage(data, v, op)
			if err != nil {
				return err
			}
			data = data[n:]
		case opUpdate:
			nb, err := b.ImageSize(data)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			before, after := data[:nb], data[nb:]
			same, err := b.SameKey(before, after, w.keyColumns())
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			if !same {
				if _, err := b.AppendImage(before, v, schema.OpDelete); err != nil {
					return err
				}
			}
			na, err := b.AppendImage(after, v, schema.OpUpdate)
			if err != nil {
				return err
			}
			data = data[nb+na:]
		}
	}
	return nil
}

// sameKey reports whether two row images have the same sorting key.
func (w *writer) sameKey(a, b []any) bool {
	for _, i := range w.keyColumns() {
		if !equalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// keyColumns are the MySQL column indexes of the ClickHouse sorting key.
func (w *writer) keyColumns() []int {
	key := w.target.Source.PrimaryKey
	if len(key) == 0 {
		key = w.target.Source.UniqueKey
	}
	return key
}

func equalValue(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	}
	return a == b
}

// send writes one block to ClickHouse, retrying until it takes it, and
// empties the block. With a route, the block goes to the shards.
func (w *writer) send(ctx context.Context, b *schema.Block, rt *route, sc *shardScratch) error {
	start := time.Now()
	rows := b.Rows()
	t := b.Target()
	var err error
	if rt != nil && w.nativeRefused.Load() != t {
		err = w.sendShards(ctx, b, rt, sc)
	} else {
		err = w.r.retry(ctx, w.log, stageInsert, "insert into ClickHouse", func(ctx context.Context) error {
			if b.NativeOK() && w.nativeRefused.Load() != t {
				err := w.r.ins.insertNative(ctx, "", t.InsertSQL(), b, nil)
				if !w.refuseNative(t, err) {
					return err
				}
			}
			return w.insertDriver(ctx, b)
		})
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	w.noteFixups(b.Fixups)
	b.Fixups = [len(b.Fixups)]uint64{}
	for op := schema.OpInsert; op <= schema.OpDelete; op++ {
		w.tm.rows[op].Add(float64(b.OpRows[op]))
	}
	took := time.Since(start)
	w.tm.flushDuration.Observe(took.Seconds())
	w.tm.batchRows.Observe(float64(rows))
	b.Reset()
	w.log.Debug("flushed", "rows", rows, "duration", took)
	return nil
}

// refuseNative reports whether err says the ClickHouse table differs from
// the mapping; from then on the target's blocks go through clickhouse-go.
func (w *writer) refuseNative(t *schema.Target, err error) bool {
	var mismatch *headerMismatch
	if !errors.As(err, &mismatch) {
		return false
	}
	if w.nativeRefused.Swap(t) != t {
		w.log.Info("the ClickHouse table's columns differ from binlog2ch's mapping; inserting through clickhouse-go, which converts",
			"detail", mismatch.detail)
	}
	return true
}

// insertDriver sends a block through clickhouse-go, into the table (in a
// cluster, its Distributed table, which routes each row to its shard).
func (w *writer) insertDriver(ctx context.Context, b *schema.Block) error {
	batch, err := w.r.ch.PrepareBatch(ctx, b.Target().InsertSQL())
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
func (w *writer) noteFixups(f [schema.NumFixups]uint64) {
	changed := false
	for k, n := range f {
		if n > 0 {
			w.fixups[k].Add(n)
			w.tm.fixups[k].Add(float64(n))
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
		attrs = append(attrs, schema.Fixup(k).String(), w.fixups[k].Load())
	}
	w.log.Warn("values changed by schema.invalid_dates so far", attrs...)
}

// changeSchema moves the writer to a new source schema: the first one, or
// one changed by DDL. ClickHouse gets the columns the new schema needs; a
// column the MySQL table lost is dropped.
func (w *writer) changeSchema(ctx context.Context, src *schema.Table) error {
	// Best effort: the table may be gone or changed since. But a column
	// type without a mapping stops: the binlog carries such values (INET6,
	// UUID) as bytes, which would land in ClickHouse unreadable.
	live, err := schema.LoadTable(ctx, w.r.my, w.name.Database, w.name.Table)
	var unsupported *schema.UnsupportedTypeError
	if errors.As(err, &unsupported) {
		return err
	}
	src = source.Enrich(src, live)
	target, err := schema.Map(src, w.r.cfg.ClickHouseDatabase(w.name.Database), w.r.caps, w.r.cfg.SchemaOptions(),
		w.r.cfg.TableOptions(w.name.Database, w.name.Table))
	if err != nil {
		return err
	}
	if w.target != nil && strings.Join(w.target.OrderBy, ",") != strings.Join(target.OrderBy, ",") {
		return fmt.Errorf("the sorting key changed from (%s) to (%s); ClickHouse cannot change a table's sorting key in place: recreate %s (binlog2ch fullsync -recreate)",
			strings.Join(w.target.OrderBy, ", "), strings.Join(target.OrderBy, ", "), target.FullName())
	}
	var drop []string
	if w.target != nil {
		for _, c := range w.target.Columns {
			if c.Meta == schema.MetaNone && src.ColumnIndex(c.Name) < 0 {
				drop = append(drop, c.Name)
			}
		}
	}
	if err := w.r.ensureTable(ctx, w.log, target, drop, w.defaults); err != nil {
		return err
	}
	block := schema.NewBlock(target)
	route, err := w.r.routeFor(ctx, w.log, block)
	if err != nil {
		return err
	}
	w.defaults = nil
	w.target = target
	w.route = route
	w.block = block
	w.free, w.blocks = nil, 1
	return nil
}

func (w *writer) applyDDL(ctx context.Context, m message) (err error) {
	db := w.r.cfg.ClickHouseDatabase(w.name.Database)
	name := w.name.Table
	if w.target != nil {
		name = w.target.Name
	} else if o := w.r.cfg.TableOptions(w.name.Database, w.name.Table); o.Name != "" {
		name = o.Name
	}
	full := schema.QuoteIdent(db) + "." + schema.QuoteIdent(name)
	var stmts []string
	on := w.r.onCluster()
	// In a cluster the Distributed table goes with the local one; it names
	// the local table, so a rename recreates it under the new name.
	dist := w.r.cfg.SchemaOptions().DistributedName(name)
	switch m.ddl {
	case source.DDLTruncate:
		stmts = append(stmts, "TRUNCATE TABLE IF EXISTS "+full+on)
	case source.DDLDrop:
		if dist != "" {
			stmts = append(stmts, "DROP TABLE IF EXISTS "+schema.QuoteIdent(db)+"."+schema.QuoteIdent(dist)+on)
		}
		stmts = append(stmts, "DROP TABLE IF EXISTS "+full+on)
		defer w.r.m.forget(w.name)
	case source.DDLRenameTable:
		newName := m.newName
		if o := w.r.cfg.TableOptions(w.name.Database, m.newName); o.Name != "" {
			newName = o.Name
		}
		exists, err := w.r.tableExists(ctx, db, name)
		if err != nil {
			return err
		}
		var key string // the Distributed table's sharding key, kept
		if dist != "" {
			err := w.r.retry(ctx, w.log, stageSchema, "read ClickHouse schema", func(ctx context.Context) error {
				engine, err := w.r.engine(ctx, db, dist)
				key = shardingExpr(engine)
				return err
			})
			if err != nil {
				return err
			}
			stmts = append(stmts, "DROP TABLE IF EXISTS "+schema.QuoteIdent(db)+"."+schema.QuoteIdent(dist)+on)
		}
		if exists { // on a replay the rename may already be done
			stmts = append(stmts, "RENAME TABLE "+full+" TO "+schema.QuoteIdent(db)+"."+schema.QuoteIdent(newName)+on)
		}
		if dist != "" && w.target != nil {
			renamed := *w.target
			renamed.Name = newName
			defer func() {
				if err == nil {
					err = w.r.ensureDistributed(ctx, w.log, &renamed, key)
				}
			}()
		}
		w.r.m.forget(w.name)
		w.name.Table = m.newName
		w.log = w.r.log.With("table", w.name.String())
		w.tm = w.r.m.forTable(w.name)
		w.source, w.target, w.block = nil, nil, nil // re-read on the next rows
	case source.DDLColumnDefaults:
		w.defaults = m.defaults
		return nil
	case source.DDLRenameColumns:
		if w.target == nil {
			return nil // no rows seen yet: the next table map has the new names
		}
		if err := w.r.renameColumns(ctx, w.log, w.target, m.renames); err != nil {
			return fmt.Errorf("%s at binlog %s: %w", w.name, m.at, err)
		}
		// Follow the rename in the known schema, so the next table map
		// differs only by what else changed.
		src := *w.source
		src.Columns = append([]schema.Column(nil), w.source.Columns...)
		for i := range src.Columns {
			if to, ok := m.renames[src.Columns[i].Name]; ok {
				src.Columns[i].Name = to
			}
		}
		w.source, w.target, w.route = nil, nil, nil
		return w.changeSchema(ctx, &src)
	}
	for _, stmt := range stmts {
		w.log.Info("applying DDL", "statement", stmt, "binlog", m.at.String())
		if err := w.r.retry(ctx, w.log, stageDDL, "DDL", func(ctx context.Context) error { return w.r.ch.Exec(ctx, stmt) }); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// permanentError marks an error retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// transientCodes are ClickHouse error codes that retrying can fix.
var transientCodes = map[int32]bool{
	3: true, 159: true, 164: true, 202: true, 209: true, 210: true, 241: true, 242: true,
	252: true, 285: true, 319: true, 425: true, 999: true,
}

// transient reports whether retrying may fix err: connection problems and
// overload do; a ClickHouse exception about the statement itself does not.
func transient(err error) bool {
	var p permanentError
	if errors.As(err, &p) {
		return false
	}
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return transientCodes[ex.Code]
	}
	var nex *chnative.Exception
	if errors.As(err, &nex) {
		return transientCodes[nex.Code]
	}
	return true
}

// retry runs op until it succeeds, with capped exponential backoff, logging
// each failure once. It gives up when ctx ends or on an error retrying
// cannot fix (a ClickHouse exception about the statement itself).
func (r *Replicator) retry(ctx context.Context, log *slog.Logger, stage, what string, op func(context.Context) error) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			r.clickhouseUp.Store(true)
			if attempt > 1 {
				log.Info(what+" succeeded after retrying", "attempts", attempt)
			}
			return nil
		}
		r.m.errors.WithLabelValues(stage).Inc()
		if transient(err) {
			r.clickhouseUp.Store(false)
		}
		if !transient(err) || ctx.Err() != nil {
			return err
		}
		log.Warn(what+" failed; retrying", "error", err, "attempt", attempt, "retry_in", delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, r.maxBackoff)
	}
}
