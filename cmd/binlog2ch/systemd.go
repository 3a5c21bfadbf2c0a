package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/binlog2ch/binlog2ch/sdnotify"
)

// supervised is what the systemd wiring needs of the replicator.
type supervised interface {
	OnReady(func())
	Alive() bool
}

// notifySystemd tells systemd (Type=notify) how the daemon is doing:
// READY=1 once r has connected and loaded its checkpoint, STOPPING=1 when
// ctx ends (the shutdown flush starts), WATCHDOG=1 while r is alive when
// the unit sets WatchdogSec. Outside systemd it does nothing. Call the
// returned function once r.Run has returned; pings go on until then, so a
// long flush is not taken for a hang.
func notifySystemd(ctx context.Context, r supervised, log *slog.Logger) (done func()) {
	n := sdnotify.New()
	if !n.Enabled() {
		return func() {}
	}
	warn := func(err error) {
		if err != nil {
			log.Warn("systemd notification failed", "error", err)
		}
	}
	interval, err := sdnotify.WatchdogInterval()
	warn(err)
	log.Info("notifying systemd", "watchdog", interval)
	r.OnReady(func() {
		warn(n.Ready())
		warn(n.Status("replicating"))
	})

	var stopping sync.Once
	stop := func() {
		stopping.Do(func() {
			warn(n.Stopping())
			warn(n.Status("stopping: flushing and saving the checkpoint"))
		})
	}
	pingCtx, stopPings := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		n.KeepAlive(pingCtx, interval, r.Alive, log)
	}()
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			stop()
		case <-pingCtx.Done():
		}
	}()
	return func() {
		stop() // also when Run returned on an error rather than a signal
		stopPings()
		wg.Wait()
	}
}
