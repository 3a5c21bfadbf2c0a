// Package replicator follows a MySQL binlog and keeps ClickHouse tables
// equal to the MySQL ones: river.go-style, a reader (sync.go) decodes the
// binlog and routes each table's rows, in binlog order, to that table's
// writer (writer.go), which batches them into ClickHouse; the reader saves
// the position (master.go) once everything before it is written.
package replicator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Replicator is the `binlog2ch run` daemon.
type Replicator struct {
	cfg  *config.Config
	log  *slog.Logger
	my   *sql.DB
	ch   driver.Conn
	caps schema.Capabilities
	ins  *inserters // native-protocol INSERTs (insert.go)
	// layout is the cluster's shards, for rows routed to them (shards.go).
	layout clusterLayout
	m      *metrics

	onReady      func()
	checkin      atomic.Int64 // when the reader last checked in (Unix ns), for Alive
	mysqlUp      atomic.Bool  // the binlog stream is connected
	clickhouseUp atomic.Bool  // the last insert, DDL or ping succeeded
	readPos      atomic.Pointer[source.Position]
	savedPos     atomic.Pointer[source.Position]
	httpAddr     atomic.Value // string

	flavor string // mysql.MySQLFlavor or mysql.MariaDBFlavor
	server string // identity of the source server, stored with the checkpoint
	host   string
	port   uint16

	rawRows         bool          // decode row images from binlog bytes (not with MariaDB's log_bin_compress)
	queueLen        int           // messages a writer may have queued
	eventCache      int           // events go-mysql may decode ahead
	maxBackoff      time.Duration // cap of the retry backoff
	shutdownTimeout time.Duration // how long a shutdown may spend flushing

	lease *state.Lease // the ZooKeeper lease while held (state.lease zookeeper)
	store state.Store  // where the checkpoint lives (state.store)

	hooks testHooks
}

// testHooks are pause points for tests, which interrupt work at a chosen
// step instead of racing the clock. All nil outside tests; set before Run
// or FullSync.
type testHooks struct {
	// beforeChunk runs before a snapshot reader reads a chunk of table; it
	// may block (a test holding the copy mid-way).
	beforeChunk func(ctx context.Context, table source.TableName)
	// rowsEvent runs in the reader for each rows event of a replicated
	// table, before its rows go to the writer; it may block.
	rowsEvent func(table source.TableName)
	// checkpointed runs after each checkpoint pass, whether or not it
	// saved a new position.
	checkpointed func()
}

// New connects to both servers and checks the source writes a binlog
// binlog2ch can follow.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Replicator, error) {
	host, portText, err := net.SplitHostPort(cfg.MySQL.Addr)
	if err != nil {
		return nil, fmt.Errorf("mysql.addr: %w", err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("mysql.addr: bad port %q", portText)
	}
	r := &Replicator{cfg: cfg, log: log, host: host, port: uint16(port), ins: newInserters(cfg), m: newMetrics(),
		queueLen: 256, eventCache: 1024, maxBackoff: 30 * time.Second, shutdownTimeout: 30 * time.Second}
	if r.my, err = OpenMySQL(ctx, cfg, log); err != nil {
		return nil, err
	}
	if err := r.checkSource(ctx); err != nil {
		r.my.Close()
		return nil, err
	}
	if r.ch, err = OpenClickHouse(ctx, cfg, log); err != nil {
		r.my.Close()
		return nil, err
	}
	if r.caps, err = schema.DetectCapabilities(ctx, r.ch); err != nil {
		r.Close()
		return nil, err
	}
	r.m.ready = r.ready
	r.clickhouseUp.Store(true)
	log.Info("connected", "mysql", cfg.MySQL.Addr, "flavor", r.flavor, "clickhouse", cfg.ClickHouse.Addr, "clickhouse_version", r.caps.Version)
	return r, nil
}

// Close closes the server connections.
func (r *Replicator) Close() {
	r.ins.close()
	if r.ch != nil {
		r.ch.Close()
	}
	if r.my != nil {
		r.my.Close()
	}
}

// checkSource verifies the binlog settings that correctness depends on.
func (r *Replicator) checkSource(ctx context.Context) error {
	var version string
	if err := r.my.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return fmt.Errorf("MySQL %s: %w", r.cfg.MySQL.Addr, err)
	}
	r.flavor = mysql.MySQLFlavor
	if strings.Contains(strings.ToLower(version), "mariadb") {
		r.flavor = mysql.MariaDBFlavor
	}
	want := []struct{ variable, value, why string }{
		{"log_bin", "1", "the binary log must be on (log_bin)"},
		{"binlog_format", "ROW", "binlog_format must be ROW: SET GLOBAL binlog_format = 'ROW'"},
		{"binlog_row_image", "FULL", "binlog_row_image must be FULL (updates and deletes need every column): SET GLOBAL binlog_row_image = 'FULL'"},
		{"binlog_row_metadata", "FULL", "binlog_row_metadata must be FULL (the binlog then names each row's columns, so rows are read with the schema they were written with): SET GLOBAL binlog_row_metadata = 'FULL' (MySQL 8.0.1+, MariaDB 10.5+)"},
	}
	for _, w := range want {
		var v string
		if err := r.my.QueryRowContext(ctx, "SELECT @@GLOBAL."+w.variable).Scan(&v); err != nil {
			return fmt.Errorf("MySQL %s: read %s: %w (%s)", r.cfg.MySQL.Addr, w.variable, err, w.why)
		}
		if !strings.EqualFold(v, w.value) && !(w.variable == "log_bin" && strings.EqualFold(v, "ON")) {
			return fmt.Errorf("MySQL %s: %s is %s; %s", r.cfg.MySQL.Addr, w.variable, v, w.why)
		}
	}
	// MySQL's compressed transactions (TRANSACTION_PAYLOAD events) are not
	// handled yet: refuse them rather than skip their rows.
	var txCompression string
	if err := r.my.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_transaction_compression").Scan(&txCompression); err == nil &&
		(txCompression == "1" || strings.EqualFold(txCompression, "ON")) {
		return fmt.Errorf("MySQL %s: binlog_transaction_compression is ON; binlog2ch does not read compressed transactions yet: SET GLOBAL binlog_transaction_compression = OFF", r.cfg.MySQL.Addr)
	}
	// MariaDB's compressed binlog events need go-mysql to decompress them.
	var compress string
	r.rawRows = true
	if err := r.my.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin_compress").Scan(&compress); err == nil && (compress == "1" || strings.EqualFold(compress, "ON")) {
		r.rawRows = false
	}
	// Reading the binlog position needs REPLICATION CLIENT: say so at
	// start, not at the first snapshot or position check.
	if _, err := source.CurrentPosition(ctx, r.my); err != nil {
		return fmt.Errorf("MySQL %s as %s: %w. binlog2ch needs REPLICATION CLIENT (called BINLOG MONITOR on MariaDB 10.5+) and REPLICATION SLAVE: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the user, and SELECT on the replicated databases",
			r.cfg.MySQL.Addr, r.cfg.MySQL.User, err)
	}
	var uuid string
	if err := r.my.QueryRowContext(ctx, "SELECT @@GLOBAL.server_uuid").Scan(&uuid); err == nil && uuid != "" {
		r.server = "uuid:" + uuid
	} else {
		var id uint32
		if err := r.my.QueryRowContext(ctx, "SELECT @@GLOBAL.server_id").Scan(&id); err != nil {
			return fmt.Errorf("MySQL %s: read server_id: %w", r.cfg.MySQL.Addr, err)
		}
		r.server = "server_id:" + strconv.FormatUint(uint64(id), 10)
	}
	return nil
}

// currentPosition is the server's current binlog position.
func (r *Replicator) currentPosition(ctx context.Context) (source.Position, error) {
	return source.CurrentPosition(ctx, r.my)
}

// startPosition is where to read from: the checkpoint or, at the first
// start, the current binlog position, recorded before the initial snapshot
// copies every selected table (see snapshot.go). snap is that snapshot
// when it is still to be done (also after a restart during it); Run does
// it before following the binlog.
func (r *Replicator) startPosition(ctx context.Context) (start source.Position, snap *copyState, err error) {
	cp, err := r.checkpoints().Load(ctx)
	if err != nil {
		return source.Position{}, nil, err
	}
	if cp != nil && cp.Server != r.server {
		return source.Position{}, nil, fmt.Errorf("checkpoint in %s belongs to MySQL server %s, but %s is %s: a binlog position means nothing on another server. Point mysql.addr at the right server, or move the checkpoint away to start over", r.checkpoints(), cp.Server, r.cfg.MySQL.Addr, r.server)
	}
	if snap, err = loadCopyState(r.cfg.StateDir, snapshotStateFile); err != nil {
		return source.Position{}, nil, err
	}
	if snap != nil && snap.Server != r.server {
		return source.Position{}, nil, fmt.Errorf("the initial snapshot in %s belongs to MySQL server %s, but %s is %s. Point mysql.addr at the right server, or move state_dir away to start over", r.cfg.StateDir, snap.Server, r.cfg.MySQL.Addr, r.server)
	}
	if cp != nil && (snap == nil || snap.Complete) {
		r.log.Info("resuming from checkpoint", "position", cp.Position.String(), "saved_at", cp.SavedAt)
		// Everything before the checkpoint was in ClickHouse when it was
		// saved: the lag is at least the time since.
		r.m.durable.Store(cp.SavedAt.UnixNano())
		return cp.Position, nil, nil
	}
	if snap == nil {
		p, err := r.currentPosition(ctx)
		if err != nil {
			return source.Position{}, nil, err
		}
		tables, err := source.ListTables(ctx, r.my, r.cfg)
		if err != nil {
			return source.Position{}, nil, err
		}
		snap = &copyState{Server: r.server, Position: p, Started: time.Now().UTC(), Tables: map[string]*tableProgress{}, List: tables}
		r.log.Info("no checkpoint: first start. Copying the existing rows of every selected table (initial snapshot), then following the binlog from the position recorded before the copy",
			"position", p.String(), "tables", len(tables))
		// The snapshot state first: a crash before the checkpoint is saved
		// then still resumes this snapshot at this position.
		if err := saveCopyState(r.cfg.StateDir, snapshotStateFile, snap); err != nil {
			return source.Position{}, nil, err
		}
	} else {
		r.log.Info("resuming the interrupted initial snapshot", "position", snap.Position.String(), "started", snap.Started)
	}
	// The lag counts from the recorded position: the copy is catching up.
	r.m.durable.Store(snap.Started.UnixNano())
	if cp == nil {
		cp = &state.Checkpoint{Position: snap.Position, Server: r.server, SavedAt: time.Now().UTC()}
		// A shared checkpoint is written once the snapshot is complete:
		// another host, which cannot see this host's snapshot state, must
		// not take it for a finished copy.
		if r.cfg.State.Store == config.StoreFile {
			if err := r.checkpoints().Save(ctx, *cp); err != nil {
				return source.Position{}, nil, err
			}
		}
	}
	return cp.Position, snap, nil
}

// initialSnapshot copies the tables listed when the snapshot began (tables
// created later start empty and come whole from the binlog). Interrupted
// by ctx, it returns nil with the progress saved.
func (r *Replicator) initialSnapshot(ctx context.Context, st *copyState) error {
	c := &copier{r: r, log: r.log.With("component", "snapshot"), st: st, stateFile: snapshotStateFile, runMode: true,
		progress: LogProgress(r.log.With("component", "snapshot"), 10*time.Second)}
	start := time.Now()
	statuses, err := c.run(ctx, st.List)
	if ctx.Err() != nil {
		r.log.Warn("stopped during the initial snapshot; the next start resumes it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("initial snapshot: %w", err)
	}
	var rows uint64
	for _, s := range statuses {
		rows += s.Rows
	}
	c.stateMu.Lock()
	st.Complete = true
	err = saveCopyState(r.cfg.StateDir, snapshotStateFile, st)
	c.stateMu.Unlock()
	if err != nil {
		return err
	}
	if err := r.checkpoints().Save(ctx, state.Checkpoint{Position: st.Position, Server: r.server, SavedAt: time.Now().UTC()}); err != nil {
		return err
	}
	r.log.Info("initial snapshot done; following the binlog from the recorded position", "tables", len(statuses), "rows", rows,
		"seconds", time.Since(start).Seconds(), "position", st.Position.String())
	return nil
}

// Run replicates until ctx ends (a clean shutdown: pending rows flushed,
// checkpoint saved, nil returned) or an error stops it. With a lease it
// first waits for the lease, and stops at once, without flushing, when the
// lease is lost.
func (r *Replicator) Run(ctx context.Context) error {
	if r.cfg.State.Lease == config.LeaseZooKeeper {
		l, err := state.Acquire(ctx, r.cfg, r.log)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while waiting
			}
			return err
		}
		r.lease = l
		defer l.Release()
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		// The cause reaches the reader, which then stops the writers
		// without a flush (see run's error path).
		go func() {
			select {
			case <-l.Lost():
				cancel(state.ErrLeaseLost)
			case <-ctx.Done():
			}
		}()
	}
	err := r.run(ctx)
	if errors.Is(context.Cause(ctx), state.ErrLeaseLost) {
		return state.ErrLeaseLost
	}
	return err
}

// checkpoints is the checkpoint store; with a lease, its writes are
// fenced by the lease's token and refused once the lease is lost.
func (r *Replicator) checkpoints() state.Store {
	if r.store == nil {
		var fence int64
		var valid func() bool
		if r.cfg.State.Lease == config.LeaseZooKeeper {
			if r.lease != nil {
				fence = r.lease.Fence()
			}
			valid = r.lease.Valid
		}
		r.store = state.NewStore(r.cfg, r.ch, fence, valid)
	}
	return r.store
}

func (r *Replicator) run(ctx context.Context) error {
	start, snap, err := r.startPosition(ctx)
	if err != nil {
		return err
	}
	r.savedPos.Store(&start)
	r.readPos.Store(&start)
	r.checkIn()
	stopHTTP, err := r.serveHTTP(ctx)
	if err != nil {
		return err
	}
	defer stopHTTP()
	if r.onReady != nil {
		r.onReady()
	}
	if snap != nil {
		if err := r.checkBinlogAccess(ctx, start); err != nil {
			return err
		}
		// Served and ready meanwhile: a copy can take hours, and the lag
		// metric shows it catching up.
		if err := r.initialSnapshot(ctx, snap); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil // stopped during the snapshot; the next start resumes it
		}
	}
	// Writers talk to ClickHouse with their own context: a shutdown signal
	// stops reading, not the flush of what was read.
	workCtx, cancelWork := context.WithCancelCause(context.Background())
	defer cancelWork(nil)
	readCtx, cancelRead := context.WithCancelCause(ctx)
	defer cancelRead(nil)

	s := &syncState{r: r, writers: map[source.TableName]*writer{}, tables: map[uint64]*tableState{}}
	s.startWriter = func(w *writer) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := w.run(workCtx); err != nil {
				err = fmt.Errorf("writer %s: %w", w.name, err)
				cancelRead(err)
				cancelWork(err)
			}
			w.done.Store(true)
		}()
	}
	readErr := s.read(readCtx, start)

	// Stop: close every queue; writers flush what they hold and exit.
	for _, w := range s.all {
		if !w.closed {
			close(w.in)
			w.closed = true
		}
	}
	if cause := context.Cause(readCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		readErr = cause // a writer failed
	}
	if readErr != nil {
		cancelWork(readErr)
		s.wg.Wait()
		return readErr
	}
	timer := time.AfterFunc(r.shutdownTimeout, func() {
		cancelWork(fmt.Errorf("shutdown: flushing took longer than %s", r.shutdownTimeout))
	})
	s.wg.Wait()
	timer.Stop()
	if cause := context.Cause(workCtx); cause != nil {
		return fmt.Errorf("shutdown: %w; the checkpoint stays at the last saved position and the rows after it will be replayed", cause)
	}
	if err := s.checkpoint(true); err != nil {
		return err
	}
	r.log.Info("stopped", "checkpoint", s.saved.String())
	return nil
}
