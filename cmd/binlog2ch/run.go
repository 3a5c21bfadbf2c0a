package main

import (
	"context"
	"fmt"

	"github.com/binlog2ch/binlog2ch/replicator"
)

// runCmd is the daemon: it follows the binlog until SIGTERM/SIGINT, then
// flushes, saves the checkpoint and exits 0.
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
	r, err := replicator.New(ctx, cfg, logger)
	if err != nil {
		logger.Error("cannot start", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch run: %v\n", err)
		return exitError
	}
	defer r.Close()
	r.SetVersion(buildVersion())
	systemdDone := notifySystemd(ctx, r, logger)
	err = r.Run(ctx)
	systemdDone()
	if err != nil {
		logger.Error("replication stopped", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch run: %v\n", err)
		return exitError
	}
	return exitOK
}
