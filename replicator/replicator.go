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

	"github.com/binlog2ch/binlog2ch/schema"
)

// Replicator is the `binlog2ch run` daemon.
type Replicator struct {
	cfg  *Config
	log  *slog.Logger
	my   *sql.DB
	ch   driver.Conn
	caps schema.Capabilities
	ins  *inserters // native-protocol INSERTs (insert.go)
	m    *metrics

	onReady      func()
	checkin      atomic.Int64 // when the reader last checked in (Unix ns), for Alive
	mysqlUp      atomic.Bool  // the binlog stream is connected
	clickhouseUp atomic.Bool  // the last insert, DDL or ping succeeded
	readPos      atomic.Pointer[Position]
	savedPos     atomic.Pointer[Position]
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
}

// New connects to both servers and checks the source writes a binlog
// binlog2ch can follow.
func New(ctx context.Context, cfg *Config, log *slog.Logger) (*Replicator, error) {
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
	if r.my, err = OpenMySQL(ctx, cfg); err != nil {
		return nil, err
	}
	if err := r.checkSource(ctx); err != nil {
		r.my.Close()
		return nil, err
	}
	if r.ch, err = OpenClickHouse(ctx, cfg); err != nil {
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
func (r *Replicator) currentPosition(ctx context.Context) (Position, error) {
	return binlogPosition(ctx, r.my)
}

// binlogPosition reads a server's current binlog position.
func binlogPosition(ctx context.Context, db *sql.DB) (Position, error) {
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		if rows, err = db.QueryContext(ctx, "SHOW BINARY LOG STATUS"); err != nil {
			return Position{}, fmt.Errorf("read the binlog position: %w", err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Position{}, err
	}
	if !rows.Next() {
		return Position{}, errors.New("SHOW MASTER STATUS is empty: is the binary log on, and does the user have REPLICATION CLIENT?")
	}
	var p Position
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	dest[0], dest[1] = &p.File, &p.Pos
	if err := rows.Scan(dest...); err != nil {
		return Position{}, err
	}
	return p, rows.Err()
}

// startPosition is where to read from: the checkpoint, or for a first start
// the server's current position.
func (r *Replicator) startPosition(ctx context.Context) (Position, error) {
	cp, err := LoadCheckpoint(r.cfg.StateDir)
	if err != nil {
		return Position{}, err
	}
	if cp != nil {
		if cp.Server != r.server {
			return Position{}, fmt.Errorf("checkpoint in %s belongs to MySQL server %s, but %s is %s: a binlog position means nothing on another server. Point mysql.addr at the right server, or move the checkpoint away to start over", r.cfg.StateDir, cp.Server, r.cfg.MySQL.Addr, r.server)
		}
		r.log.Info("resuming from checkpoint", "position", cp.Position.String(), "saved_at", cp.SavedAt)
		// Everything before the checkpoint was in ClickHouse when it was
		// saved: the lag is at least the time since.
		r.m.durable.Store(cp.SavedAt.UnixNano())
		return cp.Position, nil
	}
	p, err := r.currentPosition(ctx)
	if err != nil {
		return Position{}, err
	}
	r.log.Warn("no checkpoint: starting at the current binlog position. Rows already in MySQL are NOT copied: the initial snapshot is not implemented yet (binlog2ch fullsync lands with issue #5)", "position", p.String())
	r.m.durable.Store(time.Now().UnixNano())
	// Saved now, so a crash before the first change cannot move the start
	// past changes made meanwhile.
	if err := SaveCheckpoint(r.cfg.StateDir, Checkpoint{Position: p, Server: r.server, SavedAt: time.Now().UTC()}); err != nil {
		return Position{}, err
	}
	return p, nil
}

// Run replicates until ctx ends (a clean shutdown: pending rows flushed,
// checkpoint saved, nil returned) or an error stops it.
func (r *Replicator) Run(ctx context.Context) error {
	start, err := r.startPosition(ctx)
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
	// Writers talk to ClickHouse with their own context: a shutdown signal
	// stops reading, not the flush of what was read.
	workCtx, cancelWork := context.WithCancelCause(context.Background())
	defer cancelWork(nil)
	readCtx, cancelRead := context.WithCancelCause(ctx)
	defer cancelRead(nil)

	s := &syncState{r: r, writers: map[TableName]*writer{}, tables: map[uint64]*tableState{}}
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
