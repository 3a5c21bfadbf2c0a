// Package metrics defines binlog2ch's Prometheus metrics: their names
// (with units), help texts and labels, in a registry of their own, and the
// lag clocks the gauges read at scrape time. It must not serve the
// metrics (replicator does) nor decide anything: the packages that do the
// work update them.
package metrics

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/migration"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Error stages, the values of binlog2ch_errors_total's stage label.
const (
	StageRead       = "read"       // the binlog stream failed
	StageInsert     = "insert"     // an insert into ClickHouse failed
	StageDDL        = "ddl"        // a DDL statement in ClickHouse failed
	StageCheckpoint = "checkpoint" // saving the checkpoint failed
	StageSchema     = "schema"     // reading a table's schema failed
	StageCascade    = "cascade"    // deriving a foreign-key cascade's rows failed
)

// DDL results, the values of binlog2ch_ddl_total's result label.
const (
	DDLApplied       = "applied"        // acted on in ClickHouse
	DDLSkipped       = "skipped"        // parsed: about other tables, or taking effect with the table's next rows
	DDLIgnored       = "ignored"        // changes no table (ddl.NonTableKind)
	DDLNotUnderstood = "not_understood" // not parsed: stops when it names a replicated table, else counted
)

// The reasons of binlog2ch_clickhouse_uncompressed_frames_total.
const (
	FramesIncompressible = "incompressible"
	FramesProbe          = "probe"
)

// Native fallback reasons, the values of binlog2ch_native_fallbacks_total's
// reason label: why a table's inserts left binlog2ch's native inserter for
// clickhouse-go. The first three are chnative's protocol surprises (its
// Reason constants), the last the sink's header check.
const (
	FallbackUnknownPacket  = "unknown_packet"  // a packet the server may not send at chnative's revision
	FallbackCompression    = "compression"     // a compression method chnative cannot decode
	FallbackHeaderType     = "header_type"     // an INSERT header that is not names and type names
	FallbackHeaderMismatch = "header_mismatch" // the table's columns differ on the wire from the mapping
)

// FallbackReasons lists every reason, each a series from the start.
var FallbackReasons = []string{FallbackUnknownPacket, FallbackCompression, FallbackHeaderType, FallbackHeaderMismatch}

// Outcomes of binlog2ch_ambiguous_inserts_total: a block that met an
// answer the native inserter cannot read after it went out whole.
const (
	AmbiguousResent  = "resent"  // sent again: not in ClickHouse, or a ReplacingMergeTree table, where the same versions make a second copy harmless
	AmbiguousPresent = "present" // a changelog table already holds every row: not sent again
	AmbiguousStopped = "stopped" // ClickHouse's rows cannot tell: the writer stopped with the error
)

// AmbiguousOutcomes lists every outcome, each a series from the start.
var AmbiguousOutcomes = []string{AmbiguousResent, AmbiguousPresent, AmbiguousStopped}

// The online schema migration tools whose tables binlog2ch follows
// (binlog2ch_migration_tables_followed_total's tool).
const (
	ToolGhost = migration.Ghost
	ToolPTOSC = migration.PTOSC
)

// MigrationTools lists every tool, each a series from the start.
var MigrationTools = []string{ToolGhost, ToolPTOSC}

// Metrics are the daemon's Prometheus metrics, in its own registry (no
// global state). Names and meanings are documented in
// docs/operations.md ("Metrics and health").
type Metrics struct {
	Registry *prometheus.Registry

	Rows                          *prometheus.CounterVec
	EventsRead                    prometheus.Counter
	FlushDuration                 *prometheus.HistogramVec
	BatchRows                     *prometheus.HistogramVec
	QueueRows                     *prometheus.GaugeVec
	CheckpointTS                  prometheus.Gauge
	CheckpointFile, CheckpointPos prometheus.Gauge
	ReadFile                      prometheus.Gauge
	ReadPos                       prometheus.Gauge
	Errors                        *prometheus.CounterVec
	DDL                           *prometheus.CounterVec
	Fixups                        *prometheus.CounterVec
	SnapshotCopied                *prometheus.GaugeVec
	SnapshotEstimated             *prometheus.GaugeVec
	ShardRows                     *prometheus.CounterVec
	XAPrepared                    prometheus.Gauge
	StatementsWithoutRows         *prometheus.CounterVec
	EventsSkipped                 *prometheus.CounterVec
	// Online table copies (replicator/copies.go).
	TableCopies   *prometheus.CounterVec
	TablesCopying prometheus.Gauge
	// Tables marked failed (replication.on_table_error: skip_table).
	TablesFailed       prometheus.Gauge
	TablesMarkedFailed prometheus.Counter
	NativeFallbacks    *prometheus.CounterVec
	UncompressedFrames *prometheus.CounterVec
	// InsertConnections counts the native insert connections opened, by
	// how their inserts travel (clickhouse.compression, auto decided).
	InsertConnections *prometheus.CounterVec
	AmbiguousInserts  *prometheus.CounterVec
	// InsertStreams and StreamedBatches count the INSERTs that carried
	// several batches (sink's streams) and those batches.
	InsertStreams, StreamedBatches prometheus.Counter
	// ReplaySkipped counts rows events a restart did not send again: the
	// checkpoint recorded their table's rows as stored past its position.
	ReplaySkipped   prometheus.Counter
	MigrationTables *prometheus.CounterVec
	// Foreign-key cascades derived (package cascade).
	CascadedRows    *prometheus.CounterVec
	CascadeDuration prometheus.Histogram
	// The insert budget (sink/budget.go).
	BudgetRate    prometheus.Gauge
	BudgetGranted *prometheus.CounterVec
	BudgetWaiting prometheus.Gauge
	OldestUnsent  *prometheus.GaugeVec
	// The writers' batch memory (sink/memory.go) and goroutines.
	BufferBytes      prometheus.Gauge
	BufferLimitBytes prometheus.Gauge
	Writers          *prometheus.GaugeVec

	// Durable is the commit time (Unix ns) of the newest event durably in
	// ClickHouse, or the time of a heartbeat that found nothing pending:
	// the lag is measured from it at scrape time, so it keeps growing
	// while nothing gets through.
	Durable atomic.Int64
	// Read is the timestamp (Unix ns) of the newest event read, or of a
	// heartbeat's arrival (the reader is at the server's end then).
	Read atomic.Int64
	// AtEnd, while the reader waits at the server's end, is when that stops
	// counting as caught up (Unix ns): the last heartbeat's arrival plus
	// mysql.heartbeat_period and a grace; 0 once an event is read.
	// DurableAtEnd is the same for ClickHouse, set only when nothing was
	// pending. The server sends its events as they are written and a
	// heartbeat after each silent period, so until the next heartbeat is
	// overdue nothing it has is missing: the lags read 0 then, not the time
	// since the last heartbeat (a sawtooth up to a period that a scrape at
	// about that period samples as a slow drift).
	AtEnd, DurableAtEnd atomic.Int64
	// Cascading is the cascade under way (nil: none).
	Cascading atomic.Pointer[Cascade]
	// Ready reports readiness for binlog2ch_ready, set by the daemon.
	Ready func() bool
	// RetentionAt is when the source may purge the binlog file holding
	// the checkpoint, Unix seconds as float64 bits: +Inf no setting purges
	// it, -Inf it is gone, NaN not known (yet). The headroom is read from
	// it at scrape time. RetentionMargin is metrics.binlog_retention_margin.
	RetentionAt     atomic.Uint64
	RetentionMargin prometheus.Gauge

	// tables indexes the per-table metrics of the tables that have
	// series, for the status page (status.Collector): it reads them
	// without a scrape.
	tablesMu sync.Mutex
	tables   map[schema.TableName]*Table
}

// New registers every metric, the Go runtime's and the process's in a new
// registry.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), tables: map[schema.TableName]*Table{}}
	perTable := []string{"database", "table"}
	m.Rows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_rows_total",
		Help: "Rows written to ClickHouse durably, by MySQL table and operation (insert, update, delete)."}, []string{"database", "table", "op"})
	m.EventsRead = prometheus.NewCounter(prometheus.CounterOpts{Name: "binlog2ch_events_read_total",
		Help: "Binlog events read from the source, heartbeats excluded."})
	m.FlushDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "binlog2ch_flush_duration_seconds",
		Help:    "Time to insert one batch into ClickHouse, retries included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, perTable)
	m.BatchRows = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "binlog2ch_batch_rows",
		Help:    "Rows per batch inserted into ClickHouse.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 10)}, perTable)
	m.QueueRows = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_queue_rows",
		Help: "Rows converted for a table and not yet durably in ClickHouse (filling and in-flight batches)."}, perTable)
	m.CheckpointTS = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_checkpoint_timestamp_seconds",
		Help: "Unix time the checkpoint was last saved."})
	m.CheckpointFile = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_checkpoint_binlog_file_index",
		Help: "Binlog file index (the file name's numeric suffix) of the saved checkpoint."})
	m.CheckpointPos = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_checkpoint_binlog_position",
		Help: "Binlog position of the saved checkpoint."})
	m.ReadFile = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_read_binlog_file_index",
		Help: "Binlog file index the reader is at."})
	m.ReadPos = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_read_binlog_position",
		Help: "Binlog position the reader is at."})
	m.Errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_errors_total",
		Help: "Failures by stage (read, insert, ddl, checkpoint, schema, cascade); retried ones included."}, []string{"stage"})
	m.DDL = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_ddl_total",
		Help: "DDL statements seen in the binlog, by result: applied (acted on in ClickHouse), skipped (other tables, or nothing to do), ignored (changes no table: routines, triggers, views, events, accounts, grants, table maintenance), not_understood (not parsed: one that names a replicated table stops the daemon with the statement; others are counted only)."}, []string{"result"})
	m.Fixups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_value_fixups_total",
		Help: "Values changed by schema.invalid_dates (clamped or set NULL), by table and kind."}, []string{"database", "table", "kind"})
	m.SnapshotCopied = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_snapshot_rows_copied",
		Help: "Rows a table's snapshot has copied so far."}, perTable)
	m.SnapshotEstimated = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_snapshot_rows_estimated",
		Help: "Rows a table's snapshot expects to copy (MySQL's estimate)."}, perTable)
	m.ShardRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_shard_rows_total",
		Help: "Rows inserted straight into a cluster shard's local tables (clickhouse.cluster_insert: shards), by shard_num."}, []string{"shard"})
	m.XAPrepared = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_xa_prepared_transactions",
		Help: "XA transactions read up to their XA PREPARE whose XA COMMIT or ROLLBACK is not read yet: their rows wait, and the checkpoint stays before the oldest."})
	m.StatementsWithoutRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_statements_without_rows_total",
		Help: "Statements that changed a replicated table's rows without row events, acted on by replication.on_statement_dml or on_partition_maintenance: apply (a partition's rows deleted by its bounds), recopy (the table copied again) or keep (ClickHouse kept the rows)."}, []string{"action"})
	m.EventsSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_events_skipped_total",
		Help: "Binlog events passed by because they change no rows, by type (INTVAR_EVENT, ROWS_QUERY_EVENT, ANNOTATE_ROWS_EVENT, BEGIN_LOAD_QUERY_EVENT...); a type's first is logged at INFO. Events that may change rows binlog2ch cannot apply stop the daemon instead."}, []string{"type"})
	m.TableCopies = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_table_copies_total",
		Help: "Tables copied online while the stream went on, swapped in complete, by reason: selected (tables.include/exclude selected it, at start or at a reload), renamed (RENAME TABLE into the set), add_column (ADD COLUMN whose values for existing rows the binlog lacks), statement_dml, partition (replication.on_...: recopy), resync, failed (a failed table copied again), migration (a migration table not followed from its CREATE), ddl_during_copy, server_changed."}, []string{"reason"})
	m.TablesCopying = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_tables_copying",
		Help: "Tables being copied online (or waiting for their copy, or for the swap of their shadow table)."})
	m.TablesFailed = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_tables_failed",
		Help: "Tables marked failed (replication.on_table_error: skip_table): their events are skipped until a resync or the next start copies them again."})
	m.TablesMarkedFailed = prometheus.NewCounter(prometheus.CounterOpts{Name: "binlog2ch_tables_failed_total",
		Help: "Times a table was marked failed because its rows could not be applied (replication.on_table_error: skip_table)."})
	m.NativeFallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_native_fallbacks_total",
		Help: "Tables whose inserts switched from binlog2ch's native inserter to clickhouse-go, by reason: unknown_packet, compression, header_type (the server answered with something the native inserter cannot read), header_mismatch (the table's columns differ on the wire from binlog2ch's mapping). Each switch is logged at WARN."}, []string{"reason"})
	m.UncompressedFrames = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_clickhouse_uncompressed_frames_total",
		Help: "Frames of 1 MiB of inserts' data sent uncompressed (NONE frames, checksummed) with clickhouse.compression lz4 or lz4-adaptive, by reason: incompressible (LZ4 did not shrink the frame: it goes smaller as it is), probe (lz4-adaptive: LZ4 did not shrink the frame's first 64 KiB, so the rest was not tried)."}, []string{"reason"})
	m.InsertConnections = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_clickhouse_insert_connections_total",
		Help: "Native connections opened for inserts, by how their blocks travel: lz4, zstd, lz4-adaptive, or none (plain Native, no frames or checksums; what clickhouse.compression: auto, the default, uses for a ClickHouse on this host)."}, []string{"compression"})
	m.InsertStreams = prometheus.NewCounter(prometheus.CounterOpts{Name: "binlog2ch_insert_streams_total",
		Help: "INSERTs that carried several full batches of a table catching up (batch.max_insert_rows), each stored by ClickHouse as one part."})
	m.StreamedBatches = prometheus.NewCounter(prometheus.CounterOpts{Name: "binlog2ch_insert_streamed_batches_total",
		Help: "Batches sent inside those INSERTs; over binlog2ch_insert_streams_total, the batches per part."})
	m.AmbiguousInserts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_ambiguous_inserts_total",
		Help: "Blocks that went out whole to ClickHouse before an answer the native inserter cannot read, so that whether ClickHouse stored them is unknown, by outcome: resent (a changelog table's rows counted absent, or a ReplacingMergeTree table, where a second copy carries the same versions), present (a changelog table already holds every row: not sent again), stopped (ClickHouse's rows cannot tell: the daemon stopped naming the table). Each is logged at WARN or ERROR."}, []string{"outcome"})
	m.ReplaySkipped = prometheus.NewCounter(prometheus.CounterOpts{Name: "binlog2ch_replay_skipped_events_total",
		Help: "Rows events read again after a restart and not sent again, because the checkpoint recorded that their table's rows were in ClickHouse past its position."})
	m.MigrationTables = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_migration_tables_followed_total",
		Help: "New tables of online schema migrations of replicated tables that binlog2ch began following at their CREATE TABLE (gh-ost's _t_gho, pt-online-schema-change's _t_new), by tool: gh-ost, pt-osc."}, []string{"tool"})
	m.CascadedRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_cascaded_rows_total",
		Help: "Child rows changed by foreign-key cascades that InnoDB applied without row events, derived and written by binlog2ch, by child table and action (delete, set_null, update)."}, []string{"database", "table", "action"})
	m.CascadeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "binlog2ch_cascade_duration_seconds",
		Help:    "Time to derive one cascade's child rows (a parent event, or a run of a parent table's deletes derived together: flushing the tables involved, reading, writing), during which the binlog reader waits.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)})
	m.BudgetRate = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_insert_budget_per_second",
		Help: "The insert budget over all tables, batch.max_inserts_per_second (0: none)."})
	m.BudgetGranted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_insert_budget_granted_total",
		Help: "Inserts the budget counted, by why the batch went: full (max_rows or max_bytes, at once), interval (flush_interval waited out), live (the reader live and the table's queue empty: at once, or live_flush_interval after its last insert), drain (DDL, a schema change, shutdown: at once), memory (the writers' batches over batch.max_buffer_bytes: at once), cascade (a foreign-key cascade's derived rows, one insert per child table: at once)."}, []string{"reason"})
	m.BudgetWaiting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_insert_budget_waiting_tables",
		Help: "Tables whose batch waits for the insert budget."})
	m.OldestUnsent = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_oldest_unsent_row_timestamp_seconds",
		Help: "Unix time a table's oldest row not yet handed to an insert was taken into its batch; 0 when none waits. time() minus it is how long the budget or the interval has held it."}, perTable)
	m.BufferBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_batch_buffer_bytes",
		Help: "Bytes of rows the writers hold in batches, filling and in flight, over all tables."})
	m.BufferLimitBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_batch_buffer_limit_bytes",
		Help: "batch.max_buffer_bytes: above it a writer sends its batch at once and waits for it (0: no limit)."})
	m.Writers = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_writers",
		Help: "Table writers by state: running (a goroutine, batch buffers), parked (quiet for a while: neither, until its table's next rows)."}, []string{"state"})
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_lag_seconds",
		Help: "Now minus the commit time of the newest event durably in ClickHouse; keeps growing while nothing gets through, about 0 when idle and caught up."},
		m.Lag)
	sourceLag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_source_lag_seconds",
		Help: "Now minus the timestamp of the newest event read: how far the reader is behind the source's binlog."},
		m.SourceLag)
	m.RetentionAt.Store(math.Float64bits(math.NaN()))
	headroom := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_source_binlog_retention_headroom_seconds",
		Help: "Seconds until the source may purge the binlog file holding the checkpoint (binlog_expire_logs_seconds or expire_logs_days from the file's close; max_binlog_total_size or binlog_space_limit at the binlog's recent growth); negative: due, purged at the server's next check; +Inf: nothing foreseen purges it (no setting, or only the size limit while the binlog does not grow); -Inf: already gone; NaN: not read yet."},
		func() float64 { return RetentionHeadroom(m.RetentionAt.Load(), time.Now()) })
	m.RetentionMargin = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_source_binlog_retention_margin_seconds",
		Help: "metrics.binlog_retention_margin: below it the headroom is logged at WARN and the Binlog2chBinlogRetentionLow alert fires."})
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_ready",
		Help: "1 when /readyz says ready: connected to both servers and the lag below metrics.ready_max_lag."},
		func() float64 {
			if m.Ready != nil && m.Ready() {
				return 1
			}
			return 0
		})
	m.Registry.MustRegister(m.Rows, m.EventsRead, m.FlushDuration, m.BatchRows, m.QueueRows, m.CheckpointTS, m.CheckpointFile, m.CheckpointPos,
		m.ReadFile, m.ReadPos, m.Errors, m.DDL, m.Fixups, m.SnapshotCopied, m.SnapshotEstimated, m.ShardRows, m.XAPrepared, m.StatementsWithoutRows, m.EventsSkipped, m.NativeFallbacks, m.UncompressedFrames, m.InsertConnections, m.AmbiguousInserts, m.InsertStreams, m.StreamedBatches, m.ReplaySkipped, m.MigrationTables,
		m.TableCopies, m.TablesCopying, m.TablesFailed, m.TablesMarkedFailed,
		m.CascadedRows, m.CascadeDuration,
		m.BudgetRate, m.BudgetGranted, m.BudgetWaiting, m.OldestUnsent, m.BufferBytes, m.BufferLimitBytes, m.Writers, lag, sourceLag, ready,
		headroom, m.RetentionMargin,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every stage and DDL result exists from the start, at 0, so rate()
	// and increase() see the first failure.
	for _, s := range []string{StageRead, StageInsert, StageDDL, StageCheckpoint, StageSchema, StageCascade} {
		m.Errors.WithLabelValues(s)
	}
	for _, r := range []string{DDLApplied, DDLSkipped, DDLIgnored, DDLNotUnderstood} {
		m.DDL.WithLabelValues(r)
	}
	for _, a := range []string{"apply", "recopy", "keep"} {
		m.StatementsWithoutRows.WithLabelValues(a)
	}
	for _, t := range MigrationTools {
		m.MigrationTables.WithLabelValues(t)
	}
	for _, r := range FallbackReasons {
		m.NativeFallbacks.WithLabelValues(r)
	}
	for _, r := range []string{FramesIncompressible, FramesProbe} {
		m.UncompressedFrames.WithLabelValues(r)
	}
	for _, o := range AmbiguousOutcomes {
		m.AmbiguousInserts.WithLabelValues(o)
	}
	for _, r := range []string{"full", "interval", "live", "drain", "memory", "cascade"} {
		m.BudgetGranted.WithLabelValues(r)
	}
	for _, s := range []string{WriterRunning, WriterParked} {
		m.Writers.WithLabelValues(s)
	}
	return m
}

// Writer states, binlog2ch_writers' label (the first two) and the status
// page's.
const (
	WriterRunning = "running"
	WriterParked  = "parked"
	// WriterStopped: the writer ended (its table dropped, renamed away,
	// failed, or the daemon stopping).
	WriterStopped = "stopped"
)

// Cascade is the foreign-key cascade under way, for the status page: a
// run of Parent's deletes held back since Since (Holding), or the
// derivation of Parent's cascades begun at Since.
type Cascade struct {
	Parent  string
	Since   time.Time
	Holding bool
}

// Lag is binlog2ch_lag_seconds: now minus the commit time of the newest
// event durably in ClickHouse, 0 while caught up and waiting at the
// server's end (DurableAtEnd).
func (m *Metrics) Lag() float64 { return lagFrom(m.Durable.Load(), m.DurableAtEnd.Load()) }

// SourceLag is binlog2ch_source_lag_seconds: now minus the timestamp of
// the newest event read, 0 while waiting at the server's end (AtEnd).
func (m *Metrics) SourceLag() float64 { return lagFrom(m.Read.Load(), m.AtEnd.Load()) }

func lagFrom(ns, atEnd int64) float64 {
	if atEnd != 0 && time.Now().UnixNano() < atEnd {
		return 0
	}
	return Since(ns)
}

// Since is the seconds from a Unix-ns time to now; 0 when unset.
func Since(ns int64) float64 {
	if ns == 0 {
		return 0
	}
	return math.Max(0, time.Since(time.Unix(0, ns)).Seconds())
}

// RetentionHeadroom is binlog2ch_source_binlog_retention_headroom_seconds
// from RetentionAt's bits.
func RetentionHeadroom(bits uint64, now time.Time) float64 {
	at := math.Float64frombits(bits)
	if math.IsInf(at, 0) || math.IsNaN(at) {
		return at
	}
	return at - float64(now.UnixNano())/1e9
}

// AdvanceTo moves a timestamp forward, never back.
func AdvanceTo(a *atomic.Int64, ns int64) {
	for {
		cur := a.Load()
		if ns <= cur || a.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// Table is one writer's label-bound metrics, looked up once, and what
// the status page shows of the table beyond its series. Use its methods
// to count rows and queued rows: they keep the page's copies too.
type Table struct {
	Name          schema.TableName
	Rows          [4]prometheus.Counter // by schema.Op
	FlushDuration prometheus.Observer
	BatchRows     prometheus.Observer
	QueueRows     prometheus.Gauge
	OldestUnsent  prometheus.Gauge
	Fixups        [block.NumFixups]prometheus.Counter

	// PendingSince is the commit time (Unix ns) of the table's oldest row
	// read from the binlog and not yet durably in ClickHouse, 0 when none
	// is: the table's lag counts from it. The router keeps it.
	PendingSince atomic.Int64

	rows      [4]atomic.Uint64 // Rows' values, by schema.Op
	queued    atomic.Int64
	lastFlush atomic.Int64 // Unix ns of the last batch stored
	errors    atomic.Uint64
	lastError atomic.Pointer[TableError]
	fallback  atomic.Pointer[string]
	ambiguous [3]atomic.Uint64       // by AmbiguousOutcomes' index
	writer    atomic.Pointer[string] // WriterRunning, WriterParked, WriterStopped; nil: none yet
}

// SetWriter notes the state of the table's writer: WriterRunning,
// WriterParked or WriterStopped.
func (t *Table) SetWriter(state string) { t.writer.Store(&state) }

// TableError is a table's latest failed insert.
type TableError struct {
	At      time.Time
	Message string
}

// AddRows counts rows of an operation durably written.
func (t *Table) AddRows(op schema.Op, n uint64) {
	if n == 0 {
		return
	}
	t.Rows[op].Add(float64(n))
	t.rows[op].Add(n)
}

// SetQueued sets the rows converted and not yet in ClickHouse.
func (t *Table) SetQueued(n int) {
	t.QueueRows.Set(float64(n))
	t.queued.Store(int64(n))
}

// Flushed notes a batch stored at now.
func (t *Table) Flushed(now time.Time) { t.lastFlush.Store(now.UnixNano()) }

// InsertFailed notes a failed insert attempt (retried or not); the
// daemon-wide count is binlog2ch_errors_total{stage="insert"}.
func (t *Table) InsertFailed(err error) {
	t.errors.Add(1)
	t.lastError.Store(&TableError{At: time.Now(), Message: err.Error()})
}

// NativeFallback notes that the table's inserts went to clickhouse-go, and
// why (one of FallbackReasons).
func (t *Table) NativeFallback(reason string) { t.fallback.Store(&reason) }

// AmbiguousInsert counts one of the table's blocks whose insert was
// ambiguous, by its outcome (one of AmbiguousOutcomes); the daemon-wide
// count is binlog2ch_ambiguous_inserts_total.
func (t *Table) AmbiguousInsert(outcome string) {
	for i, o := range AmbiguousOutcomes {
		if o == outcome {
			t.ambiguous[i].Add(1)
		}
	}
}

// TableState is what the status page reads of a table, at one moment.
type TableState struct {
	Rows         [4]uint64 // by schema.Op
	Queued       int64
	LastFlush    int64 // Unix ns; 0: none yet
	PendingSince int64 // Unix ns; 0: nothing pending
	Errors       uint64
	LastError    *TableError
	Fallback     string
	// Ambiguous counts AmbiguousInsert's blocks by outcome; nil when none.
	Ambiguous map[string]uint64
	// Writer is SetWriter's state; "" when the table has had no writer.
	Writer string
}

// State reads the table's counters for the status page.
func (t *Table) State() TableState {
	st := TableState{Queued: t.queued.Load(), LastFlush: t.lastFlush.Load(), PendingSince: t.PendingSince.Load(),
		Errors: t.errors.Load(), LastError: t.lastError.Load()}
	for op := range st.Rows {
		st.Rows[op] = t.rows[op].Load()
	}
	if f := t.fallback.Load(); f != nil {
		st.Fallback = *f
	}
	if w := t.writer.Load(); w != nil {
		st.Writer = *w
	}
	for i, o := range AmbiguousOutcomes {
		if n := t.ambiguous[i].Load(); n > 0 {
			if st.Ambiguous == nil {
				st.Ambiguous = map[string]uint64{}
			}
			st.Ambiguous[o] = n
		}
	}
	return st
}

// ForTable returns a table's metrics, looked up once for its writer; every
// caller gets the same Table until Forget.
func (m *Metrics) ForTable(t schema.TableName) *Table {
	m.tablesMu.Lock()
	defer m.tablesMu.Unlock()
	if tm := m.tables[t]; tm != nil {
		return tm
	}
	tm := &Table{
		Name:          t,
		FlushDuration: m.FlushDuration.WithLabelValues(t.Database, t.Table),
		BatchRows:     m.BatchRows.WithLabelValues(t.Database, t.Table),
		QueueRows:     m.QueueRows.WithLabelValues(t.Database, t.Table),
		OldestUnsent:  m.OldestUnsent.WithLabelValues(t.Database, t.Table),
	}
	for op, name := range map[schema.Op]string{schema.OpInsert: "insert", schema.OpUpdate: "update", schema.OpDelete: "delete"} {
		tm.Rows[op] = m.Rows.WithLabelValues(t.Database, t.Table, name)
	}
	for k := range tm.Fixups {
		tm.Fixups[k] = m.Fixups.WithLabelValues(t.Database, t.Table, block.Fixup(k).String())
	}
	m.tables[t] = tm
	return tm
}

// Tables returns the tables that have metrics, in no order.
func (m *Metrics) Tables() []*Table {
	m.tablesMu.Lock()
	defer m.tablesMu.Unlock()
	out := make([]*Table, 0, len(m.tables))
	for _, tm := range m.tables {
		out = append(out, tm)
	}
	return out
}

// Forget drops a table's series (after DROP or RENAME), so label
// cardinality follows the tables that exist.
func (m *Metrics) Forget(t schema.TableName) {
	m.tablesMu.Lock()
	delete(m.tables, t)
	m.tablesMu.Unlock()
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.Rows, m.FlushDuration, m.BatchRows, m.QueueRows, m.OldestUnsent, m.Fixups, m.SnapshotCopied, m.SnapshotEstimated} {
		v.DeletePartialMatch(prometheus.Labels{"database": t.Database, "table": t.Table})
	}
}
