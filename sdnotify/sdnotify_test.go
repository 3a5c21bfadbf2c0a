package sdnotify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listen opens a unixgram socket like systemd's and points NOTIFY_SOCKET
// at it.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", name)
	return conn
}

// receive returns the next datagram, failing the test after timeout.
func receive(t *testing.T, conn *net.UnixConn, timeout time.Duration) string {
	t.Helper()
	msg, err := tryReceive(conn, timeout)
	if err != nil {
		t.Fatalf("no notification within %s: %v", timeout, err)
	}
	return msg
}

func tryReceive(conn *net.UnixConn, timeout time.Duration) (string, error) {
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func TestNotify(t *testing.T) {
	for _, tc := range []struct{ name, socket string }{
		{"path", filepath.Join(t.TempDir(), "notify.sock")},
		{"abstract", fmt.Sprintf("@binlog2ch-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := listen(t, tc.socket)
			n := New()
			if !n.Enabled() {
				t.Fatal("Enabled() = false with NOTIFY_SOCKET set")
			}
			for _, step := range []struct {
				send func() error
				want string
			}{
				{n.Ready, "READY=1"},
				{func() error { return n.Status("replicating from mysql-bin.000003:4") }, "STATUS=replicating from mysql-bin.000003:4"},
				{n.Watchdog, "WATCHDOG=1"},
				{n.Stopping, "STOPPING=1"},
			} {
				if err := step.send(); err != nil {
					t.Fatalf("sending %s: %v", step.want, err)
				}
				if got := receive(t, conn, 5*time.Second); got != step.want {
					t.Fatalf("received %q, want %q", got, step.want)
				}
			}
		})
	}
}

func TestNotifyUnsetIsNoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	n := New()
	if n.Enabled() {
		t.Fatal("Enabled() = true without NOTIFY_SOCKET")
	}
	for _, f := range []func() error{n.Ready, n.Stopping, n.Watchdog} {
		if err := f(); err != nil {
			t.Fatalf("without NOTIFY_SOCKET: %v", err)
		}
	}
	// Must return at once rather than tick forever.
	done := make(chan struct{})
	go func() {
		n.KeepAlive(context.Background(), time.Millisecond, func() bool { return true }, slog.New(slog.DiscardHandler))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("KeepAlive without NOTIFY_SOCKET did not return")
	}
}

func TestNotifyErrors(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "nobody-listens"))
	if err := New().Ready(); err == nil {
		t.Error("Ready() to a missing socket: no error")
	}
	t.Setenv("NOTIFY_SOCKET", "vsock:2:1234")
	if err := New().Ready(); err == nil {
		t.Error("Ready() to a vsock address: no error")
	}
}

func TestWatchdogInterval(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
		wantErr   bool
	}{
		{"", "", 0, false},
		{"60000000", "", 60 * time.Second, false},
		{"60000000", self, 60 * time.Second, false},
		{"60000000", strconv.Itoa(os.Getpid() + 1), 0, false}, // another process's watchdog
		{"1500", self, 1500 * time.Microsecond, false},
		{"0", "", 0, true},
		{"-5", "", 0, true},
		{"60s", "", 0, true},
		{"60000000", "main", 0, true},
	} {
		t.Setenv("WATCHDOG_USEC", tc.usec)
		t.Setenv("WATCHDOG_PID", tc.pid)
		got, err := WatchdogInterval()
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: got %v, %v; want %v, error %v", tc.usec, tc.pid, got, err, tc.want, tc.wantErr)
		}
	}
}

// KeepAlive pings while alive says so, is silent while it does not, and
// stops with its context.
func TestKeepAlive(t *testing.T) {
	conn := listen(t, filepath.Join(t.TempDir(), "notify.sock"))
	t.Setenv("WATCHDOG_USEC", "100000") // 100 ms: pings every 50 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	interval, err := WatchdogInterval()
	if err != nil {
		t.Fatal(err)
	}
	var alive atomic.Bool
	var notAlive atomic.Int64 // checks that answered false
	alive.Store(true)
	check := func() bool {
		a := alive.Load()
		if !a {
			notAlive.Add(1)
		}
		return a
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		New().KeepAlive(ctx, interval, check, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()

	start := time.Now()
	for range 3 {
		if got := receive(t, conn, 5*time.Second); got != "WATCHDOG=1" {
			t.Fatalf("received %q, want WATCHDOG=1", got)
		}
	}
	if elapsed := time.Since(start); elapsed < 3*interval/2-5*time.Millisecond {
		t.Errorf("3 pings in %v: faster than every interval/2 (%v)", elapsed, interval/2)
	}

	alive.Store(false)
	// Checks and pings take turns in one goroutine: once a check has said
	// not alive, every ping of an earlier check is in the socket. Drain
	// those, then let three more checks pass with nothing sent; counted,
	// not timed, so a loaded machine cannot make a late ping look wrong.
	waitChecks := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); notAlive.Load() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d checks of alive within 30s, want %d", notAlive.Load(), n)
			}
		}
	}
	waitChecks(1)
	for {
		if _, err := tryReceive(conn, time.Millisecond); err != nil {
			break
		}
	}
	waitChecks(notAlive.Load() + 3)
	if msg, err := tryReceive(conn, time.Millisecond); err == nil {
		t.Fatalf("received %q while not alive", msg)
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}

	alive.Store(true)
	if got := receive(t, conn, 5*time.Second); got != "WATCHDOG=1" {
		t.Fatalf("after alive again: received %q, want WATCHDOG=1", got)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("KeepAlive did not return after its context ended")
	}
}

// TestNotifyReloading: RELOADING=1 carries MONOTONIC_USEC, the monotonic
// clock when it was sent, as systemd's Type=notify-reload asks.
func TestNotifyReloading(t *testing.T) {
	conn := listen(t, filepath.Join(t.TempDir(), "notify.sock"))
	n := New()
	before, ok := monotonicUsec()
	if !ok {
		t.Fatal("no monotonic clock")
	}
	if err := n.Reloading(); err != nil {
		t.Fatal(err)
	}
	after, _ := monotonicUsec()
	got := receive(t, conn, 5*time.Second)
	usecText, found := strings.CutPrefix(got, "RELOADING=1\nMONOTONIC_USEC=")
	usec, err := strconv.ParseUint(usecText, 10, 64)
	if !found || err != nil || usec < before || usec > after {
		t.Fatalf("received %q, want RELOADING=1 and MONOTONIC_USEC from %d to %d", got, before, after)
	}
}
