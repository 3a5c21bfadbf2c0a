package config

import "time"

// BatchConfig bounds the writers' batches: a batch is sent when it holds
// MaxRows rows or MaxBytes bytes, or FlushInterval after its first row.
type BatchConfig struct {
	MaxRows       int           `yaml:"max_rows"`
	MaxBytes      int           `yaml:"max_bytes"`
	FlushInterval time.Duration `yaml:"flush_interval"`
	// MaxInFlight is how many inserts of one table may be in flight at
	// once, while one more batch fills; memory grows with it.
	MaxInFlight int `yaml:"max_inflight"`
	// MaxInsertsPerSecond is the daemon's insert budget, over all tables:
	// batches that waited out their interval go when it allows, oldest
	// first (full batches go at once). 0: no budget.
	MaxInsertsPerSecond float64 `yaml:"max_inserts_per_second"`
	// LiveFlushInterval: while the reader is live (the binlog's newest
	// events read) and nothing more is queued for the table, a batch goes
	// at once, but no sooner than this after the table's last insert:
	// low lag when the load is light, at most one insert per interval per
	// table, within the budget. One above FlushInterval acts as
	// FlushInterval.
	LiveFlushInterval time.Duration `yaml:"live_flush_interval"`
	// MaxBufferBytes bounds the bytes of rows all writers hold in batches
	// (filling and in flight): past it a writer sends its batch at once
	// and waits for it before filling more. 0: no bound.
	MaxBufferBytes int64 `yaml:"max_buffer_bytes"`
	// MaxInsertRows: full batches of a table that follow each other while
	// it catches up go into one INSERT, which ClickHouse stores as one
	// part (it squashes an insert's blocks), up to this many rows and for
	// at most FlushInterval: fewer parts, but the server copies every
	// batch into the squashed block, and the writer keeps the INSERT's
	// data until it is stored. MaxRows or less (0, the default): an
	// INSERT per batch. Servers from 22.2 on never stream (their batches
	// carry an insert_deduplication_token).
	MaxInsertRows int `yaml:"max_insert_rows"`
	// MaxInsertBytes bounds such an INSERT's data as sent (compressed),
	// which the writer keeps until the part is stored, to send it again
	// after a failure: the memory streams cost.
	MaxInsertBytes int `yaml:"max_insert_bytes"`
}

// validate reports the batch section's problems.
func (b *BatchConfig) validate(d *decoder) {
	if b.MaxRows < 1 {
		d.problem("batch.max_rows", "must be >= 1")
	}
	if b.MaxBytes < 1<<10 {
		d.problem("batch.max_bytes", "must be >= 1024")
	}
	if b.MaxInFlight < 1 || b.MaxInFlight > 16 {
		d.problem("batch.max_inflight", "must be from 1 to 16")
	}
	if b.MaxBytes > 1<<30 {
		d.problem("batch.max_bytes", "must be <= 1 GiB")
	}
	if b.FlushInterval < time.Millisecond {
		d.problem("batch.flush_interval", "must be >= 1ms")
	}
	if b.MaxInsertsPerSecond < 0 || b.MaxInsertsPerSecond > 100000 {
		d.problem("batch.max_inserts_per_second", "must be from 0 (no budget) to 100000")
	}
	if b.LiveFlushInterval < time.Millisecond {
		d.problem("batch.live_flush_interval", "must be >= 1ms")
	}
	if b.MaxBufferBytes != 0 && (b.MaxBufferBytes < 1<<20 || b.MaxBufferBytes > 1<<40) {
		d.problem("batch.max_buffer_bytes", "must be 0 (no bound) or from 1 MiB to 1 TiB")
	}
	if b.MaxInsertRows < 0 || b.MaxInsertRows > 1<<30 {
		d.problem("batch.max_insert_rows", "must be from 0 (an INSERT per batch) to 1073741824")
	}
	if b.MaxInsertBytes < 1<<20 || b.MaxInsertBytes > 1<<30 {
		d.problem("batch.max_insert_bytes", "must be from 1 MiB to 1 GiB")
	}
}
