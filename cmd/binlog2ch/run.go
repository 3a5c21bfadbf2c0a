package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/binlog2ch/binlog2ch/replicator"
	"github.com/binlog2ch/binlog2ch/source"
)

// runCmd is the daemon: it follows the binlog until SIGTERM/SIGINT, then
// flushes, saves the checkpoint and exits 0. SIGHUP reloads the config
// (reload.go).
func runCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "run", "-config FILE")
	var cf configFlags
	cf.register(fs)
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	logger, cfg, code := cf.load(e, "run")
	if code != exitOK {
		return code
	}
	lock, code := lockStateDir(e, cfg, "run", "")
	if code != exitOK {
		return code
	}
	defer lock.Release()
	runGC()
	// Caught from the start and never let go: SIGHUP's default action
	// would kill the daemon without its flush, also during the shutdown.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	r, err := replicator.New(ctx, cfg, logger)
	if err != nil {
		logger.Error("cannot start", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch run: %v\n", err)
		return exitError
	}
	defer r.Close()
	r.SetVersion(buildVersion())
	started := &startHook{supervised: r, ready: make(chan struct{})}
	systemdDone := notifySystemd(ctx, started, logger)
	r.OnReady(started.fire)
	reloadDone := reloadOnHangup(ctx, hup, started.ready, cf.config, cfg, r, logger)
	err = r.Run(ctx)
	reloadDone()
	systemdDone()
	if err != nil {
		logger.Error("replication stopped", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch run: %v\n", err)
		// A restart would knock the other daemon off again: only the
		// config can fix it (systemd's unit does not restart on 2).
		if errors.As(err, new(*source.ServerIDError)) {
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// startHook shares the replicator's one OnReady between the systemd
// notifications and the reloads, which wait for the start.
type startHook struct {
	supervised
	onReady func()
	ready   chan struct{}
}

func (h *startHook) OnReady(f func()) { h.onReady = f }

func (h *startHook) fire() {
	if h.onReady != nil {
		h.onReady()
	}
	close(h.ready)
}

// runGC sets the daemon's garbage collector pace (replicator.GCPercent)
// unless GOGC is set.
func runGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(replicator.GCPercent)
	}
}
