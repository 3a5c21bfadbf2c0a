package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/control"
	"github.com/binlog2ch/binlog2ch/replicator"
	"github.com/binlog2ch/binlog2ch/state"
)

// resyncCmd copies tables again online: the running daemon does it when
// one holds state_dir (asked over its control socket), else this process
// does, with no daemon (replicator.ResyncOffline).
func resyncCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "resync", "-config FILE -tables db.t1[,db.t2...]")
	var cf configFlags
	cf.register(fs)
	tablesFlag := fs.String("tables", "", "comma-separated db.table list to copy again (required): each into a shadow table, swapped in while replication goes on")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	if *tablesFlag == "" {
		fmt.Fprintln(e.stderr, "binlog2ch resync: -tables db.t1[,db.t2...] is required")
		return exitUsage
	}
	names, err := control.ParseTableNames(strings.Split(*tablesFlag, ","))
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch resync: -tables: %v\n", err)
		return exitUsage
	}
	logger, cfg, code := cf.load(e, "resync")
	if code != exitOK {
		return code
	}
	tables := make([]string, len(names))
	for i, n := range names {
		if !cfg.Replicates(n.Database, n.Table) {
			fmt.Fprintf(e.stderr, "binlog2ch resync: -tables: %s is not selected by tables.include/exclude in %s: binlog2ch copies only the tables it replicates\n", n, cf.config)
			return exitUsage
		}
		tables[i] = n.String()
	}
	list := strings.Join(tables, ", ")

	lock, err := state.LockDir(cfg.StateDir, "resync")
	var held *state.HeldError
	switch {
	case errors.As(err, &held) && held.Command == "run":
		resp, err := control.Send(ctx, cfg.StateDir, control.Request{Op: "resync", Tables: tables})
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch resync: %s holds state_dir %s but did not answer on its control socket: %v. It serves it once it has started (connected to both servers, holding the lease if there is one); try again then, or see its log\n", held.Holder(), held.Dir, err)
			return exitError
		}
		if !resp.OK {
			fmt.Fprintf(e.stderr, "binlog2ch resync: the running %s refused: %s\n", held.Holder(), resp.Error)
			return exitError
		}
		fmt.Fprintf(e.stdout, "the running %s: %s\n`binlog2ch status -config %s` shows the copy's progress\n", held.Holder(), resp.Message, cf.config)
		return exitOK
	case held != nil:
		fmt.Fprintf(e.stderr, "binlog2ch resync: %s is working in state_dir %s; wait for it to finish (or stop it), then run this again\n", held.Holder(), held.Dir)
		return exitError
	case err != nil:
		fmt.Fprintf(e.stderr, "binlog2ch resync: %v\n", err)
		return exitError
	}
	defer lock.Release()
	if code := checkNoLeaseHolder(ctx, e, cfg, logger); code != exitOK {
		return code
	}
	fmt.Fprintf(e.stdout, "no binlog2ch run holds state_dir %s: copying %s here, with no daemon (each into a shadow table, swapped in; the checkpoint stays where it is)\n", cfg.StateDir, list)
	if err := replicator.ResyncOffline(ctx, cfg, logger, names); err != nil {
		logger.Error("resync failed", "tables", tables, "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch resync: %v\n", err)
		return exitError
	}
	fmt.Fprintf(e.stdout, "copied again: %s\n", list)
	return exitOK
}

// checkNoLeaseHolder refuses an offline resync while a daemon elsewhere
// holds the lease (a shared checkpoint: it replicates on another host,
// whose control channel is local to it). The lease is let go again at
// once, for ResyncOffline to take as it needs.
func checkNoLeaseHolder(ctx context.Context, e *env, cfg *config.Config, log *slog.Logger) int {
	if cfg.State.Lease != config.LeaseZooKeeper {
		return exitOK
	}
	l, err := state.TryAcquire(ctx, cfg, slog.New(slog.DiscardHandler)) // a probe: its "holding the lease" would mislead
	var held *state.LeaseHeldError
	switch {
	case errors.As(err, &held):
		fmt.Fprintf(e.stderr, "binlog2ch resync: no daemon runs on this state_dir, but %v: run binlog2ch resync on that host (the control channel is local to it)\n", err)
		return exitError
	case err != nil:
		log.Error("resync: cannot check the lease", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch resync: cannot check the ZooKeeper lease: %v\n", err)
		return exitError
	}
	l.Release()
	return exitOK
}
