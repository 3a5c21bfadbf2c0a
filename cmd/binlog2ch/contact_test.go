package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/verify"
)

// TestLoadgenRunVerifyWithExampleConfig is a user's first contact:
// `binlog2ch loadgen -create`, then `binlog2ch run` with the example config
// (only addresses, users, the database and state_dir changed; the default
// schema.invalid_dates: error kept), then `binlog2ch verify`. The daemon
// must take every generated row, through its initial snapshot and through
// the binlog, and verify must find both sides equal.
func TestLoadgenRunVerifyWithExampleConfig(t *testing.T) {
	srv, db, my, _ := testDatabase(t, "b2c_contact")
	cfgPath := exampleConfig(t, srv, db)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.SchemaOptions().InvalidDates; p != schema.InvalidError {
		t.Fatalf("the example config sets invalid_dates %q: the test is about the default, %q", p, schema.InvalidError)
	}
	loadgen := func(seed string, extra ...string) {
		t.Helper()
		args := append([]string{"loadgen", "-host", srv.MySQL.Host, "-port", strconv.Itoa(srv.MySQL.Port), "-user", srv.MySQL.User,
			"-pwd", srv.MySQL.Password, "-schema", db, "-tables", "2", "-conn", "3", "-count", "1500", "-batchsize", "100", "-seed", seed}, extra...)
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || !strings.Contains(out, "inserted:  3000 rows") || !strings.Contains(out, "errors:    0") {
			t.Fatalf("loadgen %v: exit %d\nstdout:\n%s\nstderr:\n%s", extra, code, out, errOut)
		}
	}
	// Before the daemon's first start: its initial snapshot copies these.
	loadgen("1", "-create")

	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() {
		done <- dispatch(runCtx, &env{stdout: io.Discard, stderr: &errOut}, []string{"run", "-config", cfgPath, "-log-format", "text"})
	}()
	// Without a checkpoint the daemon saves its start position first.
	waitFor(t, done, &errOut, func() bool {
		cp, err := state.LoadFile(cfg.StateDir)
		return err == nil && cp != nil
	})
	// While it runs: more rows, updates and deletes, through the binlog.
	loadgen("2", "-update-ratio", "0.2", "-delete-ratio", "0.05")
	target, err := source.CurrentPosition(context.Background(), my)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, &errOut, func() bool {
		cp, err := state.LoadFile(cfg.StateDir)
		return err == nil && cp != nil && !cp.Position.Before(target)
	})
	cancel()
	waitStopped(t, done, &errOut)
	if strings.Contains(errOut.String(), "invalid_dates") {
		t.Errorf("the daemon changed or refused dates:\n%s", errOut.String())
	}

	code, out, vErr := runCLI(t, "verify", "-config", cfgPath, "-json")
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || !rep.OK || len(rep.Tables) != 2 {
		t.Fatalf("verify: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out, vErr)
	}
	for _, tr := range rep.Tables {
		var n uint64
		if err := my.QueryRow("SELECT COUNT(*) FROM " + db + "." + tr.Table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if tr.Status != verify.StatusOK || tr.RowsMySQL != n || n < 2000 || tr.RowsClickHouse != int64(n) {
			t.Errorf("%s: %+v; MySQL holds %d rows", tr.Table, tr, n)
		}
	}
}

// exampleConfig writes deploy/binlog2ch.example.yaml with only what names
// the test servers changed: their addresses and users, the database,
// state_dir and the metrics port (0: any free one, as other tests may hold
// the default). The MySQL password goes through the file's own
// ${MYSQL_PASSWORD}.
func exampleConfig(t *testing.T, srv *localserver.Servers, db string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "binlog2ch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := string(data)
	for _, r := range [][2]string{
		{`addr: "127.0.0.1:3306"`, fmt.Sprintf("addr: %q", srv.MySQL.Addr())},
		{`user: "repl"`, fmt.Sprintf("user: %q", srv.MySQL.User)},
		{`addr: ["127.0.0.1:9000"]`, fmt.Sprintf("addr: [%q]", srv.ClickHouse.Addr())},
		{`user: "default"`, fmt.Sprintf("user: %q", srv.ClickHouse.User)},
		{`password: ""`, fmt.Sprintf("password: %q", srv.ClickHouse.Password)},
		{`include: ["shop.*"]`, fmt.Sprintf("include: [%q]", db+".*")},
		{`state_dir: "/var/lib/binlog2ch"`, fmt.Sprintf("state_dir: %q", filepath.Join(dir, "state"))},
		{`listen: "127.0.0.1:9188"`, `listen: "127.0.0.1:0"`},
	} {
		if n := strings.Count(conf, r[0]); n != 1 {
			t.Fatalf("the example config has %s %d times, want once", r[0], n)
		}
		conf = strings.Replace(conf, r[0], r[1], 1)
	}
	t.Setenv("MYSQL_PASSWORD", srv.MySQL.Password)
	path := filepath.Join(dir, "binlog2ch.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
