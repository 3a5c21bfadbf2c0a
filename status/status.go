// Package status is what an operator sees of a running daemon without
// Prometheus: the model of its state (per table: its state, streaming or
// copied online, rows by operation, rows/s, lag, queued rows, last flush,
// snapshot and copy progress, errors, native fallbacks; the read
// position, the checkpoint, the servers), assembled by
// a Collector from the metrics registry and what the daemon tells it, and
// rendered as JSON (/status.json), as a self-refreshing HTML page (/) and
// as text (`binlog2ch status`). It never queries a server: everything comes
// from memory the daemon keeps anyway, so a page open on a daemon with
// thousands of tables costs it little.
package status

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Status is the daemon's state at GeneratedAt. The JSON names are the
// /status.json API (docs/operations.md).
type Status struct {
	// Running is false when no daemon answered and the status comes from
	// the checkpoint (binlog2ch status); NotRunning then says why.
	Running     bool      `json:"running"`
	NotRunning  string    `json:"not_running,omitempty"`
	GeneratedAt time.Time `json:"generated_at"`

	Version       string    `json:"version,omitempty"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	UptimeSeconds float64   `json:"uptime_seconds,omitempty"`
	// Phase is what the daemon is doing: starting, initial snapshot,
	// replicating.
	Phase string `json:"phase,omitempty"`
	Ready bool   `json:"ready"`
	Alive bool   `json:"alive"`
	// LagSeconds is binlog2ch_lag_seconds, SourceLagSeconds
	// binlog2ch_source_lag_seconds.
	LagSeconds       float64     `json:"lag_seconds"`
	SourceLagSeconds float64     `json:"source_lag_seconds"`
	ReadPosition     string      `json:"read_position,omitempty"`
	Checkpoint       *Checkpoint `json:"checkpoint,omitempty"`
	// Cascade is the foreign-key cascade under way (nil: none).
	Cascade *Cascade `json:"cascade,omitempty"`
	// Retention is when the source may purge the checkpoint's binlog
	// file; nil while not known.
	Retention *Retention `json:"binlog_retention,omitempty"`
	Source    Server     `json:"source"`
	Target    Server     `json:"target"`

	Totals Totals `json:"totals"`
	// Errors are binlog2ch_errors_total by stage; NativeFallbacks
	// binlog2ch_native_fallbacks_total by reason.
	Errors          map[string]uint64 `json:"errors,omitempty"`
	NativeFallbacks map[string]uint64 `json:"native_fallbacks,omitempty"`
	// RateWindowSeconds is the span rows/s are measured over.
	RateWindowSeconds float64 `json:"rate_window_seconds,omitempty"`

	// Tables are those Query selected, in its order; TablesMatched is how
	// many its filter matched before the limit, Totals.Tables how many
	// there are.
	Tables        []Table `json:"tables"`
	TablesMatched int     `json:"tables_matched"`
	Query         Query   `json:"query"`
}

// Cascade is a foreign-key cascade under way: Parent's deletes held back
// to be derived together (holding), or Parent's cascades being derived
// in ClickHouse (deriving), since Since.
type Cascade struct {
	Parent string    `json:"parent"`
	State  string    `json:"state"` // holding, deriving
	Since  time.Time `json:"since"`
}

// Checkpoint is the saved position replication resumes from.
type Checkpoint struct {
	Position string    `json:"position"`
	GTID     string    `json:"gtid,omitempty"`
	SavedAt  time.Time `json:"saved_at,omitzero"`
	Server   string    `json:"server,omitempty"` // the MySQL server it belongs to
	Store    string    `json:"store,omitempty"`  // where it is kept
}

// Retention is binlog2ch_source_binlog_retention_headroom_seconds with
// what it comes from (package retention).
type Retention struct {
	File string `json:"file"`
	// HeadroomSeconds is how long until the server may purge the file
	// (negative: due, at its next rotation); absent when Unlimited or Gone.
	HeadroomSeconds *float64 `json:"headroom_seconds,omitempty"`
	Unlimited       bool     `json:"unlimited,omitempty"` // nothing foreseen purges it (Setting: only the size limit, not reached while the binlog does not grow or the file is the active one)
	Active          bool     `json:"active,omitempty"`    // the file the server writes
	Gone            bool     `json:"gone,omitempty"`      // the server no longer lists it
	Setting         string   `json:"setting,omitempty"`   // the variable that purges it first
	MarginSeconds   float64  `json:"margin_seconds"`      // metrics.binlog_retention_margin
}

// Server is one end of replication.
type Server struct {
	Product string   `json:"product,omitempty"` // MySQL, MariaDB, ClickHouse
	Version string   `json:"version,omitempty"`
	Addr    []string `json:"addr,omitempty"`
	ID      string   `json:"id,omitempty"`      // MySQL: server_uuid or server_id
	Cluster string   `json:"cluster,omitempty"` // ClickHouse: clickhouse.cluster
	// Up: the binlog stream is connected (MySQL), the last insert, DDL
	// or ping succeeded (ClickHouse).
	Up bool `json:"up"`
}

// Totals add up every table.
type Totals struct {
	Tables            int     `json:"tables"`
	Inserted          uint64  `json:"inserted"`
	Updated           uint64  `json:"updated"`
	Deleted           uint64  `json:"deleted"`
	RowsPerSecond     float64 `json:"rows_per_second"`
	QueuedRows        int64   `json:"queued_rows"`
	TablesPending     int     `json:"tables_pending"` // with rows not yet in ClickHouse
	TablesWithErrors  int     `json:"tables_with_errors"`
	TablesFallback    int     `json:"tables_native_fallback"`
	TablesCopying     int     `json:"tables_copying"` // snapshot not complete
	SnapshotCopied    uint64  `json:"snapshot_rows_copied"`
	SnapshotEstimated uint64  `json:"snapshot_rows_estimated"`
	// States counts the tables by Table.State, Writers by Table.Writer
	// (those with one).
	States  map[string]int `json:"tables_by_state"`
	Writers map[string]int `json:"writers,omitempty"`
	// CopyCopied and CopyEstimated add up the online copies under way
	// (state copying).
	CopyCopied    uint64 `json:"copy_rows_copied"`
	CopyEstimated uint64 `json:"copy_rows_estimated"`
}

// OnlineCopies is how many tables are to be copied online, being copied
// or swapped in: every table in the copy state but the failed ones.
func (t *Totals) OnlineCopies() int {
	return t.States[StateWaiting] + t.States[StateCopying] + t.States[StateSwapping]
}

// Table states, the values of Table.State. A table ClickHouse does not
// hold whole is in the daemon's copy state (state.TableCopy, saved with
// the checkpoint): waiting, copying, swapping or failed.
const (
	// StateStreaming: ClickHouse holds all of the table, and its binlog
	// events are applied as they are read.
	StateStreaming = "streaming"
	// StateSnapshot: the initial snapshot is not complete (the table's own
	// part may be).
	StateSnapshot = "snapshot"
	// StateWaiting: to be copied online, in line for its copy (a batch
	// copies the tables waiting when it starts); a copy interrupted by a
	// restart waits with the rows it had confirmed.
	StateWaiting = "waiting"
	// StateCopying: copied online into its shadow table now, the stream
	// applying its events meanwhile.
	StateCopying = "copying"
	// StateSwapping: the copy is complete and the shadow table is being
	// swapped in for it.
	StateSwapping = "swapping"
	// StateFailed: the table cannot be applied; its events are skipped
	// until a resync or the next start copies it again.
	StateFailed = "failed"
)

// Copy is a table in the copy state: an online copy, or a failed table.
type Copy struct {
	// State is waiting, copying, swapping or failed.
	State string `json:"state"`
	// Reason is why it is copied (state.Reason*: selected, renamed,
	// add_column, resync, ...).
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"` // when the copy was asked for
	// Error is why a failed table failed, or why the last attempt at the
	// copy failed (it is tried again).
	Error string `json:"error,omitempty"`
	// Copied are the rows confirmed in ClickHouse, of Estimated (MySQL's
	// estimate; 0 while not known).
	Copied    uint64 `json:"copied"`
	Estimated uint64 `json:"estimated,omitempty"`
}

// Table is one replicated MySQL table.
type Table struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	// Rows durably written to ClickHouse since the daemon started, by
	// operation (binlog2ch_rows_total).
	Inserted      uint64  `json:"inserted"`
	Updated       uint64  `json:"updated"`
	Deleted       uint64  `json:"deleted"`
	RowsPerSecond float64 `json:"rows_per_second"`
	// LagSeconds is how far the table's rows in ClickHouse are behind
	// MySQL: since the commit of its oldest row read and not yet stored,
	// or, with none, the reader's own lag behind the source.
	LagSeconds float64 `json:"lag_seconds"`
	QueuedRows int64   `json:"queued_rows"`
	// LastFlush is when a batch of the table was last stored.
	LastFlush time.Time `json:"last_flush,omitzero"`
	// State is streaming, snapshot, or the table's Copy state.
	State string `json:"state"`
	// Writer is the state of the table's writer: running, parked (quiet
	// for a while: no goroutine or buffers until its next rows), stopped
	// (its table dropped or renamed away, failed, or the daemon stopping);
	// "" when it has had none.
	Writer   string    `json:"writer,omitempty"`
	Snapshot *Progress `json:"snapshot,omitempty"`
	// Copy is the table's online copy, nil when it is streaming.
	Copy *Copy `json:"copy,omitempty"`
	// Errors are failed inserts (retried ones included); LastError is the
	// latest.
	Errors      uint64    `json:"errors,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// NativeFallback is why the table's inserts go through clickhouse-go
	// (binlog2ch_native_fallbacks_total's reasons), "" when they do not.
	NativeFallback string `json:"native_fallback,omitempty"`
	// AmbiguousInserts counts the table's blocks that went out whole
	// before an answer the native inserter cannot read, by outcome
	// (binlog2ch_ambiguous_inserts_total's): resent, present, stopped.
	AmbiguousInserts map[string]uint64 `json:"ambiguous_inserts,omitempty"`
}

// Name is db.table.
func (t *Table) Name() string { return t.Database + "." + t.Table }

// Rows is the table's rows of every operation.
func (t *Table) Rows() uint64 { return t.Inserted + t.Updated + t.Deleted }

// Progress is a table's part in the initial snapshot: rows copied of
// MySQL's estimate.
type Progress struct {
	// State is waiting, copying, done, failed or interrupted.
	State     string `json:"state"`
	Copied    uint64 `json:"copied"`
	Estimated uint64 `json:"estimated,omitempty"`
}

// Done reports whether the table's copy is complete.
func (p *Progress) Done() bool { return p.State == "done" }

// Sort orders.
const (
	SortLag    = "lag"    // the furthest behind first, then the busiest
	SortRate   = "rate"   // rows/s, the busiest first
	SortRows   = "rows"   // rows replicated, most first
	SortQueued = "queued" // queued rows, most first
	SortErrors = "errors" // failed inserts, most first
	SortState  = "state"  // failed, swapping, copying, waiting, snapshot, streaming
	SortName   = "name"   // db.table
)

// Sorts lists the orders a Query takes.
var Sorts = []string{SortLag, SortRate, SortRows, SortQueued, SortErrors, SortState, SortName}

// stateRank orders states for SortState: what needs an operator first.
var stateRank = map[string]int{StateFailed: 0, StateSwapping: 1, StateCopying: 2, StateWaiting: 3, StateSnapshot: 4, StateStreaming: 5}

// DefaultLimit is how many tables a query without a limit shows.
const DefaultLimit = 100

// Query selects and orders the tables a status shows: with thousands of
// tables, the page and the command show the first Limit of those whose
// db.table contains Filter (case-insensitive).
type Query struct {
	Sort   string `json:"sort"`
	Filter string `json:"filter,omitempty"`
	Limit  int    `json:"limit"` // 0: every table
}

// Normalize fills a query's defaults and corrects what it cannot take.
func (q Query) Normalize() Query {
	if !slices.Contains(Sorts, q.Sort) {
		q.Sort = SortLag
	}
	q.Limit = max(q.Limit, 0)
	return q
}

// Apply returns the tables q selects, in its order, and how many matched
// before the limit. tables is not changed.
func (q Query) Apply(tables []Table) ([]Table, int) {
	q = q.Normalize()
	// Pointers are sorted, not the tables: thousands of them are copied
	// once, those shown.
	match := make([]*Table, 0, len(tables))
	f := strings.ToLower(q.Filter)
	for i := range tables {
		if f == "" || strings.Contains(strings.ToLower(tables[i].Name()), f) {
			match = append(match, &tables[i])
		}
	}
	byName := func(a, b *Table) int {
		return cmp.Or(cmp.Compare(a.Database, b.Database), cmp.Compare(a.Table, b.Table))
	}
	var order func(a, b *Table) int
	switch q.Sort {
	case SortLag:
		// Tables with nothing pending share the reader's lag: the busiest
		// of them come first.
		order = func(a, b *Table) int {
			return cmp.Or(cmp.Compare(b.LagSeconds, a.LagSeconds), cmp.Compare(b.RowsPerSecond, a.RowsPerSecond), cmp.Compare(b.Rows(), a.Rows()), byName(a, b))
		}
	case SortRate:
		order = func(a, b *Table) int {
			return cmp.Or(cmp.Compare(b.RowsPerSecond, a.RowsPerSecond), cmp.Compare(b.Rows(), a.Rows()), byName(a, b))
		}
	case SortRows:
		order = func(a, b *Table) int { return cmp.Or(cmp.Compare(b.Rows(), a.Rows()), byName(a, b)) }
	case SortQueued:
		order = func(a, b *Table) int { return cmp.Or(cmp.Compare(b.QueuedRows, a.QueuedRows), byName(a, b)) }
	case SortErrors:
		order = func(a, b *Table) int { return cmp.Or(cmp.Compare(b.Errors, a.Errors), byName(a, b)) }
	case SortState:
		order = func(a, b *Table) int { return cmp.Or(cmp.Compare(rank(a.State), rank(b.State)), byName(a, b)) }
	default:
		order = byName
	}
	slices.SortFunc(match, order)
	matched := len(match)
	if q.Limit > 0 && len(match) > q.Limit {
		match = match[:q.Limit]
	}
	out := make([]Table, len(match))
	for i, t := range match {
		out[i] = *t
	}
	return out, matched
}

// rank is a state's place in SortState; an unknown one goes last.
func rank(state string) int {
	if r, ok := stateRank[state]; ok {
		return r
	}
	return len(stateRank)
}

// settle sets each table's State from its copy and snapshot: the tables
// of an initial snapshot not complete are all in it (none streams yet).
func settle(tables []Table) {
	snapshotDone := true
	for i := range tables {
		if p := tables[i].Snapshot; p != nil && !p.Done() {
			snapshotDone = false
			break
		}
	}
	for i := range tables {
		t := &tables[i]
		switch {
		case t.Copy != nil:
			t.State = t.Copy.State
		case t.Snapshot != nil && !snapshotDone:
			t.State = StateSnapshot
		default:
			t.State = StateStreaming
		}
	}
}
