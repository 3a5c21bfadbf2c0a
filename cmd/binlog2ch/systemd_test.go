package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// fakeNotifySocket opens a unixgram socket like systemd's, points
// NOTIFY_SOCKET at it and returns the datagrams that arrive.
func fakeNotifySocket(t *testing.T) <-chan string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", name)
	msgs := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}

// expectMessage waits for want, skipping other notifications (status
// lines, watchdog pings); it fails on forbidden before want.
func expectMessage(t *testing.T, msgs <-chan string, want string, forbidden ...string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed before %s", want)
			}
			if m == want {
				return
			}
			for _, f := range forbidden {
				if m == f {
					t.Fatalf("received %s before %s", f, want)
				}
			}
		case <-timeout:
			t.Fatalf("no %s within 60s", want)
		}
	}
}

type fakeReplicator struct {
	onReady func()
	alive   atomic.Bool
}

func (f *fakeReplicator) OnReady(fn func()) { f.onReady = fn }
func (f *fakeReplicator) Alive() bool       { return f.alive.Load() }

// TestNotifySystemd: READY=1 only when the replicator says it is ready,
// watchdog pings while it is alive, STOPPING=1 when the context ends, and
// nothing after done.
func TestNotifySystemd(t *testing.T) {
	msgs := fakeNotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "100000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	r := &fakeReplicator{}
	r.alive.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := notifySystemd(ctx, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if r.onReady == nil {
		t.Fatal("no OnReady callback set")
	}
	expectMessage(t, msgs, "WATCHDOG=1", "READY=1")
	r.onReady()
	expectMessage(t, msgs, "READY=1", "STOPPING=1")
	cancel()
	expectMessage(t, msgs, "STOPPING=1")
	done()
	// Drain, then nothing more may come: the pings stopped with done.
	for {
		select {
		case m := <-msgs:
			if m == "STOPPING=1" {
				t.Fatal("STOPPING=1 sent twice")
			}
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	select {
	case m := <-msgs:
		t.Fatalf("received %q after done", m)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestNotifySystemdOutsideSystemd: without NOTIFY_SOCKET nothing is set up.
func TestNotifySystemdOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	r := &fakeReplicator{}
	notifySystemd(context.Background(), r, slog.New(slog.NewTextHandler(io.Discard, nil)))()
	if r.onReady != nil {
		t.Error("OnReady callback set outside systemd")
	}
}

// TestRunNotifiesSystemd runs `binlog2ch run` against the test servers
// with a fake NOTIFY_SOCKET, as systemd starts it with Type=notify and
// WatchdogSec: READY=1 after it has connected and loaded the checkpoint
// (saved by then), watchdog pings, and STOPPING=1 on SIGTERM before a clean
// exit.
func TestRunNotifiesSystemd(t *testing.T) {
	srv := servertest.Need(t)
	msgs := fakeNotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "400000") // pings every 200 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	db := servertest.Name("b2c_sdnotify")
	cfg := writeConfig(t, srv, db, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- dispatch(ctx, &env{stdout: &out, stderr: &errOut}, []string{"run", "-config", cfg, "-log-format", "text"})
	}()
	expectMessage(t, msgs, "READY=1", "STOPPING=1")
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "state", "checkpoint.json")); err != nil {
		t.Errorf("READY=1 before the checkpoint exists: %v", err)
	}
	expectMessage(t, msgs, "WATCHDOG=1", "STOPPING=1")
	expectMessage(t, msgs, "WATCHDOG=1", "STOPPING=1")
	cancel()
	expectMessage(t, msgs, "STOPPING=1")
	waitStopped(t, done, &errOut)
}
