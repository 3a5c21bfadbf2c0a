package replicator

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/retention"
)

// retentionEvery is how often the source's binlog retention is read: a
// few queries and, once per binlog file, a dump of its first events; never
// on the stream's path.
const retentionEvery = 30 * time.Second

// watchRetention estimates, now and every retentionEvery until ctx ends,
// when the source may purge the binlog file holding the saved checkpoint
// (package retention): binlog2ch_source_binlog_retention_headroom_seconds,
// the status page's line, and a WARN each time the headroom falls below
// metrics.binlog_retention_margin. It returns a stop that waits for it.
func (r *Replicator) watchRetention(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	m := r.cfg.MySQL
	w := &retention.Watcher{DB: r.my, Binlog: binlog.Config{Addr: m.Addr, User: m.User, Password: m.Password.Reveal(), TLS: r.cfg.MySQLTLS(),
		StallTimeout: m.StallTimeout, Flavor: r.server.Flavor, Log: r.log}}
	margin := r.cfg.Metrics.BinlogRetentionMargin
	r.m.RetentionMargin.Set(margin.Seconds())
	log := r.log.With("component", "retention")
	go func() {
		defer close(done)
		below, failing := false, false
		every := retentionEvery
		if r.hooks.retentionEvery > 0 {
			every = r.hooks.retentionEvery
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if pos := r.live.SavedPos.Load(); pos != nil {
				now := time.Now()
				est, s, err := w.Check(ctx, pos.File, now)
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					r.m.RetentionAt.Store(math.Float64bits(math.NaN()))
					r.retention.Store(nil)
					if !failing {
						log.Warn("cannot tell when the source may purge the checkpoint's binlog file; binlog2ch_source_binlog_retention_headroom_seconds reads NaN until it can", "error", err)
					}
					failing = true
				default:
					if failing {
						log.Info("the source's binlog retention is read again")
					}
					failing = false
					r.retention.Store(&est)
					r.m.RetentionAt.Store(math.Float64bits(purgeAt(est)))
					headroom := est.Headroom(now)
					if headroom < margin.Seconds() && !below {
						warnRetention(log, est, s, headroom, margin)
					} else if headroom >= margin.Seconds() && below {
						log.Info("the headroom before the source may purge the checkpoint's binlog file is above metrics.binlog_retention_margin again", "file", est.File,
							"headroom", time.Duration(headroom*float64(time.Second)).Round(time.Second).String(), "margin", margin.String())
					}
					below = headroom < margin.Seconds()
				}
				if r.hooks.retentionChecked != nil {
					r.hooks.retentionChecked()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// purgeAt is an estimate as binlog2ch_source_binlog_retention_headroom_seconds'
// metrics.Metrics.RetentionAt holds it.
func purgeAt(e retention.Estimate) float64 {
	switch {
	case e.Gone:
		return math.Inf(-1)
	case e.Unlimited:
		return math.Inf(1)
	}
	return float64(e.At.UnixNano()) / 1e9
}

func warnRetention(log *slog.Logger, e retention.Estimate, s retention.Settings, headroom float64, margin time.Duration) {
	if e.Gone {
		log.Warn("the source no longer has the binlog file holding the checkpoint (SHOW BINARY LOGS does not list it): the changes in it are lost to replication once binlog2ch has to read it again, and the tables must be copied again",
			"file", e.File)
		return
	}
	why := "by its age: " + e.Setting + " = " + s.Expire.String() + " from when the file was closed"
	if e.Active {
		why = "by its age: " + e.Setting + " = " + s.Expire.String() + " from when the file is closed (it is the one the server writes)"
	}
	if e.By == retention.BySize {
		why = "by size: " + e.Setting + " = " + strconv.FormatUint(s.SizeLimit, 10) + " bytes, at the rate the binlog grows"
	}
	log.Warn("the source may purge the binlog file holding the checkpoint soon, below metrics.binlog_retention_margin: once it is gone and binlog2ch has to read it again (a restart, a reconnect), the changes in it are lost to replication and the tables must be copied again. Find why replication is behind (binlog2ch status), or keep the binlog longer on the server",
		"file", e.File, "headroom", time.Duration(headroom*float64(time.Second)).Round(time.Second).String(), "margin", margin.String(), "purged", why)
}
