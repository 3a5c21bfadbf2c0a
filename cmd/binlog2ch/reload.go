package main

import (
	"context"
	"log/slog"
	"os"
	"sync"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/sdnotify"
)

// reloadable is what a reload asks of the daemon.
type reloadable interface {
	Reload(tables config.TablesConfig) error
}

// reloadOnHangup reloads the config file on each SIGHUP once the daemon
// is ready (a SIGHUP before waits for it): the file is read as at start,
// config.CheckReload allows only a new table selection, and the daemon
// takes it (Reload). A refused reload leaves the daemon as it was, with
// an ERROR saying why and what to do. systemd hears RELOADING=1, then
// READY=1 when the reload is over, applied or not. Call the returned
// function once Run has returned.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, ready <-chan struct{}, file string, cfg *config.Config, r reloadable, log *slog.Logger) (done func()) {
	ctx, cancel := context.WithCancel(ctx)
	n := sdnotify.New()
	current := cfg
	reload := func() {
		warn := func(err error) {
			if err != nil {
				log.Warn("systemd notification failed", "error", err)
			}
		}
		warn(n.Reloading())
		defer func() { warn(n.Ready()) }()
		log.Info("SIGHUP: reloading the config", "file", file)
		next, err := config.Load(file)
		if err != nil {
			log.Error("config reload refused: the file does not load; binlog2ch goes on with the config it has", "file", file, "error", err,
				"to_do", "fix the file and reload again (systemctl reload binlog2ch, or kill -HUP the daemon)")
			return
		}
		if err := config.CheckReload(current, next); err != nil {
			log.Error("config reload refused; binlog2ch goes on with the config it has", "file", file, "error", err)
			return
		}
		changed := config.ChangedKeys(current, next)
		if len(changed) == 0 {
			log.Info("config reloaded: nothing changed", "file", file)
			return
		}
		if err := r.Reload(next.Tables); err != nil {
			log.Error("config reload refused by the daemon; binlog2ch goes on with the table selection it has", "file", file, "error", err,
				"to_do", "restart binlog2ch to apply the new selection (systemctl restart binlog2ch)")
			return
		}
		log.Info("config reloaded", "file", file, "changed", changed,
			"tables_include", next.Tables.Include, "tables_exclude", next.Tables.Exclude,
			"was_include", current.Tables.Include, "was_exclude", current.Tables.Exclude)
		current = next
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pending := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-ready:
				ready = nil
				if pending {
					reload()
				}
			case <-hup:
				if ready != nil {
					if !pending {
						log.Info("SIGHUP: the config is reloaded once the daemon has started")
					}
					pending = true
					continue
				}
				reload()
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
