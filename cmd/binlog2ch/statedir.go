package main

import (
	"errors"
	"fmt"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/state"
)

// lockStateDir takes state_dir's lock for cmd (run, fullsync), or prints
// who holds it and what to do instead. resyncHint is the resync command
// line that does what a refused fullsync meant.
func lockStateDir(e *env, cfg *config.Config, cmd, resyncHint string) (*state.DirLock, int) {
	lock, err := state.LockDir(cfg.StateDir, cmd)
	if err == nil {
		return lock, exitOK
	}
	var held *state.HeldError
	if !errors.As(err, &held) {
		fmt.Fprintf(e.stderr, "binlog2ch %s: %v\n", cmd, err)
		return nil, exitError
	}
	switch {
	case held.Command == "run" && cmd == "run":
		fmt.Fprintf(e.stderr, "binlog2ch run: another binlog2ch run (pid %s) holds state_dir %s: one daemon per state_dir. Stop it first (systemctl stop binlog2ch), or give this one a state_dir of its own\n", pidText(held), held.Dir)
	case held.Command == "run":
		fmt.Fprintf(e.stderr, "binlog2ch %s: a running binlog2ch (pid %s) holds state_dir %s. To copy tables again while it runs, use `%s`; or stop it first (systemctl stop binlog2ch)\n", cmd, pidText(held), held.Dir, resyncHint)
	default:
		fmt.Fprintf(e.stderr, "binlog2ch %s: %s is working in state_dir %s; wait for it to finish (or stop it), then run this again\n", cmd, held.Holder(), held.Dir)
	}
	return nil, exitError
}

func pidText(h *state.HeldError) string {
	if h.PID == 0 {
		return "unknown"
	}
	return fmt.Sprint(h.PID)
}
