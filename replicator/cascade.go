package replicator

import (
	"context"
	"time"

	"github.com/binlog2ch/binlog2ch/cascade"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Foreign-key cascades, wired: package cascade keeps the keys, plans the
// cascades, derives their rows in ClickHouse through the sink and holds
// runs of deletes; the router hands it the stream's rows, commits and
// statements, and flushes writers for it. See docs/replication.md.

// loadForeignKeys reads the keys at start: information_schema's, with the
// checkpoint's over them (those of its position) when it has them.
func (r *Replicator) loadForeignKeys(ctx context.Context, from *state.Checkpoint) (*cascade.Keys, error) {
	keys, err := cascade.LoadKeys(ctx, r.my)
	if err != nil {
		return nil, err
	}
	keys.InlineReferences, keys.IndexNamesKeys = r.server.ForeignKeyNaming()
	if from != nil && from.ForeignKeys != nil {
		now := keys.Clone()
		keys.Restore(from.ForeignKeys)
		if !now.Equal(keys) {
			r.log.Info("foreign keys: using those of the checkpoint's position; the binlog from there changes them into information_schema's")
		}
	}
	return keys, nil
}

// reportForeignKeys logs the cascading keys among the replicated tables,
// and warns about what cannot be derived.
func (r *Replicator) reportForeignKeys(keys *cascade.Keys) {
	cascade.Report(r.log, r.my, keys, r.replicates, r.server.NativeForeignKeys, r.cfg.ClickHouse.Cluster != "")
}

// followCascades has the router's events go through the cascades of keys.
func (s *router) followCascades(keys *cascade.Keys) {
	r := s.r
	s.cascades = cascade.NewFollower(cascade.Options{
		Keys: keys, Replicates: r.replicates, Flusher: cascadeFlusher{s}, Runner: r.cascadeRunner, MySQL: r.my, Log: r.log,
		SnapshotEndVersion: r.snapshotEndVersion, Recopy: recopy,
		BeforeRun: func(parent schema.TableName) {
			if hook := r.hooks.beforeCascade; hook != nil {
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
			if hook := r.hooks.afterCascade; hook != nil {
				hook(parent)
			}
		},
	})
}

// cascadeFlusher is the router as the cascades see it.
type cascadeFlusher struct{ s *router }

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
