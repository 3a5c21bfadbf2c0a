package replicator

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// harness is a source database set, a config and the servers.
type harness struct {
	t    testing.TB
	srv  *localserver.Servers
	cfg  *config.Config
	path string // config file
	my   *sql.DB
	ch   driver.Conn
	dbs  []string
}

// newHarness creates MySQL databases named prefix_a, prefix_b... (n of
// them), a config selecting them except tables named skip_*, and a
// checkpoint at the current binlog position, so the daemon sees every
// statement the test runs afterwards.
func newHarness(t testing.TB, n int, extra string) *harness {
	t.Helper()
	srv := servertest.Need(t)
	return newHarnessOn(t, srv, fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4242}
clickhouse: {addr: [%q], user: %q, password: %q}
`, srv.MySQL.Addr(), srv.MySQL.User, srv.MySQL.Password, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password), n, extra)
}

// newHarnessOn is newHarness on servers srv, with conn the config's mysql
// and clickhouse sections. The harness's own connections use srv's
// plain-text endpoints.
func newHarnessOn(t testing.TB, srv *localserver.Servers, conn string, n int, extra string) *harness {
	t.Helper()
	h := &harness{t: t, srv: srv}
	prefix := servertest.Name("b2c_repl")
	var include []string
	for i := 0; i < n; i++ {
		db := fmt.Sprintf("%s_%c", prefix, 'a'+i)
		h.dbs = append(h.dbs, db)
		include = append(include, fmt.Sprintf("%q", db+".*"))
	}
	dir := t.TempDir()
	conf := fmt.Sprintf(`%stables:
  include: [%s]
  exclude: ["*.skip_*"]
state_dir: state
metrics: {listen: "127.0.0.1:0"}
%s`, conn, strings.Join(include, ", "), extra+testTiming(extra))
	h.path = filepath.Join(dir, "binlog2ch.yaml")
	if err := os.WriteFile(h.path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if h.cfg, err = config.Load(h.path); err != nil {
		t.Fatal(err)
	}
	if h.my, err = sql.Open("mysql", srv.MySQL.DSN("")); err != nil {
		t.Fatal(err)
	}
	h.my.SetMaxOpenConns(4)
	t.Cleanup(func() { h.my.Close() })
	h.ch, err = clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()}, Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.ch.Close() })
	for _, db := range h.dbs {
		t.Cleanup(func() {
			_, _ = h.my.Exec("DROP DATABASE IF EXISTS " + db)
			_ = h.ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
		})
	}
	r := h.newReplicator(io.Discard)
	defer r.Close()
	pos, err := r.currentPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := state.SaveFile(h.cfg.StateDir, state.Checkpoint{Position: pos, Server: r.server.ID}); err != nil {
		t.Fatal(err)
	}
	for _, db := range h.dbs {
		h.exec("CREATE DATABASE " + db)
	}
	return h
}

// testTiming makes tests flush and checkpoint often, unless extra sets
// its own batch and checkpoint settings (the benchmark keeps the defaults).
func testTiming(extra string) string {
	if strings.Contains(extra, "batch:") {
		return ""
	}
	return "\nbatch: {flush_interval: 100ms}\ncheckpoint: {interval: 100ms}\n"
}

func (h *harness) newReplicator(logs io.Writer) *Replicator {
	h.t.Helper()
	r, err := New(context.Background(), h.cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) exec(queries ...string) {
	h.t.Helper()
	for _, q := range queries {
		if _, err := h.my.Exec(q); err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
	}
}

// running is a replicator running in this process.
type running struct {
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
	r      *Replicator
}

func (h *harness) start() *running {
	h.t.Helper()
	return h.startWith(testHooks{})
}

// startWith is start with pause points set.
func (h *harness) startWith(hooks testHooks) *running {
	h.t.Helper()
	logs := &syncBuffer{}
	return h.startLogged(logs, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), hooks)
}

// startLogged is startWith with the replicator logging to log; logs is
// what failures show.
func (h *harness) startLogged(logs *syncBuffer, log *slog.Logger, hooks testHooks) *running {
	h.t.Helper()
	r, err := New(context.Background(), h.cfg, log)
	if err != nil {
		h.t.Fatal(err)
	}
	r.hooks = hooks
	if hooks.parkAfter > 0 {
		r.parkAfter = hooks.parkAfter
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &running{cancel: cancel, done: make(chan error, 1), logs: logs, r: r}
	go func() {
		defer r.Close()
		run.done <- r.Run(ctx)
	}()
	h.t.Cleanup(func() { run.stop(h.t) })
	return run
}

// wantError fails the test unless err holds every one of wants.
func wantError(t testing.TB, err error, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v; want an error with %q", err, want)
		}
	}
}

// stopped waits for a replicator that must stop by itself and returns
// its error; what names the stop in the failure when it does not.
func (r *running) stopped(t testing.TB, timeout time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.cancel = nil
		return err
	case <-time.After(timeout):
		t.Fatalf("%s; logs:\n%s", what, tail(r.logs.String(), 4000))
		return nil
	}
}

// stop shuts the replicator down cleanly and returns its error.
func (r *running) stop(t testing.TB) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("replicator did not stop within 60s; logs:\n%s", r.logs.String())
		return nil
	}
}

// waitCaughtUp waits until the checkpoint reaches MySQL's current position,
// failing the test on timeout or when the replicator stops.
func (h *harness) waitCaughtUp(run *running, timeout time.Duration) {
	h.waitCaughtUpOr(run, nil, timeout)
}

// waitCaughtUpOr is waitCaughtUp that also fails when exited is closed.
func (h *harness) waitCaughtUpOr(run *running, exited <-chan struct{}, timeout time.Duration) {
	h.t.Helper()
	r := h.newReplicator(io.Discard)
	target, err := r.currentPosition(context.Background())
	server := r.server.ID
	r.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if run != nil {
			select {
			case err := <-run.done:
				run.cancel = nil
				h.t.Fatalf("replicator stopped: %v\nlogs:\n%s", err, run.logs.String())
			default:
			}
		}
		select {
		case <-exited:
			h.t.Fatal("the daemon exited")
		default:
		}
		cp, err := state.Read(context.Background(), h.cfg, h.ch)
		if err != nil {
			h.t.Fatal(err)
		}
		// The file checkpoint is written when an initial snapshot starts:
		// caught up means the copy is complete too.
		snap, err := snapshot.Load(h.cfg.StateDir, snapshot.InitialFile)
		if err != nil {
			h.t.Fatal(err)
		}
		// A position means something on its own server only (after a
		// failover the checkpoint is on the old one until the first save).
		if cp != nil && cp.Server == server && !cp.Position.Before(target) && (snap == nil || snap.Complete) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	logs := ""
	if run != nil {
		logs = run.logs.String()
	}
	h.t.Fatalf("not caught up with %s within %s; logs:\n%s", target, timeout, logs)
}

// mysqlRows renders every row of a MySQL table, sorted, one string each.
func (h *harness) mysqlRows(db, table string, cols []string) []string {
	h.t.Helper()
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, fmt.Sprintf("IFNULL(CAST(`%s` AS CHAR), 'NULL')", c))
	}
	rows, err := h.my.Query(fmt.Sprintf("SELECT CONCAT_WS('|', %s) FROM `%s`.`%s`", strings.Join(exprs, ", "), db, table))
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// clickhouseRows renders the current rows of a replicated table (FINAL,
// _is_deleted = 0) the same way.
func (h *harness) clickhouseRows(db, table string, cols []string) []string {
	h.t.Helper()
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, fmt.Sprintf("ifNull(toString(`%s`), 'NULL')", c))
	}
	q := fmt.Sprintf("SELECT arrayStringConcat([%s], '|') FROM `%s`.`%s` FINAL WHERE _is_deleted = 0", strings.Join(exprs, ", "), db, table)
	rows, err := h.ch.Query(context.Background(), q)
	if err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// assertEqual compares a table's full row set on both sides.
func (h *harness) assertEqual(db, table string, cols []string) {
	h.t.Helper()
	h.compareRows(db+"."+table, cols, h.mysqlRows(db, table, cols), h.clickhouseRows(db, table, cols))
}

// compareRows fails the test when the two renderings differ, showing the
// first rows that do, column by column.
func (h *harness) compareRows(what string, cols, want, got []string) {
	h.t.Helper()
	if slices.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	first := func(rows []string) string {
		if i >= len(rows) {
			return "(none)"
		}
		return truncate(rows[i], 2000)
	}
	detail := ""
	if i < len(want) && i < len(got) {
		w, g := strings.Split(want[i], "|"), strings.Split(got[i], "|")
		for c := 0; c < len(w) && c < len(g) && c < len(cols); c++ {
			if w[c] != g[c] {
				detail += fmt.Sprintf("\n  column %s: MySQL %q, ClickHouse %q", cols[c], truncate(w[c], 200), truncate(g[c], 200))
			}
		}
	}
	h.t.Errorf("%s differs: MySQL %d rows, ClickHouse %d rows; first difference at sorted row %d:%s\nMySQL:      %s\nClickHouse: %s",
		what, len(want), len(got), i, detail, first(want), first(got))
}

func (h *harness) chTableExists(db, table string) bool {
	h.t.Helper()
	var n uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n > 0
}

// TestStartRefusesWrongOrPurgedPositions: a checkpoint from another server
// and a position whose binlog is gone stop the daemon with a message.
func TestStartRefusesWrongOrPurgedPositions(t *testing.T) {
	h := newHarness(t, 1, "")
	r := h.newReplicator(io.Discard)
	server := r.server.ID
	r.Close()

	if err := state.SaveFile(h.cfg.StateDir, state.Checkpoint{Position: source.Position{File: "binlog.000001", Pos: 4}, Server: "uuid:another"}); err != nil {
		t.Fatal(err)
	}
	r = h.newReplicator(io.Discard)
	err := r.Run(context.Background())
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "was saved on MySQL server uuid:another") || !strings.Contains(err.Error(), "holds no GTID set") {
		t.Fatalf("checkpoint of another server: %v", err)
	}

	// A file newer than the server's newest: its binlog restarted.
	if err := state.SaveFile(h.cfg.StateDir, state.Checkpoint{Position: source.Position{File: "binlog.000999", Pos: 4}, Server: server}); err != nil {
		t.Fatal(err)
	}
	r = h.newReplicator(io.Discard)
	err = r.Run(context.Background())
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "the server's newest binlog file is binlog.0000") || !strings.Contains(err.Error(), "RESET MASTER") {
		t.Fatalf("checkpoint past the server's binlog: %v", err)
	}

	if err := state.SaveFile(h.cfg.StateDir, state.Checkpoint{Position: source.Position{File: "binlog.000000", Pos: 4}, Server: server}); err != nil {
		t.Fatal(err)
	}
	r = h.newReplicator(io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = r.Run(ctx)
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "cannot send the binlog from binlog.000000:4") || !strings.Contains(err.Error(), "re-snapshot") {
		t.Fatalf("purged position: %v", err)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
