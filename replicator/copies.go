package replicator

import (
	"context"
	"errors"
	"log/slog"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Resync asks the running daemon to copy tables again online: each is
// copied into a shadow table while the stream goes on, and swapped in.
// It returns once the copies are queued.
func (r *Replicator) Resync(ctx context.Context, tables []schema.TableName) error {
	return errors.New("resync: online copies are not built yet")
}

// Reload replaces the table selection while the daemon runs (a SIGHUP's
// config, which config.CheckReload allowed): tables it newly selects are
// copied online, tables it no longer selects stop being replicated.
func (r *Replicator) Reload(tables config.TablesConfig) error {
	return errors.New("reload: online copies are not built yet")
}

// ResyncOffline copies tables again with no daemon running: into shadow
// tables, swapped in; the checkpoint stays where it is.
func ResyncOffline(ctx context.Context, cfg *config.Config, log *slog.Logger, tables []schema.TableName) error {
	return errors.New("resync: online copies are not built yet")
}
