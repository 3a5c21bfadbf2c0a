package state

import "github.com/binlog2ch/binlog2ch/schema"

// PartitionState is the tables' partition layouts as of the checkpoint's
// position (replication.on_partition_maintenance: apply), so a restart
// deletes a TRUNCATEd or DROPped partition's rows by the bounds of the
// statement's time, not by information_schema's of now.
type PartitionState struct {
	// Covers are the selections whose tables the state holds for certain:
	// a table every one of them selects that Layouts and Unknown do not
	// list was not partitioned. None: only the listed tables are known.
	Covers []Selection `json:"covers,omitempty"`
	// Layouts are the partitioned tables' layouts.
	Layouts []PartitionLayout `json:"layouts,omitempty"`
	// None are tables not partitioned that Covers does not cover.
	None []schema.TableName `json:"none,omitempty"`
	// Unknown are tables whose layout was not known, with why; Table ""
	// names a table of any database.
	Unknown []UnknownLayout `json:"unknown,omitempty"`
}

// PartitionLayout is one table's partitioning as information_schema
// shows it (catalog.Partitions).
type PartitionLayout struct {
	Table  schema.TableName `json:"table"`
	Method string           `json:"method"`
	Expr   string           `json:"expr,omitempty"`
	Parts  []PartitionBound `json:"parts,omitempty"`
}

// PartitionBound is a partition's name and VALUES text.
type PartitionBound struct {
	Name string `json:"name"`
	Desc string `json:"desc,omitempty"`
}

// UnknownLayout is a table whose layout was not known, and why.
type UnknownLayout struct {
	Table schema.TableName `json:"table"`
	Why   string           `json:"why"`
}
