package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/control"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// closedPortsConfig is a config whose servers cannot be reached: the
// commands tested with it must decide before connecting.
func closedPortsConfig(t *testing.T) (path, stateDir string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "binlog2ch.yaml")
	if err := os.WriteFile(path, []byte(`mysql: {addr: "127.0.0.1:1", user: repl, server_id: 1}
clickhouse: {addr: ["127.0.0.1:1"]}
tables: {include: ["shop.*"]}
state_dir: state
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Join(dir, "state")
}

func holdStateDir(t *testing.T, dir, command string) {
	t.Helper()
	l, err := state.LockDir(dir, command)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
}

// TestRunRefusesHeldStateDir: a second daemon on a state_dir fails at
// start, naming the pid holding it.
func TestRunRefusesHeldStateDir(t *testing.T) {
	conf, dir := closedPortsConfig(t)
	holdStateDir(t, dir, "run")
	code, _, errOut := runCLI(t, "run", "-config", conf)
	want := fmt.Sprintf("another binlog2ch run (pid %d) holds state_dir %s: one daemon per state_dir", os.Getpid(), dir)
	if code != exitError || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, want %d with %q; stderr:\n%s", code, exitError, want, errOut)
	}
}

// TestFullSyncRefusesBesideDaemon: fullsync refuses while a daemon holds
// state_dir and says how to copy the tables while it runs; beside another
// fullsync it says to wait.
func TestFullSyncRefusesBesideDaemon(t *testing.T) {
	conf, dir := closedPortsConfig(t)
	holdStateDir(t, dir, "run")
	code, _, errOut := runCLI(t, "fullsync", "-config", conf, "-tables", "shop.orders")
	for _, want := range []string{
		fmt.Sprintf("a running binlog2ch (pid %d) holds state_dir %s", os.Getpid(), dir),
		"To copy tables again while it runs, use `binlog2ch resync -config " + conf + " -tables shop.orders`",
	} {
		if code != exitError || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, exitError, want, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "fullsync", "-config", conf); !strings.Contains(errOut, "-tables db.t[,...]`") || code != exitError {
		t.Errorf("every table: exit %d; stderr:\n%s", code, errOut)
	}

	conf2, dir2 := closedPortsConfig(t)
	holdStateDir(t, dir2, "fullsync")
	code, _, errOut = runCLI(t, "fullsync", "-config", conf2)
	if want := fmt.Sprintf("binlog2ch fullsync (pid %d) is working in state_dir %s; wait for it to finish", os.Getpid(), dir2); code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("beside a fullsync: exit %d, want %q; stderr:\n%s", code, want, errOut)
	}
}

// TestResyncWithoutDaemon: with no daemon, resync says it copies the
// tables itself and ResyncOffline's error is its own (the servers here
// cannot be reached); state_dir's lock is held meanwhile and let go after.
func TestResyncWithoutDaemon(t *testing.T) {
	conf, dir := closedPortsConfig(t)
	code, out, errOut := runCLI(t, "resync", "-config", conf, "-tables", "shop.orders,shop.users")
	if !strings.Contains(out, "no binlog2ch run holds state_dir "+dir+": copying shop.orders, shop.users here, with no daemon") {
		t.Errorf("stdout does not say the copy runs here:\n%s", out)
	}
	if code != exitError || !strings.Contains(errOut, "binlog2ch resync: ") {
		t.Errorf("exit %d, want %d with ResyncOffline's error; stderr:\n%s", code, exitError, errOut)
	}
	// What ResyncOffline answers today, or, once it is built, the servers
	// it cannot reach.
	if !strings.Contains(errOut, "not built yet") && !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("stderr does not carry ResyncOffline's error:\n%s", errOut)
	}
	holdStateDir(t, dir, "run") // released after the copy
}

// TestResyncUsage: -tables is required, and each table must be selected.
func TestResyncUsage(t *testing.T) {
	conf, _ := closedPortsConfig(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", conf}, "-tables db.t1[,db.t2...] is required"},
		{[]string{"-config", conf, "-tables", "nodot"}, `want db.table, got "nodot"`},
		{[]string{"-config", conf, "-tables", "shop.a,crm.b"}, "crm.b is not selected by tables.include/exclude in " + conf},
	} {
		if code, _, errOut := runCLI(t, append([]string{"resync"}, c.args...)...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d with %q; stderr:\n%s", c.args, code, exitUsage, c.want, errOut)
		}
	}
}

// controlDouble is a test double of the running daemon behind the
// control socket.
type controlDouble struct {
	asked  [][]schema.TableName
	answer error
}

func (d *controlDouble) Resync(_ context.Context, tables []schema.TableName) error {
	d.asked = append(d.asked, tables)
	return d.answer
}

// TestResyncAsksTheDaemon: with a daemon holding state_dir, resync sends
// the tables over its control socket and prints its answer, or its
// refusal; a daemon not serving the socket yet is said to be so.
func TestResyncAsksTheDaemon(t *testing.T) {
	conf, dir := closedPortsConfig(t)
	holdStateDir(t, dir, "run")
	code, _, errOut := runCLI(t, "resync", "-config", conf, "-tables", "shop.orders")
	if want := fmt.Sprintf("binlog2ch run (pid %d) holds state_dir %s but did not answer on its control socket", os.Getpid(), dir); code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("no socket: exit %d, want %q; stderr:\n%s", code, want, errOut)
	}

	d := &controlDouble{}
	stop, err := control.Serve(context.Background(), dir, d, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, out, errOut := runCLI(t, "resync", "-config", conf, "-tables", "shop.orders, shop.users")
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("the running binlog2ch run (pid %d): queued 2 table(s) for an online copy: shop.orders, shop.users", os.Getpid())) ||
		!strings.Contains(out, "`binlog2ch status -config "+conf+"` shows the copy's progress") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if len(d.asked) != 1 || len(d.asked[0]) != 2 || d.asked[0][1] != (schema.TableName{Database: "shop", Table: "users"}) {
		t.Errorf("the daemon was asked %v", d.asked)
	}
	d.answer = errors.New("shop.orders: a copy of it is running already")
	code, _, errOut = runCLI(t, "resync", "-config", conf, "-tables", "shop.orders")
	if code != exitError || !strings.Contains(errOut, "refused: shop.orders: a copy of it is running already") {
		t.Errorf("refused: exit %d; stderr:\n%s", code, errOut)
	}
}

// TestRunControlAndReload runs `binlog2ch run` end to end: it serves its
// control socket (0600) and holds state_dir; resync reaches it; a SIGHUP
// with a key a reload may not change, or with a file that does not load,
// is refused with an ERROR and the daemon goes on replicating; systemd
// hears RELOADING=1 (with MONOTONIC_USEC) and READY=1 for each. At exit
// the socket is gone.
func TestRunControlAndReload(t *testing.T) {
	srv, db, my, ch := testDatabase(t, "b2c_reload")
	if _, err := my.Exec("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	if _, err := my.Exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	msgs := fakeNotifySocket(t)
	cfgPath := writeConfig(t, srv, db, "")
	original, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(filepath.Dir(cfgPath), "state")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	logs := &lockedBuffer{}
	go func() {
		done <- dispatch(ctx, &env{stdout: logs, stderr: logs}, []string{"run", "-config", cfgPath, "-log-format", "text"})
	}()
	expectMessage(t, msgs, "READY=1", "STOPPING=1")
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
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
	sock := filepath.Join(stateDir, control.Socket)
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("control socket: %v, %v", fi.Mode(), err)
	}
	if code, _, errOut := runCLI(t, "run", "-config", cfgPath); code != exitError || !strings.Contains(errOut, fmt.Sprintf("another binlog2ch run (pid %d)", os.Getpid())) {
		t.Errorf("second run: exit %d; stderr:\n%s", code, errOut)
	}
	// The daemon answers (today Resync says online copies are not built).
	code, out, errOut := runCLI(t, "resync", "-config", cfgPath, "-tables", db+".t")
	if holder := fmt.Sprintf("the running binlog2ch run (pid %d)", os.Getpid()); !strings.Contains(out+errOut, holder) {
		t.Errorf("resync: exit %d, no answer from the daemon:\n%s%s", code, out, errOut)
	}

	hangup := func(content string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		n := strings.Count(logs.String(), "SIGHUP: reloading the config")
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		wait("the reload", func() bool { return strings.Count(logs.String(), "SIGHUP: reloading the config") > n })
		expectPrefix(t, msgs, "RELOADING=1\nMONOTONIC_USEC=")
		expectMessage(t, msgs, "READY=1", "STOPPING=1")
	}
	hangup(string(original) + "batch: {max_rows: 10}\n")
	wait("the refusal", func() bool {
		return strings.Contains(logs.String(), "config reload refused; binlog2ch goes on with the config it has") &&
			strings.Contains(logs.String(), "batch.max_rows changed") && strings.Contains(logs.String(), "restart it")
	})
	hangup("mysql: [\n")
	wait("the refusal of a bad file", func() bool {
		return strings.Contains(logs.String(), "config reload refused: the file does not load") && strings.Contains(logs.String(), "not valid YAML")
	})
	// A new selection goes to the daemon, which takes it or says why not.
	hangup(strings.Replace(string(original), `include: ["`+db+`.*"]`, `include: ["`+db+`.*", "`+db+`_more.*"]`, 1))
	wait("the new selection handed over", func() bool {
		return strings.Contains(logs.String(), "msg=\"config reloaded\"") || strings.Contains(logs.String(), "config reload refused by the daemon")
	})
	if strings.Contains(logs.String(), "level=ERROR msg=\"replication stopped\"") {
		t.Fatalf("the daemon stopped:\n%s", logs.String())
	}
	// Still replicating.
	if _, err := my.Exec("INSERT INTO " + db + ".t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	wait("the row in ClickHouse", func() bool {
		var n uint64
		return ch.QueryRow(context.Background(), "SELECT count() FROM "+db+".t").Scan(&n) == nil && n == 1
	})
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("run: exit %d; logs:\n%s", code, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not stop within 60s")
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket left after exit: %v", err)
	}
}

// expectPrefix waits for a notification starting with prefix.
func expectPrefix(t *testing.T, msgs <-chan string, prefix string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed before %q", prefix)
			}
			if strings.HasPrefix(m, prefix) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q within 60s", prefix)
		}
	}
}
