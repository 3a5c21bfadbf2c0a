package router

import (
	"context"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
)

// followCascades has the router's events go through the cascades of keys.
func (s *Router) followCascades(keys *cascade.Keys) {
	r := s
	// The initial snapshot's end: this process's, or the checkpoint's
	// (a restart between the copy and the cascades of its time).
	copyEnd := r.snapshotEndVersion
	var windows []cascade.CopyWindow
	if fk := r.opt.From.ForeignKeys; fk != nil {
		copyEnd = max(copyEnd, fk.CopyEnd)
		windows = fk.CopyWindows
	}
	s.cascades = cascade.NewFollower(cascade.Options{
		Keys: keys, Replicates: r.replicates, Flusher: cascadeFlusher{s}, Runner: r.cascadeRunner, MySQL: r.my, Log: r.log,
		SnapshotEndVersion: copyEnd, CopyWindows: windows, Recopy: Recopy, UnderWay: s.noteCascade,
		KeysChanged: func() error {
			if s.stream == nil {
				return nil
			}
			return s.stream.ApplySelection()
		},
		BeforeRun: func(parent schema.TableName) {
			if hook := r.hooks.BeforeCascade; hook != nil {
				hook(parent)
			}
		},
		Derived: func(parent schema.TableName, res cascade.Result, took time.Duration) {
			for t, counts := range res.Rows {
				for action, n := range counts {
					r.m.CascadedRows.WithLabelValues(t.Database, t.Table, action).Add(float64(n))
				}
			}
			r.m.CascadeDuration.Observe(took.Seconds())
			s.cascadedIntoCopy(parent)
			if hook := r.hooks.AfterCascade; hook != nil {
				hook(parent)
			}
		},
	})
	if s.stream != nil {
		// The stream also reads the tables not replicated whose deletes
		// and updates cascade into replicated ones: their events carry
		// the parent's values the cascades are derived from.
		s.stream.Selected = func(t schema.TableName) bool { return s.sel.Replicates(t) || s.cascades.ReadsFor(t) }
	}
}

// cascadeFlusher is the router as the cascades see it.
type cascadeFlusher struct{ s *Router }

// FlushTables has the writers of the tables with rows pending flush them
// (a sink.Message's FlushDone), and waits for them all.
func (f cascadeFlusher) FlushTables(ctx context.Context, tables []schema.TableName, at source.Position) error {
	s := f.s
	var waits []chan struct{}
	for _, t := range tables {
		if rt := s.writers[t]; rt == nil || rt.w.Flushed() >= rt.dispatched {
			continue // nothing pending
		}
		done := make(chan struct{})
		if err := s.dispatch(ctx, t, sink.Message{FlushDone: done, At: at}); err != nil {
			return err
		}
		waits = append(waits, done)
	}
	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f cascadeFlusher) Send(ctx context.Context, e source.Rows) error { return f.s.send(ctx, e) }

func (f cascadeFlusher) Commit(c source.Commit) { f.s.commit(c) }

// cascadedIntoCopy starts over the running online copy when a cascade of
// parent reached a table it copies: the cascade was derived from that
// table's rows in ClickHouse, which lack what the copy has not swapped in
// yet, and the copy may have read the rows before the cascade.
func (s *Router) cascadedIntoCopy(parent schema.TableName) {
	for _, t := range s.cascades.Descendants(parent) {
		if s.copies.inBatch(t) {
			s.restartBatch(t, "a foreign-key cascade from "+parent.String()+" reached it during its copy")
			return
		}
	}
}

// noteCascade tells the status page of the cascade under way (nil: none).
func (s *Router) noteCascade(u *cascade.UnderWay) {
	if u == nil {
		s.m.Cascading.Store(nil)
		return
	}
	s.m.Cascading.Store(&metrics.Cascade{Parent: u.Parent.String(), Since: u.Since, Holding: u.Holding})
}
