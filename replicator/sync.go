package replicator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// tableState is what the reader knows of one table-map id.
type tableState struct {
	name   source.TableName
	skip   bool // not selected by the config
	source *schema.Table
	event  *replication.TableMapEvent // the event source was built from
}

// commitPoint is a transaction boundary: resuming at pos replays no partial
// transaction. seq is the number of messages dispatched before it.
type commitPoint struct {
	seq uint64
	pos source.Position
	at  int64 // timestamp (Unix ns) of the transaction's last event; 0: unknown
}

// syncState is the reader: it decodes the binlog, routes rows to writers,
// and saves checkpoints. It runs in one goroutine.
type syncState struct {
	r           *Replicator
	writers     map[source.TableName]*writer
	all         []*writer // every writer started, for shutdown and checkpoints
	tables      map[uint64]*tableState
	startWriter func(*writer)
	wg          sync.WaitGroup
	parser      *parser.Parser

	pos       source.Position // after the last event read
	fileIdx   uint32
	seq       uint64
	commits   []commitPoint // not yet checkpointed, oldest first
	lastSaved time.Time
	saved     source.Position
	wk        waker
	lastTS    int64 // timestamp (Unix ns) of the newest event read
	// retired are writers whose MySQL table name a DROP or RENAME freed
	// while they may still be working on that name's ClickHouse table: a
	// new writer for the name waits until they are past the DDL, so two
	// writers never write one table at once.
	retired map[source.TableName]retiredWriter
	// downSince is when the binlog stream failed, until an event arrives
	// on a new one.
	downSince time.Time
}

// retiredWriter is a writer and the DDL message after which it no longer
// touches its old name's table.
type retiredWriter struct {
	w   *writer
	seq uint64
}

// past reports whether the writer is done with the DDL (or stopped).
func (rw retiredWriter) past() bool { return rw.w.done.Load() || rw.w.flushed.Load() >= rw.seq }

// waker interrupts the reader's wait for the next binlog event when a
// writer has flushed, so the checkpoint follows the data into ClickHouse at
// once instead of at the next event (up to a heartbeat later when the
// source is idle).
type waker struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	timer  *time.Timer
}

// waitContext returns the context for the next wait; wake cancels it.
func (k *waker) waitContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	k.mu.Lock()
	k.cancel = cancel
	k.mu.Unlock()
	return ctx
}

func (k *waker) wake() {
	k.mu.Lock()
	if k.cancel != nil {
		k.cancel()
	}
	k.mu.Unlock()
}

// wakeAfter wakes the reader after d.
func (k *waker) wakeAfter(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer == nil {
		k.timer = time.AfterFunc(d, k.wake)
	} else {
		k.timer.Reset(d)
	}
}

// read follows the binlog from start until ctx ends or an error that
// retrying cannot fix. Connection failures reconnect, with backoff, at the
// last transaction boundary read.
func (s *syncState) read(ctx context.Context, start source.Position) error {
	s.parser = parser.New()
	s.pos = start
	s.saved = start
	s.lastSaved = time.Now()
	s.commits = []commitPoint{{seq: 0, pos: start}}
	var err error
	if s.fileIdx, err = source.FileIndex(start.File); err != nil {
		return err
	}
	delay := 100 * time.Millisecond
	for {
		resume := s.commits[len(s.commits)-1].pos
		err := s.stream(ctx, resume)
		if ctx.Err() != nil {
			return nil
		}
		if err := s.r.fatalStreamError(err, resume); err != nil {
			return err
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if s.commits[len(s.commits)-1].pos != resume {
			delay = 100 * time.Millisecond // it made progress: a new outage starts the backoff over
		}
		resume = s.commits[len(s.commits)-1].pos
		if s.downSince.IsZero() {
			s.downSince = time.Now()
		}
		s.r.mysqlUp.Store(false)
		s.r.m.errors.WithLabelValues(stageRead).Inc()
		s.r.checkIn()
		s.r.log.Warn("binlog stream failed; reconnecting", "error", err, "position", resume.String(), "retry_in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(delay*2, s.r.maxBackoff)
	}
}

// fatalStreamError is the error that stops the reader for a binlog
// stream failure that reconnecting cannot fix, or nil.
func (r *Replicator) fatalStreamError(err error, from source.Position) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return nil
	}
	switch me.Code {
	case mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
		// A re-snapshot must start from empty tables: rows deleted in the
		// lost binlog would otherwise stay in ClickHouse.
		return fmt.Errorf("the source cannot send the binlog from %s: %w. If that binlog file was purged (SHOW BINARY LOGS lists those left), the changes in it are lost to replication; re-snapshot: stop binlog2ch, run `binlog2ch fullsync -recreate -checkpoint` (it copies every table into emptied tables and moves the checkpoint to the copy's position), and start it again. Or: drop its tables in ClickHouse, move %s and %s out of %s, and start it again: it copies every table from the current position, then follows the binlog",
			from, err, state.CheckpointFile, snapshotStateFile, r.cfg.StateDir)
	case mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR:
		return fmt.Errorf("MySQL user %s may not read the binlog: %w. Grant what binlog2ch needs: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the user, and SELECT on the replicated databases", r.cfg.MySQL.User, err)
	}
	return nil
}

// fatalError stops the reader; other errors reconnect.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }

// syncerConfig configures a binlog connection.
func (r *Replicator) syncerConfig() replication.BinlogSyncerConfig {
	return replication.BinlogSyncerConfig{
		ServerID:                r.cfg.MySQL.ServerID,
		Flavor:                  r.flavor,
		Host:                    r.host,
		Port:                    r.port,
		User:                    r.cfg.MySQL.User,
		Password:                r.cfg.MySQL.Password.Reveal(),
		TLSConfig:               r.cfg.MySQLTLS(),
		ParseTime:               true,
		TimestampStringLocation: time.UTC,
		HeartbeatPeriod:         time.Second,
		ReadTimeout:             30 * time.Second,
		DisableRetrySync:        true,
		EventCacheCount:         r.eventCache,
		RowsEventDecodeFunc:     source.NewRowsDecoder(r.rawRows).Decode,
		Logger:                  binlogLogger(r.log),
	}
}

// checkBinlogAccess opens a binlog stream at from and reads its first
// event, so a user without REPLICATION SLAVE, or a purged position, stops
// the daemon at start rather than after an initial snapshot that may take
// hours. Other failures are left to the stream's retries.
func (r *Replicator) checkBinlogAccess(ctx context.Context, from source.Position) error {
	syncer := replication.NewBinlogSyncer(r.syncerConfig())
	defer syncer.Close()
	stream, err := syncer.StartSync(mysql.Position{Name: from.File, Pos: from.Pos})
	if err == nil {
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = stream.GetEvent(readCtx)
		cancel()
	}
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return r.fatalStreamError(err, from)
}

// stream reads from one binlog connection.
func (s *syncState) stream(ctx context.Context, from source.Position) error {
	r := s.r
	syncer := replication.NewBinlogSyncer(r.syncerConfig())
	defer syncer.Close()
	stream, err := syncer.StartSync(mysql.Position{Name: from.File, Pos: from.Pos})
	if err != nil {
		return err
	}
	s.pos = from
	if s.fileIdx, err = source.FileIndex(from.File); err != nil {
		return fatalError{err}
	}
	clear(s.tables) // table ids are re-sent after every reconnect
	waitCtx := s.wk.waitContext(ctx)
	defer s.wk.wake() // releases the last wait context
	for {
		ev, err := stream.GetEvent(waitCtx)
		if err != nil {
			if waitCtx.Err() == nil || ctx.Err() != nil {
				return err
			}
			// A writer flushed: checkpoint now, or when the interval allows.
			waitCtx = s.wk.waitContext(ctx)
			if since := time.Since(s.lastSaved); since < r.cfg.Checkpoint.Interval {
				s.wk.wakeAfter(r.cfg.Checkpoint.Interval - since)
			} else if err := s.checkpoint(false); err != nil {
				return fatalError{err}
			}
			continue
		}
		if !s.downSince.IsZero() {
			r.log.Info("binlog stream reconnected", "position", from.String(), "down_for", time.Since(s.downSince).Round(time.Millisecond).String())
			s.downSince = time.Time{}
		}
		s.observe(ev.Header)
		if err := s.handle(ctx, ev); err != nil {
			return err
		}
		if time.Since(s.lastSaved) >= r.cfg.Checkpoint.Interval {
			if err := s.checkpoint(false); err != nil {
				return fatalError{err}
			}
		}
	}
}

// observe updates liveness and the lag metrics for an event read.
func (s *syncState) observe(h *replication.EventHeader) {
	r := s.r
	now := time.Now().UnixNano()
	r.checkin.Store(now) // as checkIn, with the clock read once per event
	r.mysqlUp.Store(true)
	if h.EventType == replication.HEARTBEAT_EVENT || h.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
		// The server has nothing newer: the reader is at its end, and
		// with nothing pending in the writers, so is ClickHouse.
		advanceTo(&r.m.read, now)
		if !s.pending() {
			advanceTo(&r.m.durable, now)
		}
		return
	}
	r.m.eventsRead.Inc()
	if h.Timestamp != 0 { // the events a server sends at connect have none
		ts := int64(h.Timestamp) * int64(time.Second)
		s.lastTS = ts
		advanceTo(&r.m.read, ts)
	}
}

// pending reports whether any writer holds rows not yet in ClickHouse.
func (s *syncState) pending() bool {
	for _, w := range s.all {
		if w.flushed.Load() < w.dispatched {
			return true
		}
	}
	return false
}

func (s *syncState) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.pos = source.Position{File: string(e.NextLogName), Pos: uint32(e.Position)}
		idx, err := source.FileIndex(s.pos.File)
		if err != nil {
			return fatalError{err}
		}
		s.fileIdx = idx
		s.commit()
		return nil
	case *replication.TableMapEvent:
		if err := s.tableMap(e); err != nil {
			return fatalError{fmt.Errorf("binlog %s: %w", s.pos, err)}
		}
	case *replication.RowsEvent:
		if err := s.rows(ctx, h, e); err != nil {
			return err
		}
	case *replication.XIDEvent:
		s.advance(h)
		s.commit()
		return nil
	case *replication.TransactionPayloadEvent:
		// Checked at start too; the setting may have changed since.
		return fatalError{fmt.Errorf("binlog %s: a compressed transaction (binlog_transaction_compression=ON); binlog2ch does not read those yet and will not skip its rows: SET GLOBAL binlog_transaction_compression = OFF, then take a new full sync from a later position", s.pos)}
	case *replication.QueryEvent:
		s.advance(h)
		if err := s.query(ctx, e); err != nil {
			return err
		}
		return nil
	}
	if h.EventType != replication.HEARTBEAT_EVENT && h.EventType != replication.HEARTBEAT_LOG_EVENT_V2 {
		s.advance(h)
	}
	return nil
}

// advance moves the position to the end of the event. Positions only grow
// within a file: the header events a server re-sends after a reconnect
// (format description, MariaDB's GTID list) carry older positions.
func (s *syncState) advance(h *replication.EventHeader) {
	if h.LogPos > s.pos.Pos {
		s.pos.Pos = h.LogPos
	}
}

// commit records a transaction boundary at the current position.
func (s *syncState) commit() {
	s.commits = append(s.commits, commitPoint{seq: s.seq, pos: s.pos, at: s.lastTS})
	pos := s.pos
	s.r.readPos.Store(&pos)
	s.r.m.readFile.Set(float64(s.fileIdx))
	s.r.m.readPos.Set(float64(s.pos.Pos))
}

func (s *syncState) tableMap(e *replication.TableMapEvent) error {
	if st, ok := s.tables[e.TableID]; ok && st.event != nil && sameTableMap(st.event, e) {
		return nil
	}
	name := source.TableName{Database: string(e.Schema), Table: string(e.Table)}
	st := &tableState{name: name, skip: source.SystemDatabase(name.Database) || !s.r.cfg.Replicates(name.Database, name.Table), event: e}
	if !st.skip {
		src, err := source.TableFromMap(e)
		if err != nil {
			return err
		}
		st.source = src
	}
	s.tables[e.TableID] = st
	return nil
}

// sameTableMap reports whether two table-map events describe the same
// schema, so the decoded definition can be reused.
func sameTableMap(a, b *replication.TableMapEvent) bool {
	if !bytes.Equal(a.Schema, b.Schema) || !bytes.Equal(a.Table, b.Table) || !bytes.Equal(a.ColumnType, b.ColumnType) ||
		!slices.Equal(a.ColumnMeta, b.ColumnMeta) || !bytes.Equal(a.NullBitmap, b.NullBitmap) ||
		!bytes.Equal(a.SignednessBitmap, b.SignednessBitmap) || len(a.ColumnName) != len(b.ColumnName) ||
		!slices.Equal(a.PrimaryKey, b.PrimaryKey) || len(a.EnumStrValue) != len(b.EnumStrValue) || len(a.SetStrValue) != len(b.SetStrValue) {
		return false
	}
	for i := range a.ColumnName {
		if !bytes.Equal(a.ColumnName[i], b.ColumnName[i]) {
			return false
		}
	}
	for _, pair := range [][2][][][]byte{{a.EnumStrValue, b.EnumStrValue}, {a.SetStrValue, b.SetStrValue}} {
		for i := range pair[0] {
			if len(pair[0][i]) != len(pair[1][i]) {
				return false
			}
			for j := range pair[0][i] {
				if !bytes.Equal(pair[0][i][j], pair[1][i][j]) {
					return false
				}
			}
		}
	}
	return true
}

func (s *syncState) rows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent) error {
	at := s.pos
	s.advance(h)
	st, ok := s.tables[e.TableID]
	if !ok {
		return fatalError{fmt.Errorf("binlog %s: rows event for table id %d without its table-map event", at, e.TableID)}
	}
	if st.skip {
		return nil
	}
	if hook := s.r.hooks.rowsEvent; hook != nil {
		hook(st.name)
	}
	var op rowOp
	switch h.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		op = opInsert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		op = opUpdate
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		op = opDelete
	default:
		return fatalError{fmt.Errorf("binlog %s: unknown rows event type %s", at, h.EventType)}
	}
	m := message{source: st.source, op: op, file: s.fileIdx, pos: h.LogPos, at: at}
	if len(e.Rows) == 1 && len(e.Rows[0]) == 1 {
		if raw, ok := e.Rows[0][0].(source.RawRows); ok {
			m.raw = raw
		}
	}
	if m.raw == nil {
		m.rows = e.Rows
	}
	return s.dispatch(ctx, st.name, m)
}

// dispatch queues a message for the table's writer, starting it if needed;
// it blocks while the writer's queue is full (backpressure).
func (s *syncState) dispatch(ctx context.Context, name source.TableName, m message) error {
	w := s.writers[name]
	if w == nil {
		if err := s.awaitRetired(ctx, name); err != nil {
			return err
		}
		w = newWriter(s.r, name)
		w.flushedHook = s.wk.wake
		s.writers[name] = w
		s.all = append(s.all, w)
		s.startWriter(w)
	}
	s.seq++
	m.seq = s.seq
	select {
	case w.in <- m:
		w.dispatched = m.seq
		return nil
	default:
	}
	// The queue is full (ClickHouse is slow or away): wait, checking in
	// so the daemon still counts as alive.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case w.in <- m:
			w.dispatched = m.seq
			return nil
		case <-tick.C:
			s.r.checkIn()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// query handles a query event: transaction markers and DDL.
func (s *syncState) query(ctx context.Context, e *replication.QueryEvent) error {
	q := string(e.Query)
	if q == "BEGIN" {
		return nil
	}
	defer s.commit() // DDL and COMMIT end a transaction
	if q == "COMMIT" {
		return nil
	}
	if kind := source.NoTableStatement(q); kind != "" {
		// Routines, triggers, views, events, accounts, grants: routine
		// when a schema is loaded, and nothing for replication to do. Not
		// their text: account statements carry passwords.
		s.r.m.ddl.WithLabelValues(ddlIgnored).Inc()
		s.r.log.Debug("statement changes no table; ignored", "kind", kind, "binlog", s.pos.String())
		return nil
	}
	effects, ok := source.ParseDDL(s.parser, string(e.Schema), q)
	if !ok {
		s.r.m.ddl.WithLabelValues(ddlNotUnderstood).Inc()
		s.r.log.Warn("DDL not understood; tables keep replicating with the columns the binlog shows", "statement", truncate(q, 500), "binlog", s.pos.String())
		return nil
	}
	applied := false
	defer func() {
		result := ddlSkipped // not about a replicated table, or nothing to do
		if applied {
			result = ddlApplied
		}
		s.r.m.ddl.WithLabelValues(result).Inc()
	}()
	for _, ef := range effects {
		oldIn := s.r.cfg.Replicates(ef.Table.Database, ef.Table.Table) && !source.SystemDatabase(ef.Table.Database)
		switch ef.Kind {
		case source.DDLDrop, source.DDLTruncate, source.DDLRenameColumns, source.DDLColumnDefaults:
			if !oldIn {
				continue
			}
			if err := s.dispatch(ctx, ef.Table, message{ddl: ef.Kind, renames: ef.Renames, defaults: ef.Defaults, at: s.pos}); err != nil {
				return err
			}
			applied = true
			if ef.Kind == source.DDLDrop {
				s.stopWriter(ef.Table)
			}
		case source.DDLRenameTable:
			newIn := s.r.cfg.Replicates(ef.NewTable.Database, ef.NewTable.Table) && !source.SystemDatabase(ef.NewTable.Database)
			switch {
			case oldIn && newIn && ef.Table.Database == ef.NewTable.Database:
				// A writer still dropping or renaming away the new name's
				// table must be done before this rename runs.
				if err := s.awaitRetired(ctx, ef.NewTable); err != nil {
					return err
				}
				if err := s.dispatch(ctx, ef.Table, message{ddl: source.DDLRenameTable, newName: ef.NewTable.Table, at: s.pos}); err != nil {
					return err
				}
				applied = true
				w := s.writers[ef.Table]
				s.writers[ef.NewTable] = w
				delete(s.writers, ef.Table)
				s.retire(ef.Table, w, s.seq)
			case oldIn:
				s.r.log.Warn("table renamed out of the replicated set (or to another database); its ClickHouse table is kept but no longer updated", "from", ef.Table.String(), "to", ef.NewTable.String())
				s.stopWriter(ef.Table)
			case newIn:
				s.r.log.Warn("table renamed into the replicated set: only changes from now on are replicated; copy its existing rows with binlog2ch fullsync", "from", ef.Table.String(), "to", ef.NewTable.String())
			}
		}
	}
	return nil
}

// stopWriter closes a writer's queue: it finishes what it holds and exits.
func (s *syncState) stopWriter(name source.TableName) {
	if w := s.writers[name]; w != nil {
		close(w.in)
		w.closed = true
		delete(s.writers, name)
		s.retire(name, w, w.dispatched)
	}
}

func (s *syncState) retire(name source.TableName, w *writer, seq uint64) {
	if s.retired == nil {
		s.retired = map[source.TableName]retiredWriter{}
	}
	s.retired[name] = retiredWriter{w: w, seq: seq}
}

// awaitRetired waits until the writer that last had the name is past the
// DDL that freed it.
func (s *syncState) awaitRetired(ctx context.Context, name source.TableName) error {
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
func (s *syncState) checkpoint(final bool) error {
	if hook := s.r.hooks.checkpointed; hook != nil {
		defer hook()
	}
	s.lastSaved = time.Now()
	safe := s.seq
	if !final {
		for _, w := range s.all {
			if f := w.flushed.Load(); f < w.dispatched && f < safe {
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
		advanceTo(&s.r.m.durable, at)
	}
	if i == len(s.commits)-1 && !s.pending() {
		// Everything read is in: as current as the newest event read.
		advanceTo(&s.r.m.durable, s.lastTS)
	}
	s.commits = s.commits[i:]
	// Forget writers that have finished.
	s.all = slices.DeleteFunc(s.all, func(w *writer) bool { return w.done.Load() && w.closed })
	if cp == s.saved {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := s.r.checkpoints().Save(ctx, state.Checkpoint{Position: cp, Server: s.r.server, SavedAt: time.Now().UTC()})
	cancel()
	if err != nil {
		s.r.m.errors.WithLabelValues(stageCheckpoint).Inc()
		if s.r.cfg.State.Store == config.StoreClickHouse && !errors.Is(err, state.ErrLeaseLost) && !final {
			// A ClickHouse hiccup only delays the shared checkpoint (a
			// successor would replay more); the next interval retries.
			s.r.log.Warn("checkpoint not saved; retrying at the next interval", "error", err)
			return nil
		}
		return err
	}
	s.saved = cp
	s.r.savedPos.Store(&cp)
	s.r.m.checkpointTS.Set(float64(time.Now().UnixNano()) / 1e9)
	if idx, err := source.FileIndex(cp.File); err == nil {
		s.r.m.cpFile.Set(float64(idx))
	}
	s.r.m.cpPos.Set(float64(cp.Pos))
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
