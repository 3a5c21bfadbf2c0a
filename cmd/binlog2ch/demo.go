package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/go-sql-driver/mysql"
	"github.com/shopspring/decimal"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/liblog"
	"github.com/binlog2ch/binlog2ch/loadgen"
	"github.com/binlog2ch/binlog2ch/replicator"
)

const demoDatabase = "bifrost_test"

func demoCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "demo", "[-rows N] [-keep]")
	rows := fs.Int("rows", 10000, "rows to write into binlog_field_test_1")
	keep := fs.Bool("keep", false, "keep the servers running until interrupted (Ctrl-C), to look around")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	if *rows < 0 {
		fmt.Fprintln(e.stderr, "binlog2ch demo: -rows must be >= 0")
		return exitUsage
	}
	if err := demo(ctx, e, *rows, *keep); err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch demo: %v\n", err)
		return exitError
	}
	return exitOK
}

func demo(ctx context.Context, e *env, rows int, keep bool) error {
	fmt.Fprintln(e.stdout, "Starting MariaDB and ClickHouse (private, throwaway instances; or the ones named by "+
		localserver.EnvMySQL+" / "+localserver.EnvClickHouse+")...")
	start := time.Now()
	srv, err := localserver.Start(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(e.stdout, "  MariaDB    %s (user %s), binlog ROW with full row metadata\n", srv.MySQL.Addr(), srv.MySQL.User)
	fmt.Fprintf(e.stdout, "  ClickHouse %s (user %s, native protocol)\n", srv.ClickHouse.Addr(), srv.ClickHouse.User)
	fmt.Fprintf(e.stdout, "  ready in %.1fs\n\n", time.Since(start).Seconds())

	// The replicator starts first, at the current binlog position, so it
	// sees the table created and filled.
	stateDir, err := os.MkdirTemp("", "binlog2ch-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	cfgPath := filepath.Join(stateDir, "binlog2ch.yaml")
	conf := fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4242}
clickhouse: {addr: [%q], user: %q, password: %q}
tables: {include: ["%s.*"]}
state_dir: state
metrics: {listen: "127.0.0.1:0"}
batch: {flush_interval: 200ms}
checkpoint: {interval: 200ms}
`, srv.MySQL.Addr(), srv.MySQL.User, srv.MySQL.Password, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password, demoDatabase)
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := replicator.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer r.Close()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(runCtx) }()
	for {
		if _, err := os.Stat(filepath.Join(cfg.StateDir, "checkpoint.json")); err == nil {
			break
		}
		select {
		case err := <-runDone:
			return fmt.Errorf("replicator stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Fprintf(e.stdout, "Replicator running: %s.* -> ClickHouse %s.*\n\n", demoDatabase, demoDatabase)

	db, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // one session: SET time_zone must hold for the INSERTs
	if err != nil {
		return fmt.Errorf("MySQL %s: %w", srv.MySQL.Addr(), err)
	}
	defer conn.Close()
	for _, q := range []string{
		loadgen.SessionSetup,
		"CREATE DATABASE IF NOT EXISTS " + demoDatabase,
		"USE " + demoDatabase,
		binlog2ch.BinlogFieldTestDDL,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("MySQL %s: %.60s: %w", srv.MySQL.Addr(), q, err)
		}
	}
	fmt.Fprintf(e.stdout, "Writing %d rows into %s.binlog_field_test_1...\n", rows, demoDatabase)
	start = time.Now()
	gen := loadgen.NewFieldTestGen(uint64(time.Now().UnixNano())).Compact(16)
	for done := 0; done < rows; {
		n := min(1000, rows-done)
		if _, err := conn.ExecContext(ctx, gen.Insert(demoDatabase, "binlog_field_test_1", n)); err != nil {
			return fmt.Errorf("MySQL %s: insert into %s.binlog_field_test_1: %w", srv.MySQL.Addr(), demoDatabase, err)
		}
		done += n
	}
	var count int64
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM binlog_field_test_1").Scan(&count); err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	fmt.Fprintf(e.stdout, "  MySQL holds %d rows (written at %.0f rows/s)\n\n", count, float64(rows)/max(el, 1e-9))

	ch, err := clickhouse.Open(&clickhouse.Options{
		Addr:   []string{srv.ClickHouse.Addr()},
		Auth:   clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password},
		Logger: liblog.ClickHouse(logger),
	})
	if err != nil {
		return err
	}
	defer ch.Close()
	var chCount uint64
	deadline := time.Now().Add(2 * time.Minute)
	for chCount != uint64(count) {
		if time.Now().After(deadline) {
			return fmt.Errorf("ClickHouse holds %d of %d rows after 2 minutes", chCount, count)
		}
		select {
		case err := <-runDone:
			return fmt.Errorf("replicator stopped: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		// The table appears with the first batch.
		_ = ch.QueryRow(ctx, "SELECT count() FROM "+demoDatabase+".binlog_field_test_1 FINAL WHERE _is_deleted = 0").Scan(&chCount)
	}
	fmt.Fprintf(e.stdout, "ClickHouse holds %d rows, %.1fs after the first was written. A sample:\n", chCount, time.Since(start).Seconds())
	sample, err := ch.Query(ctx, "SELECT id, testvarchar, testdecimal, testdatetime, testenum FROM "+demoDatabase+".binlog_field_test_1 FINAL ORDER BY id LIMIT 3")
	if err != nil {
		return err
	}
	for sample.Next() {
		var (
			id    uint64
			vc    string
			dec   decimal.Decimal
			dt    time.Time
			enum8 string
		)
		if err := sample.Scan(&id, &vc, &dec, &dt, &enum8); err != nil {
			sample.Close()
			return err
		}
		fmt.Fprintf(e.stdout, "  id=%d testvarchar=%q testdecimal=%s testdatetime=%s testenum=%s\n", id, vc, dec.StringFixed(2), dt.UTC().Format(time.DateTime), enum8)
	}
	sample.Close()
	stopRun()
	if err := <-runDone; err != nil {
		return fmt.Errorf("replicator: %w", err)
	}

	if keep {
		fmt.Fprintf(e.stdout, "\nServers keep running until Ctrl-C:\n  mysql -h %s -P %d -u %s %s\n  clickhouse-client --host %s --port %d\n",
			srv.MySQL.Host, srv.MySQL.Port, srv.MySQL.User, demoDatabase, srv.ClickHouse.Host, srv.ClickHouse.Port)
		<-ctx.Done()
	}
	fmt.Fprintln(e.stdout, "Stopping the servers.")
	return nil
}
