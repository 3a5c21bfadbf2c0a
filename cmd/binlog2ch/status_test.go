package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// lockedBuffer is a daemon's stderr, written while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestStatusCommand runs `binlog2ch status` before the daemon's first
// start (not running, no checkpoint), while it runs (the tables and their
// rows by operation, as text and -json, from the daemon's endpoint at the
// config's metrics.listen) and after it stopped (not running, and the
// checkpoint it left).
func TestStatusCommand(t *testing.T) {
	srv, db, my, _ := testDatabase(t, "b2c_cmdstatus")
	if _, err := my.Exec("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	cfgPath := writeConfig(t, srv, db, "batch: {flush_interval: 100ms}\ncheckpoint: {interval: 100ms}")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(data), `listen: "127.0.0.1:0"`, fmt.Sprintf("listen: %q", listen), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	notRunning := "binlog2ch is not running: nothing listens on " + listen + " (metrics.listen)"

	code, out, errOut := runCLI(t, "status", "-config", cfgPath)
	if code != exitNotRunning || !strings.Contains(out, notRunning) || !strings.Contains(out, "checkpoint  none: the next start copies every selected table first") {
		t.Fatalf("before the first start: exit %d\n%s%s", code, out, errOut)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	logs := &lockedBuffer{}
	go func() {
		done <- dispatch(ctx, &env{stdout: logs, stderr: logs}, []string{"run", "-config", cfgPath, "-log-format", "text"})
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			select {
			case code := <-done:
				t.Fatalf("run exited with %d; logs:\n%s", code, logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60s; logs:\n%s", what, logs.String())
			}
		}
	}
	running := func(args ...string) (status.Status, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"status", "-config", cfgPath}, args...)...)
		var st status.Status
		if code == exitOK && slices.Contains(args, "-json") {
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("status -json: %v\n%s", err, out)
			}
		}
		if code != exitOK && code != exitNotRunning {
			t.Fatalf("status %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return st, out
	}
	wait("the daemon serving its status", func() bool { st, _ := running("-json"); return st.Running })
	for _, q := range []string{
		"CREATE TABLE " + db + ".orders (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE " + db + ".quiet (id INT PRIMARY KEY)",
		"INSERT INTO " + db + ".orders VALUES " + values(30),
		"UPDATE " + db + ".orders SET v = v + 1 WHERE id < 4",
		"DELETE FROM " + db + ".orders WHERE id >= 28",
		"INSERT INTO " + db + ".quiet VALUES (1)",
	} {
		if _, err := my.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var st status.Status
	wait("the rows in the status", func() bool {
		st, _ = running("-json", "-sort", "name")
		return len(st.Tables) == 2 && st.Tables[0].Table == "orders" && st.Tables[0].Inserted == 30 && st.Tables[0].Updated == 4 && st.Tables[0].Deleted == 2 &&
			st.Tables[1].Inserted == 1
	})
	if st.Phase != "replicating" || st.Version == "" || st.Checkpoint == nil || st.Source.Product != "MariaDB" || st.Query.Sort != status.SortName || st.Query.Limit != 20 {
		t.Errorf("status -json: %+v", st)
	}
	_, text := running()
	// Compared with the columns' spaces collapsed.
	words := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{"binlog2ch " + buildVersion() + ": running for", "replicating", "source MariaDB", "target ClickHouse",
		"read binlog.", "checkpoint binlog.", "rows 31 inserted, 4 updated, 2 deleted", db + ".orders 30 4 2 ", db + ".quiet 1 0 0 ", "2 of 2 tables, by lag"} {
		if !strings.Contains(words, want) {
			t.Errorf("status: no %q in:\n%s", want, text)
		}
	}
	if _, text := running("-filter", "ORDERS", "-limit", "1"); !strings.Contains(text, "1 of 2 tables (1 matching \"ORDERS\")") || strings.Contains(text, db+".quiet") {
		t.Errorf("status -filter ORDERS:\n%s", text)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("run: exit %d; logs:\n%s", code, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not stop within 60s")
	}
	cp, err := state.LoadFile(cfg.StateDir)
	if err != nil || cp == nil {
		t.Fatalf("checkpoint after the stop: %v, %v", cp, err)
	}
	code, out, errOut = runCLI(t, "status", "-config", cfgPath)
	if code != exitNotRunning {
		t.Fatalf("stopped: exit %d, want %d\n%s%s", code, exitNotRunning, out, errOut)
	}
	for _, want := range []string{notRunning, "checkpoint  " + cp.Position.String(), "MySQL server " + cp.Server, "in " + cfg.StateDir} {
		if !strings.Contains(out, want) {
			t.Errorf("stopped: no %q in:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "status", "-config", cfgPath, "-json")
	var off status.Status
	if err := json.Unmarshal([]byte(out), &off); err != nil || code != exitNotRunning || off.Running || off.NotRunning == "" ||
		off.Checkpoint == nil || off.Checkpoint.Position != cp.Position.String() || off.Checkpoint.GTID != cp.GTID {
		t.Errorf("stopped, -json: exit %d, %v\n%s", code, err, out)
	}

	// A checkpoint with a copy state (as a daemon stopped during an
	// online copy leaves it): the status lists each table's.
	progress, err := json.Marshal(&snapshot.State{Server: cp.Server, Tables: map[string]*snapshot.TableProgress{db + ".quiet": {Rows: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Hour).UTC()
	cp.Tables = map[string]*state.TableCopy{
		db + ".quiet":  {State: state.CopyCopying, Reason: state.ReasonSelected, Since: since, Progress: progress},
		db + ".orders": {State: state.CopyFailed, Reason: state.ReasonAddColumn, Since: since, Error: "Code: 44. cannot add the column"},
	}
	if err := state.SaveFile(cfg.StateDir, *cp); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "status", "-config", cfgPath)
	for _, want := range []string{"online copies  1 tables not yet copied whole", "failed         1 tables failed",
		db + ".quiet waits for its online copy (selected, asked for 1h00m ago); 7 rows confirmed so far",
		db + ".orders FAILED (add_column, asked for 1h00m ago): Code: 44. cannot add the column. Fix the cause, then start binlog2ch"} {
		if code != exitNotRunning || !strings.Contains(out, want) {
			t.Errorf("stopped with a copy state: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	code, out, _ = runCLI(t, "status", "-config", cfgPath, "-json")
	off = status.Status{}
	if err := json.Unmarshal([]byte(out), &off); err != nil || code != exitNotRunning || off.Totals.States[status.StateWaiting] != 1 || off.Totals.States[status.StateFailed] != 1 {
		t.Errorf("stopped with a copy state, -json: exit %d, %v\n%s", code, err, out)
	}
}

// TestStatusAddr: a wildcard listen address is asked on loopback; a
// random port cannot be found from the config.
func TestStatusAddr(t *testing.T) {
	for listen, want := range map[string]string{"127.0.0.1:9188": "127.0.0.1:9188", "0.0.0.0:9188": "127.0.0.1:9188", ":9188": "127.0.0.1:9188", "[::]:9188": "[::1]:9188", "10.0.0.5:9": "10.0.0.5:9"} {
		got, err := statusAddr(&config.Config{Metrics: config.MetricsConfig{Listen: listen}}, "")
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", listen, got, err, want)
		}
	}
	if _, err := statusAddr(&config.Config{Metrics: config.MetricsConfig{Listen: "127.0.0.1:0"}}, ""); err == nil || !strings.Contains(err.Error(), "-addr") {
		t.Errorf("port 0: %v", err)
	}
	if got, err := statusAddr(&config.Config{Metrics: config.MetricsConfig{Listen: "127.0.0.1:0"}}, "127.0.0.1:4242"); err != nil || got != "127.0.0.1:4242" {
		t.Errorf("-addr: %q, %v", got, err)
	}
}

func values(n int) string {
	var v []string
	for i := range n {
		v = append(v, "("+strconv.Itoa(i)+", "+strconv.Itoa(i)+")")
	}
	return strings.Join(v, ", ")
}
