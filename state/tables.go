package state

import (
	"encoding/json"
	"time"
)

// The per-table copy state (as Vitess keeps _vt.copy_state): saved with
// every checkpoint, in whichever store holds it, so a restart knows which
// tables ClickHouse holds whole. A table the Selection selects and Tables
// does not list is streaming: everything of it up to the checkpoint is in
// ClickHouse. A listed one is being copied, or failed.

// Selection is tables.include and exclude as the checkpoint's position
// was replicated with: a table the config selects now and this did not
// entered the set while binlog2ch was stopped, and is copied.
type Selection struct {
	Include []string `json:"include"`
	Exclude []string `json:"exclude,omitempty"`
}

// The states of a listed table.
const (
	// CopyCopying: its rows are being copied (into a shadow table, or
	// into its own when ClickHouse had none); the stream applies its
	// events meanwhile.
	CopyCopying = "copying"
	// CopySwapping: the copy is complete and the shadow table is being
	// swapped in; a restart finishes the swap.
	CopySwapping = "swapping"
	// CopyFailed: the table cannot be applied; its events are skipped
	// until a resync (or the next start) copies it again.
	CopyFailed = "failed"
)

// Why a table is copied while the daemon runs.
const (
	ReasonSelected      = "selected"        // tables.include/exclude now select it
	ReasonRenamed       = "renamed"         // RENAME TABLE into the set
	ReasonAddColumn     = "add_column"      // ADD COLUMN with a value for existing rows the binlog lacks
	ReasonStatementDML  = "statement_dml"   // rows changed by a statement (replication.on_statement_dml: recopy)
	ReasonPartition     = "partition"       // partition maintenance (replication.on_partition_maintenance: recopy)
	ReasonResync        = "resync"          // binlog2ch resync
	ReasonFailed        = "failed"          // a failed table copied again
	ReasonMigration     = "migration"       // an online schema migration's cut-over from a table not followed
	ReasonServerChanged = "server_changed"  // a copy begun on another server starts over
	ReasonDefinitionDDL = "ddl_during_copy" // DDL of the table during its copy starts it over
)

// TableCopy is a table ClickHouse does not hold whole.
type TableCopy struct {
	State  string    `json:"state"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	// Error is why a failed table failed.
	Error string `json:"error,omitempty"`
	// Progress is the copy's progress as the copier keeps it
	// (snapshot.State): its position, and the key ranges ClickHouse
	// confirmed.
	Progress json.RawMessage `json:"progress,omitempty"`
}
