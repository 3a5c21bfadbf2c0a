package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// exitNotRunning is `status`'s exit code when no daemon answered (as
// systemctl status exits 3 for a unit that is not active).
const exitNotRunning = 3

// statusTimeout bounds the request to the daemon.
const statusTimeout = 5 * time.Second

// statusCmd prints the running daemon's status from its /status.json or,
// when none answers, what the checkpoint says.
func statusCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "status", "-config FILE [-json] [-addr HOST:PORT] [-sort lag|rate|rows|queued|errors|name] [-filter TEXT] [-limit N]")
	var cf configFlags
	cf.register(fs)
	_ = fs.Set("log-level", "warn") // the status is the output; the flag still overrides
	asJSON := fs.Bool("json", false, "print the status as JSON (the daemon's /status.json)")
	addr := fs.String("addr", "", "the daemon's metrics.listen address (default: the config's, 0.0.0.0 read as 127.0.0.1)")
	var q status.Query
	fs.StringVar(&q.Sort, "sort", status.SortLag, "order of the tables: "+strings.Join(status.Sorts, ", "))
	fs.StringVar(&q.Filter, "filter", "", "only tables whose db.table contains this text (case-insensitive)")
	fs.IntVar(&q.Limit, "limit", 20, "tables to show, 0 for all")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	log, cfg, code := cf.load(e, "status")
	if code != exitOK {
		return code
	}
	st, err := daemonStatus(ctx, cfg, *addr, q)
	code = exitOK
	if err != nil {
		code = exitNotRunning
		if st, err = offlineStatus(ctx, cfg, log, err.Error()); err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch status: %v\n", err)
			return exitError
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(&st)
	} else {
		err = status.WriteText(e.stdout, &st)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch status: %v\n", err)
		return exitError
	}
	return code
}

// statusAddr is where a daemon run with cfg answers: a wildcard host is
// reached on loopback.
func statusAddr(cfg *config.Config, addr string) (string, error) {
	if addr == "" {
		addr = cfg.Metrics.Listen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("metrics address %q: %w", addr, err)
	}
	if port == "0" {
		return "", fmt.Errorf("metrics.listen %s takes a random port, which only the daemon's log tells (\"serving /metrics\"); pass it with -addr", addr)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}

// daemonStatus asks the daemon for its status; an error says why it could
// not, in words for the "not running" line.
func daemonStatus(ctx context.Context, cfg *config.Config, addr string, q status.Query) (status.Status, error) {
	var st status.Status
	hostPort, err := statusAddr(cfg, addr)
	if err != nil {
		return st, err
	}
	url := "http://" + hostPort + status.JSONPath + "?" + q.Values()
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return st, fmt.Errorf("nothing listens on %s (metrics.listen)", hostPort)
	case errors.Is(err, context.DeadlineExceeded):
		return st, fmt.Errorf("%s did not answer within %s", hostPort, statusTimeout)
	case err != nil:
		return st, fmt.Errorf("%s: %w", hostPort, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s answers %s to %s: not binlog2ch, or one without the status page", hostPort, resp.Status, status.JSONPath)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil || !st.Running {
		return st, fmt.Errorf("%s answers %s with something that is not binlog2ch's status (%v)", hostPort, status.JSONPath, err)
	}
	return st, nil
}

// offlineStatus is what the checkpoint (its position and copy state) and
// the initial snapshot's state file say, read through the configured
// store.
func offlineStatus(ctx context.Context, cfg *config.Config, log *slog.Logger, why string) (status.Status, error) {
	var store state.Store
	if cfg.State.Store == config.StoreClickHouse {
		ch, err := chconn.Open(ctx, cfg, log)
		if err != nil {
			return status.Status{}, fmt.Errorf("the daemon is not running (%s), and the checkpoint cannot be read: %w", why, err)
		}
		defer ch.Close()
		store = state.NewStore(cfg, ch, 0, nil, nil)
		why += "; the checkpoint is shared in ClickHouse: a daemon on another host may be running"
	} else {
		store = state.NewStore(cfg, nil, 0, nil, nil)
	}
	cp, err := store.Load(ctx)
	if err != nil {
		return status.Status{}, fmt.Errorf("the daemon is not running (%s), and the checkpoint cannot be read: %w", why, err)
	}
	snap, err := snapshot.Load(cfg.StateDir, snapshot.InitialFile)
	if err != nil {
		return status.Status{}, err
	}
	var tables []status.Table
	if snap != nil && !snap.Complete {
		for _, name := range snap.List {
			p := status.Progress{State: snapshot.StateWaiting}
			if prog := snap.Tables[name.String()]; prog != nil {
				p.Copied = prog.Rows
				switch {
				case prog.Complete:
					p.State = snapshot.StateDone
				case prog.Rows > 0 || prog.ScanStarted:
					p.State = snapshot.StateInterrupted
				}
			}
			tables = append(tables, status.Table{Database: name.Database, Table: name.Table, Snapshot: &p})
		}
	}
	return status.Offline(why, status.CheckpointOf(cp, store.String()), tables, snapshot.CheckpointCopies(cp), time.Now()), nil
}
