package replicator

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Error stages, the values of binlog2ch_errors_total's stage label.
const (
	stageRead       = "read"       // the binlog stream failed
	stageInsert     = "insert"     // an insert into ClickHouse failed
	stageDDL        = "ddl"        // a DDL statement in ClickHouse failed
	stageCheckpoint = "checkpoint" // saving the checkpoint failed
	stageSchema     = "schema"     // reading a table's schema failed
)

// DDL results, the values of binlog2ch_ddl_total's result label.
const (
	ddlApplied       = "applied"        // acted on in ClickHouse
	ddlSkipped       = "skipped"        // parsed: about other tables, or taking effect with the table's next rows
	ddlIgnored       = "ignored"        // changes no table (noTableStatement)
	ddlNotUnderstood = "not_understood" // may change a table, not parsed: logged at WARN
)

// metrics are the daemon's Prometheus metrics, in its own registry (no
// global state). Names and meanings are documented in
// docs/operations.md ("Metrics and health").
type metrics struct {
	reg *prometheus.Registry

	rows          *prometheus.CounterVec
	eventsRead    prometheus.Counter
	flushDuration *prometheus.HistogramVec
	batchRows     *prometheus.HistogramVec
	queueRows     *prometheus.GaugeVec
	checkpointTS  prometheus.Gauge
	cpFile, cpPos prometheus.Gauge
	readFile      prometheus.Gauge
	readPos       prometheus.Gauge
	errors        *prometheus.CounterVec
	ddl           *prometheus.CounterVec
	fixups        *prometheus.CounterVec
	snapCopied    *prometheus.GaugeVec
	snapEstimated *prometheus.GaugeVec
	shardRows     *prometheus.CounterVec

	// durable is the commit time (Unix ns) of the newest event durably in
	// ClickHouse, or the time of a heartbeat that found nothing pending:
	// the lag is measured from it at scrape time, so it keeps growing
	// while nothing gets through.
	durable atomic.Int64
	// read is the timestamp (Unix ns) of the newest event read, or of a
	// heartbeat's arrival (the reader is at the server's end then).
	read atomic.Int64
	// ready reports readiness for binlog2ch_ready, set by the Replicator.
	ready func() bool
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	perTable := []string{"database", "table"}
	m.rows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_rows_total",
		Help: "Rows written to ClickHouse durably, by MySQL table and operation (insert, update, delete)."}, []string{"database", "table", "op"})
	m.eventsRead = prometheus.NewCounter(prometheus.CounterOpts{Name: "binlog2ch_events_read_total",
		Help: "Binlog events read from the source, heartbeats excluded."})
	m.flushDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "binlog2ch_flush_duration_seconds",
		Help:    "Time to insert one batch into ClickHouse, retries included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, perTable)
	m.batchRows = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "binlog2ch_batch_rows",
		Help:    "Rows per batch inserted into ClickHouse.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 10)}, perTable)
	m.queueRows = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_queue_rows",
		Help: "Rows converted for a table and not yet durably in ClickHouse (filling and in-flight batches)."}, perTable)
	m.checkpointTS = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_checkpoint_timestamp_seconds",
		Help: "Unix time the checkpoint was last saved."})
	m.cpFile = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_checkpoint_binlog_file_index",
		Help: "Binlog file index (the file name's numeric suffix) of the saved checkpoint."})
	m.cpPos = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_checkpoint_binlog_position",
		Help: "Binlog position of the saved checkpoint."})
	m.readFile = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_read_binlog_file_index",
		Help: "Binlog file index the reader is at."})
	m.readPos = prometheus.NewGauge(prometheus.GaugeOpts{Name: "binlog2ch_read_binlog_position",
		Help: "Binlog position the reader is at."})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_errors_total",
		Help: "Failures by stage (read, insert, ddl, checkpoint, schema); retried ones included."}, []string{"stage"})
	m.ddl = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_ddl_total",
		Help: "DDL statements seen in the binlog, by result: applied (acted on in ClickHouse), skipped (other tables, or nothing to do), ignored (changes no table: routines, triggers, views, events, accounts, grants, table maintenance), not_understood (may change a table but was not parsed; logged with the statement)."}, []string{"result"})
	m.fixups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_value_fixups_total",
		Help: "Values changed by schema.invalid_dates (clamped or set NULL), by table and kind."}, []string{"database", "table", "kind"})
	m.snapCopied = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_snapshot_rows_copied",
		Help: "Rows a table's snapshot has copied so far."}, perTable)
	m.snapEstimated = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "binlog2ch_snapshot_rows_estimated",
		Help: "Rows a table's snapshot expects to copy (MySQL's estimate)."}, perTable)
	m.shardRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binlog2ch_shard_rows_total",
		Help: "Rows inserted straight into a cluster shard's local tables (clickhouse.cluster_insert: shards), by shard_num."}, []string{"shard"})
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_lag_seconds",
		Help: "Now minus the commit time of the newest event durably in ClickHouse; keeps growing while nothing gets through, about 0 when idle and caught up."},
		func() float64 { return since(m.durable.Load()) })
	sourceLag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_source_lag_seconds",
		Help: "Now minus the timestamp of the newest event read: how far the reader is behind the source's binlog."},
		func() float64 { return since(m.read.Load()) })
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlog2ch_ready",
		Help: "1 when /readyz says ready: connected to both servers and the lag below metrics.ready_max_lag."},
		func() float64 {
			if m.ready != nil && m.ready() {
				return 1
			}
			return 0
		})
	m.reg.MustRegister(m.rows, m.eventsRead, m.flushDuration, m.batchRows, m.queueRows, m.checkpointTS, m.cpFile, m.cpPos,
		m.readFile, m.readPos, m.errors, m.ddl, m.fixups, m.snapCopied, m.snapEstimated, m.shardRows, lag, sourceLag, ready,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every stage and DDL result exists from the start, at 0, so rate()
	// and increase() see the first failure.
	for _, s := range []string{stageRead, stageInsert, stageDDL, stageCheckpoint, stageSchema} {
		m.errors.WithLabelValues(s)
	}
	for _, r := range []string{ddlApplied, ddlSkipped, ddlIgnored, ddlNotUnderstood} {
		m.ddl.WithLabelValues(r)
	}
	return m
}

// since is the seconds from a Unix-ns time to now; 0 when unset.
func since(ns int64) float64 {
	if ns == 0 {
		return 0
	}
	return math.Max(0, time.Since(time.Unix(0, ns)).Seconds())
}

// advanceTo moves a timestamp forward, never back.
func advanceTo(a *atomic.Int64, ns int64) {
	for {
		cur := a.Load()
		if ns <= cur || a.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// tableMetrics are one writer's label-bound metrics, looked up once.
type tableMetrics struct {
	rows          [4]prometheus.Counter // by schema.Op
	flushDuration prometheus.Observer
	batchRows     prometheus.Observer
	queueRows     prometheus.Gauge
	fixups        [schema.NumFixups]prometheus.Counter
}

func (m *metrics) forTable(t source.TableName) *tableMetrics {
	tm := &tableMetrics{
		flushDuration: m.flushDuration.WithLabelValues(t.Database, t.Table),
		batchRows:     m.batchRows.WithLabelValues(t.Database, t.Table),
		queueRows:     m.queueRows.WithLabelValues(t.Database, t.Table),
	}
	for op, name := range map[schema.Op]string{schema.OpInsert: "insert", schema.OpUpdate: "update", schema.OpDelete: "delete"} {
		tm.rows[op] = m.rows.WithLabelValues(t.Database, t.Table, name)
	}
	for k := range tm.fixups {
		tm.fixups[k] = m.fixups.WithLabelValues(t.Database, t.Table, schema.Fixup(k).String())
	}
	return tm
}

// forget drops a table's series (after DROP or RENAME), so label
// cardinality follows the tables that exist.
func (m *metrics) forget(t source.TableName) {
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.rows, m.flushDuration, m.batchRows, m.queueRows, m.fixups, m.snapCopied, m.snapEstimated} {
		v.DeletePartialMatch(prometheus.Labels{"database": t.Database, "table": t.Table})
	}
}
