package cascade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Executor runs a cascade's statements in ClickHouse: *sink.ClickHouse is
// one. Each call retries its statement while the failures are transient,
// and counts them, as the writers' statements are.
type Executor interface {
	// CascadeColumns reads a ClickHouse table's columns from
	// system.columns, in order; none when the table does not exist.
	CascadeColumns(ctx context.Context, db, table string) ([]Column, error)
	// CascadeQueryRow runs a query of one row and scans it into dest.
	CascadeQueryRow(ctx context.Context, log *slog.Logger, what, query string, dest ...any) error
	// CascadeInsert runs an INSERT ... SELECT of derived rows: a part
	// like any insert's, counted so the writers' batches make room for it.
	CascadeInsert(ctx context.Context, log *slog.Logger, what, stmt string) error
}

// Column is a ClickHouse column as system.columns reports it.
type Column struct {
	Name, Type string
	SortingKey bool // is_in_sorting_key
}

// Runner runs planned cascades in ClickHouse, and is the memory of
// cascades there: each table's newest version when a cascade first
// involved it in this process, and the tables' columns. It is safe for
// concurrent use (writers forget their tables' columns).
type Runner struct {
	ch  Executor
	cfg *config.Config
	log *slog.Logger

	mu      sync.Mutex
	horizon map[schema.TableName]uint64
	// tables caches the tables' ClickHouse columns; a writer forgets its
	// table's when it changes them (ForgetTable).
	tables map[schema.TableName]*chTable
	// afterInsert, in tests, runs after each table's derived rows are
	// written (it may block: a test kills the daemon there).
	afterInsert func(schema.TableName)
}

// NewRunner runs cascades through ch, into the ClickHouse tables cfg
// names; log gets its reads' retries.
func NewRunner(ch Executor, cfg *config.Config, log *slog.Logger) *Runner {
	return &Runner{ch: ch, cfg: cfg, log: log}
}

// SetTestHook sets a function run after each table's derived rows are
// written, for tests that stop the daemon in the middle of a cascade.
func (r *Runner) SetTestHook(f func(schema.TableName)) { r.afterInsert = f }

// ForgetHorizon drops what is known of a table's newest version: it was
// copied again, at versions ahead of the reader.
func (r *Runner) ForgetHorizon(t schema.TableName) {
	r.mu.Lock()
	delete(r.horizon, t)
	r.mu.Unlock()
}

// ForgetTable drops a table's cached columns: its writer is changing
// them.
func (r *Runner) ForgetTable(t schema.TableName) {
	r.mu.Lock()
	delete(r.tables, t)
	r.mu.Unlock()
}

// Result is what one cascade derived: rows per table and action.
type Result struct {
	Rows map[schema.TableName]map[string]uint64
}

// table is a replicated table's ClickHouse columns, cached; nil when it
// has no ClickHouse table (no rows there to derive from).
func (r *Runner) table(ctx context.Context, t schema.TableName) (*chTable, error) {
	r.mu.Lock()
	ct, ok := r.tables[t]
	r.mu.Unlock()
	if ok {
		return ct, nil
	}
	ct, err := r.readTable(ctx, t)
	if err != nil || ct == nil {
		return ct, err // a table missing now may be created: not cached
	}
	r.mu.Lock()
	if r.tables == nil {
		r.tables = map[schema.TableName]*chTable{}
	}
	r.tables[t] = ct
	r.mu.Unlock()
	return ct, nil
}

func (r *Runner) readTable(ctx context.Context, t schema.TableName) (*chTable, error) {
	db := r.cfg.ClickHouseDatabase(t.Database)
	name := t.Table
	if o := r.cfg.TableOptions(t.Database, t.Table); o.Name != "" {
		name = o.Name
	}
	ct := &chTable{name: t, ref: schema.QuoteIdent(db) + "." + schema.QuoteIdent(name)}
	cols, err := r.ch.CascadeColumns(ctx, db, name)
	if err != nil {
		return nil, err
	}
	for _, c := range cols {
		switch c.Name {
		case schema.VersionColumn:
			continue
		case schema.IsDeletedColumn, schema.OpColumn:
			ct.del, ct.delType = c.Name, c.Type
			continue
		}
		col := chCol{name: c.Name, typ: c.Type, key: c.SortingKey}
		if col.key {
			ct.key = append(ct.key, col.name)
		}
		ct.cols = append(ct.cols, col)
	}
	if len(ct.cols) == 0 {
		return nil, nil
	}
	if len(ct.key) == 0 || ct.del == "" {
		return nil, &Error{Table: t, Msg: fmt.Sprintf("ClickHouse table %s has no key (a changelog table of a MySQL table without one): binlog2ch cannot tell which of its rows a cascade changed. Give the MySQL table a primary key, or exclude it", ct.ref)}
	}
	return ct, nil
}

// Run derives a planned cascade's rows in ClickHouse. The caller has
// flushed the pending rows of every table in plan.Tables, and holds back
// the event's own rows until this returns.
func (r *Runner) Run(ctx context.Context, log *slog.Logger, plan *Plan) (Result, error) {
	res := Result{Rows: map[schema.TableName]map[string]uint64{}}
	if r.cfg.ClickHouse.Cluster != "" {
		return res, &Error{At: plan.ev.At, Table: plan.ev.Table, Msg: "binlog2ch does not derive foreign-key cascades into a ClickHouse cluster yet; the children's rows would stay in ClickHouse. Exclude the child tables, or replicate them to a single server"}
	}
	tables := map[schema.TableName]*chTable{}
	replay := plan.Replay
	for _, t := range plan.Tables {
		ct, err := r.table(ctx, t)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				ce.At = plan.ev.At
			}
			return res, err
		}
		if ct == nil {
			continue
		}
		tables[t] = ct
		h, err := r.horizonOf(ctx, ct)
		if err != nil {
			return res, err
		}
		replay = replay || h >= plan.ev.First
	}
	b := newBuilder(plan, tables, replay)
	if _, cyclic := b.writeOrder(); cyclic {
		b.replay = true // a table is read after it is written
	}
	// Levels of a table reached again (a key referencing its own table)
	// exist only while the level above has rows.
	for _, n := range plan.nodes {
		if !b.live[n.id] || !n.repeat || n.parent == nil {
			continue
		}
		var cols []string
		cols = append(cols, n.fk.RefColumns...)
		sub, err := b.deletedRows(n.parent, cols)
		if err != nil {
			return res, &Error{At: plan.ev.At, Table: plan.ev.Table, Msg: err.Error()}
		}
		var count uint64
		q := "SELECT count() FROM (" + sub + ")"
		if err := r.ch.CascadeQueryRow(ctx, log, "read a cascade's rows", q, &count); err != nil {
			return res, fmt.Errorf("binlog %s: cascade of %s: %w", plan.ev.At, plan.ev.Table, err)
		}
		if count == 0 {
			b.live[n.id] = false
			for _, m := range plan.nodes {
				if m.parent != nil && !b.live[m.parent.id] {
					b.live[m.id] = false
				}
			}
		}
	}
	// Before anything is written: a text key MySQL matched by its
	// collation to a row the byte match misses stops here.
	if err := r.checkCollations(ctx, log, b); err != nil {
		return res, err
	}
	order, _ := b.writeOrder()
	for _, t := range order {
		ct := tables[t]
		d, err := b.derive(ct, b.tableNodes(t))
		if err != nil {
			return res, &Error{At: plan.ev.At, Table: plan.ev.Table, Msg: err.Error()}
		}
		ins := b.insertSQL(ct, d)
		if err := r.ch.CascadeInsert(ctx, log, "write a cascade's rows", ins); err != nil {
			return res, fmt.Errorf("binlog %s: cascade of %s into %s: %w", plan.ev.At, plan.ev.Table, t, err)
		}
		// What was written, for the metric: the rows at Ve (reading only
		// _version, and the flags of the rows it finds).
		var dead, live uint64
		q := b.countSQL(ct)
		if err := r.ch.CascadeQueryRow(ctx, log, "count a cascade's rows", q, &dead, &live); err != nil {
			return res, fmt.Errorf("binlog %s: cascade of %s into %s: %w", plan.ev.At, plan.ev.Table, t, err)
		}
		counts := map[string]uint64{}
		switch {
		case d.del != "0":
			counts[ActionDelete], counts[ActionSetNull] = dead, live
		case d.upd != "0":
			counts[ActionUpdate] = live // the tombstones are of old sorting keys
		default:
			counts[ActionSetNull] = live
		}
		for k, n := range counts {
			if n == 0 {
				delete(counts, k)
			}
		}
		if len(counts) == 0 {
			continue
		}
		res.Rows[t] = counts
		if hook := r.afterInsert; hook != nil {
			hook(t)
		}
	}
	log.Debug("cascade derived", "parent", plan.ev.Table.String(), "binlog", plan.ev.At.String(), "rows", res.Rows, "replay", b.replay)
	return res, nil
}

// horizonOf is a table's newest version when a cascade first involved it
// in this process: rows at or above an event's first version that this
// process did not write can only come from before it started (a replay).
func (r *Runner) horizonOf(ctx context.Context, t *chTable) (uint64, error) {
	r.mu.Lock()
	h, ok := r.horizon[t.name]
	r.mu.Unlock()
	if ok {
		return h, nil
	}
	if err := r.ch.CascadeQueryRow(ctx, r.log, "read a table's newest version", "SELECT max(_version) FROM "+t.ref, &h); err != nil {
		return 0, err
	}
	r.mu.Lock()
	if r.horizon == nil {
		r.horizon = map[schema.TableName]uint64{}
	}
	r.horizon[t.name] = h
	r.mu.Unlock()
	return h, nil
}
