package localserver

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExternalParsesAddresses(t *testing.T) {
	s, err := external(EnvMySQL, "mysql://repl:s3cr%40t@db.example:3307", "mysql", 3306)
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "db.example" || s.Port != 3307 || s.User != "repl" || s.Password != "s3cr@t" || !s.External {
		t.Fatalf("got %+v", s.Endpoint)
	}
	s, err = external(EnvClickHouse, "clickhouse://ch.example", "clickhouse", 9000)
	if err != nil {
		t.Fatal(err)
	}
	if s.Port != 9000 || s.User != "default" || s.Password != "" {
		t.Fatalf("defaults: got %+v", s.Endpoint)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stopping an external server must be a no-op: %v", err)
	}
}

func TestExternalRejectsBadAddressesWithoutEchoingPassword(t *testing.T) {
	for _, raw := range []string{"root:hunter2@127.0.0.1:3306", "clickhouse://root:hunter2@h:1", "mysql://root:hunter2@h:port"} {
		_, err := external(EnvMySQL, raw, "mysql", 3306)
		if err == nil {
			t.Errorf("%q: accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error leaks the password: %v", raw, err)
		}
		if !strings.Contains(err.Error(), EnvMySQL) {
			t.Errorf("%q: error does not name the variable: %v", raw, err)
		}
	}
}

// TestStartAndStop starts both private servers, checks they answer, stops
// them, and checks no process or directory is left behind.
func TestStartAndStop(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	t.Setenv(EnvMySQL, "")
	t.Setenv(EnvClickHouse, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	db, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var format, meta string
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_format, @@binlog_row_metadata").Scan(&format, &meta); err != nil {
		t.Fatal(err)
	}
	if format != "ROW" || meta != "FULL" {
		t.Fatalf("binlog_format=%s binlog_row_metadata=%s, want ROW and FULL", format, meta)
	}
	if err := srv.ClickHouse.pingClickHouse(ctx); err != nil {
		t.Fatal(err)
	}

	pids := []int{srv.MySQL.cmd.Process.Pid, srv.ClickHouse.cmd.Process.Pid}
	dirs := []string{srv.MySQL.Dir, srv.ClickHouse.Dir}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("directory %s still exists after Stop", d)
		}
	}
	// A second Stop is harmless.
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestClickHouseKillAndRestart(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ch, err := StartClickHouse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Stop()
	port := ch.Port
	if err := ch.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := ch.pingClickHouse(ctx); err == nil {
		t.Fatal("ClickHouse answers after Kill")
	}
	if err := ch.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if ch.Port != port {
		t.Fatalf("port changed from %d to %d", port, ch.Port)
	}
	if err := ch.pingClickHouse(ctx); err != nil {
		t.Fatal(err)
	}
}
