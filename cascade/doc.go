// Package cascade derives the foreign-key cascades InnoDB applies without
// row events (docs/replication.md, "Foreign-key cascades"): the key model
// kept as of the binlog event being read (keys.go), the plan of the tables
// a parent event cascades to (plan.go), the as-of ClickHouse statements
// that derive the children's rows (sql.go, write.go), their run in
// ClickHouse (run.go), and, for the router, the following of the stream:
// the keys' DDL, a parent event's tables flushed before its cascades are
// derived, runs of deletes held back and derived together (follow.go,
// held.go).
//
// It talks to ClickHouse only through an Executor (the sink's ClickHouse)
// and to the tables' writers only through a Flusher (the router): it must
// not import the sink or the replicator, and never writes a replicated
// table's own rows; those stay with its writer.
package cascade

// How a cascade is derived.
//
// InnoDB deletes, updates and nulls child rows for ON DELETE/UPDATE
// CASCADE and SET NULL inside the engine, and writes no row events for
// them. For a parent rows event that cascades, binlog2ch derives the
// children's rows in ClickHouse itself: each child table gets one
// INSERT ... SELECT that reads the child's rows as they were before the
// event (for each key, the row with the highest _version below the event's
// first version Vs: every earlier change, and nothing the event or later
// ones wrote) and writes the changed rows at the event's last version Ve:
// above every earlier change, below every later one. Deleted children are
// written as tombstones with their values; SET NULL writes the row with
// the key's columns NULL; ON UPDATE CASCADE writes it with the new key
// values (and a tombstone for the old sorting key when those columns are
// in it). Grandchildren follow: a deleted row's children match the deleted
// rows' referenced columns (a subquery over the same as-of read); an
// updated row's children match the parent event's old key values through
// the columns that carry them.
//
// The parent's old and new key values come from the event, as literals of
// the children's column types. Everything else stays in ClickHouse.
//
// A replay (after a crash, or from an older checkpoint) reads the same
// as-of state and writes the same rows with the same versions. Merges can
// hide the as-of state of a key that has a row at or above Vs (merged with
// it, the older rows are gone, an even older part may remain), so when
// ClickHouse may hold such rows (a table's newest version at start reaches
// Vs, or the cascade reads a table it has written), the reads leave out
// the keys that have rows at or above Vs (written by an earlier attempt of
// this event, or by later events: their rows outrank what this event
// would write), and a deleted row's children also match the tombstones at
// or above Vs (an earlier attempt's, wherever the run of events it derived
// together ended; or later events', whose consequences written here, below
// their own, change no final state).
