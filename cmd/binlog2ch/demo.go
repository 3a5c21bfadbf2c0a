package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/go-sql-driver/mysql"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/loadgen"
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
	gen := loadgen.NewFieldTestGen(uint64(time.Now().UnixNano()))
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
	var file, pos, ignore1, ignore2 string
	if err := conn.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &pos, &ignore1, &ignore2); err != nil {
		return fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	el := time.Since(start).Seconds()
	fmt.Fprintf(e.stdout, "  MySQL holds %d rows (%.0f rows/s); binlog at %s:%s\n\n", count, float64(rows)/max(el, 1e-9), file, pos)

	ch, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{srv.ClickHouse.Addr()},
		Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password},
	})
	if err != nil {
		return err
	}
	defer ch.Close()
	var chVersion string
	if err := ch.QueryRow(ctx, "SELECT version()").Scan(&chVersion); err != nil {
		return fmt.Errorf("ClickHouse %s: %w", srv.ClickHouse.Addr(), err)
	}
	fmt.Fprintf(e.stdout, "ClickHouse %s answers.\n", chVersion)
	fmt.Fprintln(e.stdout, "Replication is not implemented yet (it lands with issue #4): nothing was copied to ClickHouse.")

	if keep {
		fmt.Fprintf(e.stdout, "\nServers keep running until Ctrl-C:\n  mysql -h %s -P %d -u %s %s\n  clickhouse-client --host %s --port %d\n",
			srv.MySQL.Host, srv.MySQL.Port, srv.MySQL.User, demoDatabase, srv.ClickHouse.Host, srv.ClickHouse.Port)
		<-ctx.Done()
	}
	fmt.Fprintln(e.stdout, "Stopping the servers.")
	return nil
}
