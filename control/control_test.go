package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
)

// fakeDaemon is a test double of the daemon the control channel serves:
// it records the resyncs asked of it.
type fakeDaemon struct {
	mu     sync.Mutex
	calls  [][]schema.TableName
	answer error
}

func (f *fakeDaemon) Resync(_ context.Context, tables []schema.TableName) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, tables)
	return f.answer
}

func (f *fakeDaemon) resyncs() [][]schema.TableName {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func serveTestControl(t *testing.T, dir string, d Daemon) func() {
	t.Helper()
	stop, err := Serve(context.Background(), dir, d, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop
}

// rawControl sends line as is and returns the answer.
func rawControl(t *testing.T, dir, line string) Response {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(dir, Socket))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatal(err)
	}
	if uc, ok := c.(*net.UnixConn); ok && !strings.HasSuffix(line, "\n") {
		_ = uc.CloseWrite()
	}
	answer, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("%q: no answer: %v", line, err)
	}
	var resp Response
	if err := json.Unmarshal(answer, &resp); err != nil {
		t.Fatalf("%q: answer %q: %v", line, answer, err)
	}
	return resp
}

// TestControlChannel: the socket is 0600, a resync reaches the daemon with
// its tables and the daemon's refusal reaches the client, bad requests are
// answered with why, and stopping removes the socket.
func TestControlChannel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	d := &fakeDaemon{}
	stop := serveTestControl(t, dir, d)
	path := filepath.Join(dir, Socket)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, %v; want a socket of mode 0600", path, fi.Mode(), err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state_dir: %v, %v; want 0700", fi.Mode(), err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "control.new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary socket name is left: %v", err)
	}

	ctx := context.Background()
	resp, err := Send(ctx, dir, Request{Op: "resync", Tables: []string{"shop.orders", "crm.users"}})
	if err != nil || !resp.OK || !strings.Contains(resp.Message, "queued 2 table(s) for an online copy: shop.orders, crm.users") {
		t.Fatalf("resync: %+v, %v", resp, err)
	}
	want := [][]schema.TableName{{{Database: "shop", Table: "orders"}, {Database: "crm", Table: "users"}}}
	if got := d.resyncs(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("daemon asked %v, want %v", got, want)
	}

	d.answer = errors.New("shop.orders: not selected by tables.include")
	resp, err = Send(ctx, dir, Request{Op: "resync", Tables: []string{"shop.orders"}})
	if err != nil || resp.OK || resp.Error != "shop.orders: not selected by tables.include" {
		t.Errorf("refused resync: %+v, %v", resp, err)
	}

	calls := len(d.resyncs())
	for _, c := range []struct{ line, want string }{
		{`{"op":"resync","tables":["nodot"]}` + "\n", `resync: want db.table, got "nodot"`},
		{`{"op":"resync"}` + "\n", "resync: no tables"},
		{`{"op":"drop"}` + "\n", `unknown op "drop"`},
		{`{"op":"resync","tables":["a.b"],"force":true}` + "\n", "bad request: not a JSON request"},
		{"hello\n", "bad request: not a JSON request"},
		{`{"op":"resync","tables":["a.b"]}`, "bad request: want one JSON line ending in a newline"},
	} {
		resp := rawControl(t, dir, c.line)
		if resp.OK || !strings.Contains(resp.Error, c.want) {
			t.Errorf("%q: %+v, want an error with %q", c.line, resp, c.want)
		}
	}
	if got := len(d.resyncs()); got != calls {
		t.Errorf("bad requests reached the daemon: %d calls, want %d", got, calls)
	}

	stop()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
	if _, err := Send(ctx, dir, Request{Op: "resync", Tables: []string{"a.b"}}); err == nil {
		t.Error("a stopped channel answered")
	}
}

// TestControlStaleSocket: a socket no one answers on (a daemon killed
// without its clean-up) is replaced; one another server answers on is
// refused.
func TestControlStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, Socket)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays, as after a SIGKILL
	d := &fakeDaemon{}
	serveTestControl(t, dir, d)
	if resp, err := Send(context.Background(), dir, Request{Op: "resync", Tables: []string{"a.b"}}); err != nil || !resp.OK {
		t.Fatalf("after a stale socket: %+v, %v", resp, err)
	}
	_, err = Serve(context.Background(), dir, d, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "another process answers on it") {
		t.Fatalf("second server on a live socket: %v", err)
	}
}

// TestControlLongPath: a state_dir too deep for a sockaddr_un still gets
// its socket (reached through the directory's descriptor).
func TestControlLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if len(filepath.Join(dir, Socket)) <= 108 {
		t.Fatal("path not long enough to test")
	}
	d := &fakeDaemon{}
	serveTestControl(t, dir, d)
	if resp, err := Send(context.Background(), dir, Request{Op: "resync", Tables: []string{"a.b"}}); err != nil || !resp.OK {
		t.Fatalf("long path: %+v, %v", resp, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, Socket)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v", fi.Mode(), err)
	}
}

// envControlClient makes the test binary a control client (TestMain):
// it sends a resync to the state_dir named and prints the answer.
const envControlClient = "BINLOG2CH_TEST_CONTROL_CLIENT"

func controlClientMain(dir string) int {
	resp, err := Send(context.Background(), dir, Request{Op: "resync", Tables: []string{"a.b"}})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	line, _ := json.Marshal(resp)
	fmt.Println(string(line))
	return 0
}

// TestControlRefusesOtherUser: a peer of another uid is refused by its
// SO_PEERCRED uid even when the socket's mode would let it in. It needs
// root, to run the client as another user.
func TestControlRefusesOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid; the uid check is untested here")
	}
	const nobody = 65534
	// A directory every user may enter, holding the state_dir and a link
	// to this test binary for the client to run.
	dir, err := os.MkdirTemp("", "binlog2ch-control-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	state := filepath.Join(dir, "state")
	d := &fakeDaemon{}
	serveTestControl(t, state, d)
	// Open the socket's mode wide, so that only the uid check stands.
	for p, mode := range map[string]os.FileMode{dir: 0o755, state: 0o755, filepath.Join(state, Socket): 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "replicator.test")
	if err := os.Link(self, bin); err != nil {
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(uid uint32) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), envControlClient+"="+state)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client as uid %d: %v\n%s", uid, err, out)
		}
		return string(out)
	}
	out := run(nobody)
	if !strings.Contains(out, `"ok":false`) || !strings.Contains(out, "you are uid 65534") {
		t.Fatalf("client as uid %d: %s", nobody, out)
	}
	if got := d.resyncs(); len(got) != 0 {
		t.Fatalf("a refused peer reached the daemon: %v", got)
	}
	// root is let in.
	if out := run(0); !strings.Contains(out, `"ok":true`) || len(d.resyncs()) != 1 {
		t.Fatalf("client as root: %s", out)
	}
}
