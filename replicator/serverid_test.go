package replicator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestSameServerID: another replica registers with the daemon's
// mysql.server_id and, as a second daemon would, registers again each
// time the server drops it for the daemon's reconnect. MariaDB drops the
// older connection each time; the daemon stops after
// source.SameServerIDKicks of them in a row with an error naming
// mysql.server_id, and the other replica's connection then stays.
func TestSameServerID(t *testing.T) {
	h := newHarness(t, 1, "")
	run := h.start()
	h.waitCaughtUp(run, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The other replica: the daemon's server id, from the current position.
	other := binlog.Config{Addr: h.srv.MySQL.Addr(), User: h.srv.MySQL.User, Password: h.srv.MySQL.Password, ServerID: h.cfg.MySQL.ServerID,
		HeartbeatPeriod: 100 * time.Millisecond, StallTimeout: 30 * time.Second, Flavor: run.r.server.Flavor, EventCache: 16,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	pos, err := run.r.currentPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dial := func() *binlog.Conn {
		c, err := binlog.Dial(ctx, other, binlog.Request{File: pos.File, Pos: pos.Pos})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	conn := dial()
	defer func() { conn.Close() }()
	events := make(chan error, 1)
	got := make(chan struct{}, 1)
	read := func(c *binlog.Conn) {
		for {
			if _, err := c.GetEvent(ctx); err != nil {
				events <- err
				return
			}
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}
	go read(conn)
	var stopped error
	dropped := 0
	for stopped == nil {
		select {
		case stopped = <-run.done:
			run.cancel = nil
			if stopped == nil {
				t.Fatalf("the daemon stopped without an error; logs:\n%s", tail(run.logs.String(), 4000))
			}
		case err := <-events:
			// The daemon reconnected: the server dropped this one.
			if !binlog.SameServerID(err) {
				t.Fatalf("the other replica's connection failed: %v", err)
			}
			dropped++
			conn.Close()
			conn = dial()
			go read(conn)
		case <-ctx.Done():
			t.Fatalf("the daemon did not stop; logs:\n%s", tail(run.logs.String(), 4000))
		}
	}
	var idErr *source.ServerIDError
	if !errors.As(stopped, &idErr) || idErr.Kicks != source.SameServerIDKicks {
		t.Fatalf("stopped with %v; want a source.ServerIDError after %d drops", stopped, source.SameServerIDKicks)
	}
	wantError(t, stopped, "mysql.server_id 4242", "another replica registered with the same server id", "give this daemon a mysql.server_id")
	// Each of the daemon's connections but the first dropped the other's.
	if dropped != source.SameServerIDKicks-1 {
		t.Errorf("the daemon dropped the other replica %d times, want %d", dropped, source.SameServerIDKicks-1)
	}
	if n := strings.Count(run.logs.String(), "dropped_for_the_same_server_id="); n != source.SameServerIDKicks-1 {
		t.Errorf("%d WARNs of a drop for the same server id, want %d; logs:\n%s", n, source.SameServerIDKicks-1, tail(run.logs.String(), 4000))
	}
	// The daemon has gone: the other replica reads on (heartbeats, the
	// statement), never dropped again.
	h.exec("CREATE TABLE " + h.dbs[0] + ".after_stop (id INT PRIMARY KEY)")
	for i := 0; i < 20; i++ {
		select {
		case <-got:
		case err := <-events:
			t.Fatalf("the other replica's connection after the daemon stopped: %v", err)
		case <-ctx.Done():
			t.Fatal("the other replica reads nothing after the daemon stopped")
		}
	}
}
