package replicator

import (
	"context"

	"github.com/binlog2ch/binlog2ch/cascade"
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
	cascade.Report(r.log, keys, r.sel.Replicates, r.server.NativeForeignKeys, r.cfg.ClickHouse.Cluster != "")
}
