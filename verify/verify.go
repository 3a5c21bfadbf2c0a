package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Table statuses.
const (
	StatusOK       = "ok"
	StatusMismatch = "mismatch"
	StatusError    = "error"
)

// Comparison methods.
const (
	MethodChecksum = "checksum" // counts and row checksums per key range
	MethodCount    = "count"    // row counts only
)

// Options tune a verification. The zero value is usable.
type Options struct {
	// Tables limits the run to these tables; empty: every replicated table
	// (within Patterns).
	Tables []schema.TableName
	// Patterns limits the run to the replicated tables, and the extra
	// ClickHouse tables, whose MySQL names match one (db.table globs as
	// tables.include takes them); empty: all, or those of Tables.
	Patterns []string
	// Chunk is the number of rows per key range (default 100000).
	Chunk int
	// Retries is how often a mismatched chunk is compared again after the
	// daemon's checkpoint passed the MySQL position (default 3; -1: none).
	Retries int
	// CatchUp bounds each wait for the checkpoint (default 30s).
	CatchUp time.Duration
	// MaxDiffs is how many differing keys a table reports (default 10).
	MaxDiffs int
	Log      *slog.Logger
}

func (o *Options) defaults() {
	if o.Chunk <= 0 {
		o.Chunk = 100000
	}
	if o.Retries == 0 {
		o.Retries = 3
	}
	if o.CatchUp <= 0 {
		o.CatchUp = 30 * time.Second
	}
	if o.MaxDiffs <= 0 {
		o.MaxDiffs = 10
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Report is the outcome of a verification.
type Report struct {
	OK         bool `json:"ok"`
	Mismatches int  `json:"mismatches"`
	Errors     int  `json:"errors"`
	// Error is what stopped the whole run (a server that cannot be reached).
	Error  string         `json:"error,omitempty"`
	Tables []*TableReport `json:"tables"`
	// ExtraTables are binlog2ch's ClickHouse tables in the replicated
	// databases that no replicated MySQL table writes.
	ExtraTables []*ExtraTable `json:"extra_tables"`
}

// TableReport is one table's outcome.
type TableReport struct {
	Database           string    `json:"database"`
	Table              string    `json:"table"`
	ClickHouseDatabase string    `json:"clickhouse_database"`
	ClickHouseTable    string    `json:"clickhouse_table"`
	Method             string    `json:"method,omitempty"`
	Status             string    `json:"status"`
	RowsMySQL          uint64    `json:"rows_mysql"`
	RowsClickHouse     int64     `json:"rows_clickhouse"`
	Chunks             int       `json:"chunks"`
	MismatchedChunks   int       `json:"mismatched_chunks"`
	Diffs              []RowDiff `json:"diffs,omitempty"`
	// MoreDiffs is set when there were differing keys beyond Diffs.
	MoreDiffs bool     `json:"more_diffs,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Problems of a differing row.
const (
	MissingInClickHouse = "missing in ClickHouse"
	ExtraInClickHouse   = "extra in ClickHouse"
	DifferentValues     = "different values"
)

// RowDiff is one differing primary key.
type RowDiff struct {
	Key     string       `json:"key"` // col=value, ...
	Problem string       `json:"problem"`
	Columns []ColumnDiff `json:"columns,omitempty"`
}

// ColumnDiff is a column whose canonical values differ.
type ColumnDiff struct {
	Column     string `json:"column"`
	MySQL      string `json:"mysql"`
	ClickHouse string `json:"clickhouse"`
	Note       string `json:"note,omitempty"`
}

// Run compares every selected table. The error is for what stops the whole
// run (a server that cannot be reached); a table's own failure is in its
// report.
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Report, error) {
	opts.defaults()
	my, err := source.OpenMySQL(ctx, cfg, opts.Log)
	if err != nil {
		return nil, err
	}
	defer my.Close()
	ch, err := chconn.Open(ctx, cfg, opts.Log)
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	caps, err := schema.DetectCapabilities(ctx, ch)
	if err != nil {
		return nil, err
	}
	names, patterns := opts.Tables, opts.Patterns
	if len(names) == 0 {
		all, err := catalog.ListTables(ctx, my, cfg)
		if err != nil {
			return nil, err
		}
		for _, n := range all {
			if len(patterns) == 0 || config.MatchPatterns(patterns, n.Database, n.Table) {
				names = append(names, n)
			}
		}
	} else if len(patterns) == 0 {
		for _, n := range names {
			patterns = append(patterns, n.String())
		}
	}
	v := &verifier{cfg: cfg, opts: opts, my: my, ch: ch, caps: caps, log: opts.Log}
	rep := &Report{OK: true, Tables: []*TableReport{}, ExtraTables: []*ExtraTable{}}
	for _, n := range names {
		start := time.Now()
		tr := v.table(ctx, n)
		v.log.Info("table verified", "table", n.String(), "status", tr.Status, "rows_mysql", tr.RowsMySQL,
			"rows_clickhouse", tr.RowsClickHouse, "chunks", tr.Chunks, "duration", time.Since(start).Round(time.Millisecond))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch tr.Status {
		case StatusMismatch:
			rep.Mismatches++
			rep.OK = false
		case StatusError:
			rep.Errors++
			rep.OK = false
		}
		rep.Tables = append(rep.Tables, tr)
	}
	extras, err := v.extraTables(ctx, patterns)
	if err != nil {
		return nil, err
	}
	for _, x := range extras {
		v.log.Warn("extra table in ClickHouse", "table", x.name(), "mysql", x.MySQL, "reason", x.Reason)
		rep.ExtraTables = append(rep.ExtraTables, x)
		rep.OK = false
	}
	return rep, nil
}

type verifier struct {
	cfg  *config.Config
	opts Options
	my   *sql.DB
	ch   driver.Conn
	caps schema.Capabilities
	log  *slog.Logger
}

// plan is what one table's comparison needs, built once from the mapping.
type plan struct {
	src    *schema.Table
	target *schema.Target
	myFrom string // `db`.`t` in MySQL
	chFrom string // `db`.`t` in ClickHouse
	cols   []column
	key    []column // key columns, text keys as hex so they print
	prefix []int    // source indexes of the chunkable key prefix
	myHash string   // per-row hash, MySQL
	chHash string   // per-row hash, ClickHouse
	myKey  string   // key text, MySQL
	chKey  string   // key text, ClickHouse
	order  string   // MySQL ORDER BY of the key
}

func (v *verifier) table(ctx context.Context, n schema.TableName) *TableReport {
	tr := &TableReport{Database: n.Database, Table: n.Table, ClickHouseDatabase: v.cfg.ClickHouseDatabase(n.Database), ClickHouseTable: n.Table}
	fail := func(err error) *TableReport {
		tr.Status = StatusError
		tr.Error = err.Error()
		v.log.Error("verify failed", "table", n.String(), "error", err)
		return tr
	}
	p, err := v.plan(ctx, n, tr)
	if err != nil {
		return fail(err)
	}
	if p.target.Mode == schema.ModeChangelog {
		tr.Method = MethodCount
		tr.Notes = append(tr.Notes, "changelog table: ClickHouse holds events, not rows; compared by count only (insert events minus delete events)")
		if err := v.countOnly(ctx, p, tr); err != nil {
			return fail(err)
		}
		return tr
	}
	tr.Method = MethodChecksum
	if len(p.prefix) == 0 {
		tr.Notes = append(tr.Notes, "the key's first column orders differently in MySQL and ClickHouse (text with a collation, or another type without a shared order): compared as one chunk")
	}
	if err := v.checksums(ctx, p, tr); err != nil {
		return fail(err)
	}
	return tr
}

func (v *verifier) plan(ctx context.Context, n schema.TableName, tr *TableReport) (*plan, error) {
	src, err := schema.LoadTable(ctx, v.my, n.Database, n.Table)
	if err != nil {
		return nil, fmt.Errorf("MySQL %s: %w", n, err)
	}
	target, err := schema.Map(src, v.cfg.ClickHouseDatabase(n.Database), v.caps, v.cfg.SchemaOptions(), v.cfg.TableOptions(n.Database, n.Table))
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", n, err)
	}
	tr.ClickHouseDatabase, tr.ClickHouseTable = target.Database, target.Name
	var exists uint64
	if err := v.ch.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", target.Database, target.Name).Scan(&exists); err != nil {
		return nil, fmt.Errorf("ClickHouse %s: %w", target.FullName(), err)
	}
	if exists == 0 {
		return nil, fmt.Errorf("ClickHouse table %s does not exist (has binlog2ch run or fullsync created it?)", target.FullName())
	}
	p := &plan{src: src, target: target,
		myFrom: quoteMySQL(n.Database) + "." + quoteMySQL(n.Table),
		chFrom: schema.QuoteIdent(target.Database) + "." + schema.QuoteIdent(target.ReadName())}
	if target.Mode == schema.ModeChangelog {
		return p, nil
	}
	var myCols, chCols []string
	for _, tc := range target.Columns {
		if tc.Meta != schema.MetaNone {
			continue
		}
		c := &src.Columns[tc.Source]
		col, err := canonical(c, tc.Type, v.caps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		p.cols = append(p.cols, col)
		myCols, chCols = append(myCols, col.mysql), append(chCols, col.ch)
	}
	if excluded := len(src.Columns) - len(p.cols); excluded > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d column(s) excluded by tables.overrides are not compared", excluded))
	}
	keyIdx := src.PrimaryKey
	if len(keyIdx) == 0 {
		keyIdx = src.UniqueKey
	}
	var myKey, chKey, order []string
	chunkable := true
	for _, i := range keyIdx {
		c := &src.Columns[i]
		t := target.Columns[target.SourceToTarget[i]].Type
		col, err := canonical(c, t, v.caps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		keyHexForm(&col, c)
		p.key = append(p.key, col)
		myKey, chKey = append(myKey, col.mysql), append(chKey, col.ch)
		order = append(order, quoteMySQL(c.Name))
		chunkable = chunkable && keyOrderSafe(c, t)
		if chunkable {
			p.prefix = append(p.prefix, i)
		}
	}
	p.myHash, p.chHash = rowHashMySQL(concatMySQL(myCols)), rowHashClickHouse(concatClickHouse(chCols))
	p.myKey, p.chKey = concatMySQL(myKey), concatClickHouse(chKey)
	p.order = strings.Join(order, ", ")
	return p, nil
}

func quoteMySQL(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func (v *verifier) countOnly(ctx context.Context, p *plan, tr *TableReport) error {
	if err := v.my.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+p.myFrom).Scan(&tr.RowsMySQL); err != nil {
		return fmt.Errorf("MySQL %s: count: %w", p.src.FullName(), err)
	}
	q := "SELECT toInt64(countIf(" + schema.QuoteIdent(schema.OpColumn) + " = 'insert')) - toInt64(countIf(" + schema.QuoteIdent(schema.OpColumn) + " = 'delete')) FROM " + p.chFrom
	if err := v.ch.QueryRow(ctx, q).Scan(&tr.RowsClickHouse); err != nil {
		return fmt.Errorf("ClickHouse %s: count: %w", p.target.FullName(), err)
	}
	tr.Chunks = 1
	tr.Status = StatusOK
	if tr.RowsClickHouse != int64(tr.RowsMySQL) {
		tr.Status, tr.MismatchedChunks = StatusMismatch, 1
	}
	return nil
}

// bound is a chunk's key range on the prefix columns: (lower, upper], a
// nil side unbounded.
type bound struct{ lower, upper []string }

// where renders the range as a condition of each dialect.
func (p *plan) where(b bound) (my, ch string, err error) {
	var myParts, chParts []string
	for _, side := range []struct {
		vals    []string
		op      string
		include bool
	}{{b.lower, ">", false}, {b.upper, "<", true}} {
		if side.vals == nil {
			continue
		}
		m, c, err := p.compare(side.vals, side.op, side.include)
		if err != nil {
			return "", "", err
		}
		myParts, chParts = append(myParts, "("+m+")"), append(chParts, "("+c+")")
	}
	if len(myParts) == 0 {
		return "1", "1", nil
	}
	return strings.Join(myParts, " AND "), strings.Join(chParts, " AND "), nil
}

// compare is the lexicographic comparison (prefix op vals), spelled out
// with AND/OR, which both servers' range analysis understands.
func (p *plan) compare(vals []string, op string, include bool) (string, string, error) {
	var myOr, chOr []string
	var myEq, chEq []string
	for k, i := range p.prefix {
		c := &p.src.Columns[i]
		t := p.target.Columns[p.target.SourceToTarget[i]].Type
		ml, cl, err := keyLiteral(c, t, vals[k])
		if err != nil {
			return "", "", err
		}
		myOr = append(myOr, strings.Join(append(append([]string{}, myEq...), quoteMySQL(c.Name)+" "+op+" "+ml), " AND "))
		chOr = append(chOr, strings.Join(append(append([]string{}, chEq...), schema.QuoteIdent(c.Name)+" "+op+" "+cl), " AND "))
		myEq = append(myEq, quoteMySQL(c.Name)+" = "+ml)
		chEq = append(chEq, schema.QuoteIdent(c.Name)+" = "+cl)
	}
	if include {
		myOr = append(myOr, strings.Join(myEq, " AND "))
		chOr = append(chOr, strings.Join(chEq, " AND "))
	}
	return "(" + strings.Join(myOr, ") OR (") + ")", "(" + strings.Join(chOr, ") OR (") + ")", nil
}

// nextBoundary is the prefix of the Chunk-th key after lower, or nil when
// fewer rows remain: a keyset scan, so no chunk reads more than Chunk keys.
func (v *verifier) nextBoundary(ctx context.Context, p *plan, lower []string) ([]string, error) {
	if len(p.prefix) == 0 {
		return nil, nil
	}
	var cols []string
	for _, i := range p.prefix {
		cols = append(cols, quoteMySQL(p.src.Columns[i].Name))
	}
	where := "1"
	if lower != nil {
		m, _, err := p.compare(lower, ">", false)
		if err != nil {
			return nil, err
		}
		where = m
	}
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT 1 OFFSET %d", strings.Join(cols, ", "), p.myFrom, where, strings.Join(cols, ", "), v.opts.Chunk-1)
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	err := v.my.QueryRowContext(ctx, q).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("MySQL %s: chunk boundary after %v: %w", p.src.FullName(), lower, err)
	}
	out := make([]string, len(vals))
	for i, s := range vals {
		out[i] = s.String
	}
	return out, nil
}

// aggregate is a chunk's row count and checksum (sum of row hashes mod 2^64).
type aggregate struct {
	rows uint64
	sum  uint64
}

func (v *verifier) checksums(ctx context.Context, p *plan, tr *TableReport) error {
	var lower []string
	for {
		upper, err := v.nextBoundary(ctx, p, lower)
		if err != nil {
			return err
		}
		b := bound{lower: lower, upper: upper}
		my, ch, err := v.compareChunk(ctx, p, b, tr)
		if err != nil {
			return err
		}
		// The open range after the last boundary is compared for extra
		// rows in ClickHouse, but counted only when it has rows.
		if upper != nil || lower == nil || my.rows > 0 || ch.rows > 0 {
			tr.Chunks++
		}
		tr.RowsMySQL += my.rows
		tr.RowsClickHouse += int64(ch.rows)
		if my != ch {
			tr.MismatchedChunks++
			if len(tr.Diffs) < v.opts.MaxDiffs {
				if err := v.narrow(ctx, p, b, max(my.rows, ch.rows), tr); err != nil {
					return err
				}
			} else {
				tr.MoreDiffs = true
			}
		}
		if upper == nil {
			break
		}
		lower = upper
	}
	tr.Status = StatusOK
	if tr.MismatchedChunks > 0 {
		tr.Status = StatusMismatch
	}
	return nil
}

// compareChunk aggregates one chunk on both sides. While CDC runs, a
// mismatch may only be rows in flight: the chunk is compared again, the
// ClickHouse side only once the daemon's checkpoint passed the MySQL
// position read after the MySQL side, up to Retries times; only a mismatch
// that persists is returned as one.
func (v *verifier) compareChunk(ctx context.Context, p *plan, b bound, tr *TableReport) (aggregate, aggregate, error) {
	myWhere, chWhere, err := p.where(b)
	if err != nil {
		return aggregate{}, aggregate{}, err
	}
	// First both sides at once: nothing to wait for yet.
	type result struct {
		a   aggregate
		err error
	}
	chDone := make(chan result, 1)
	go func() {
		a, err := v.clickhouseAggregate(ctx, p, chWhere)
		chDone <- result{a, err}
	}()
	my, myErr := v.mysqlAggregate(ctx, p, myWhere)
	r := <-chDone
	ch := r.a
	if err := errors.Join(myErr, r.err); err != nil || my == ch {
		return my, ch, err
	}
	for attempt := 1; attempt <= v.opts.Retries; attempt++ {
		v.log.Debug("chunk differs; comparing again once the checkpoint passes MySQL's position", "table", p.src.FullName(), "attempt", attempt)
		prevMy, prevCh := my, ch
		if my, err = v.mysqlAggregate(ctx, p, myWhere); err != nil {
			return my, ch, err
		}
		pos, err := source.CurrentPosition(ctx, v.my)
		if err != nil {
			addNote(tr, "cannot read MySQL's binlog position, so mismatches were not re-checked: "+err.Error())
			return my, ch, nil
		}
		caught, note, err := v.waitCheckpoint(ctx, pos)
		if err != nil {
			return my, ch, err
		}
		if !caught {
			addNote(tr, note)
		}
		if ch, err = v.clickhouseAggregate(ctx, p, chWhere); err != nil || my == ch || !caught {
			return my, ch, err
		}
		if my == prevMy && ch == prevCh {
			break // nothing changed on either side: no rows in flight
		}
	}
	return my, ch, nil
}

func addNote(tr *TableReport, note string) {
	for _, n := range tr.Notes {
		if n == note {
			return
		}
	}
	tr.Notes = append(tr.Notes, note)
}

func (v *verifier) mysqlAggregate(ctx context.Context, p *plan, where string) (aggregate, error) {
	q := "SELECT COUNT(*), CAST(COALESCE(MOD(SUM(" + p.myHash + "), 18446744073709551616), 0) AS CHAR) FROM " + p.myFrom + " WHERE " + where
	var a aggregate
	var sum string
	if err := v.my.QueryRowContext(ctx, q).Scan(&a.rows, &sum); err != nil {
		return a, fmt.Errorf("MySQL %s: checksum: %w", p.src.FullName(), err)
	}
	var err error
	if a.sum, err = parseSum(sum); err != nil {
		return a, fmt.Errorf("MySQL %s: checksum: %w", p.src.FullName(), err)
	}
	return a, nil
}

// parseSum reads MySQL's checksum, a DECIMAL below 2^64.
func parseSum(s string) (uint64, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || !n.IsUint64() {
		return 0, fmt.Errorf("unexpected sum %q", s)
	}
	return n.Uint64(), nil
}

// chRows is the current rows of the ClickHouse table in the range: FINAL
// within the key range (all versions of a key share its range), then
// without the deleted ones.
func (p *plan) chRows(where string) string {
	return "(SELECT * FROM " + p.chFrom + " FINAL WHERE " + where + ") WHERE " + schema.QuoteIdent(schema.IsDeletedColumn) + " = 0"
}

func (v *verifier) clickhouseAggregate(ctx context.Context, p *plan, where string) (aggregate, error) {
	q := "SELECT count(), sum(" + p.chHash + ") FROM " + p.chRows(where)
	var a aggregate
	if err := v.ch.QueryRow(ctx, q).Scan(&a.rows, &a.sum); err != nil {
		return a, fmt.Errorf("ClickHouse %s: checksum: %w", p.target.FullName(), err)
	}
	return a, nil
}

// waitCheckpoint waits until the daemon's checkpoint (state_dir) is at or
// past pos. It returns false and a note when there is no checkpoint to wait
// for, or it does not get there within CatchUp.
func (v *verifier) waitCheckpoint(ctx context.Context, pos source.Position) (bool, string, error) {
	deadline := time.Now().Add(v.opts.CatchUp)
	for {
		cp, err := state.Read(ctx, v.cfg, v.ch)
		if err != nil {
			return false, "", err
		}
		if cp == nil {
			return false, fmt.Sprintf("no checkpoint (%s store): mismatches were not re-checked against a running daemon", v.cfg.State.Store), nil
		}
		if !cp.Position.Before(pos) {
			return true, "", nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("the daemon's checkpoint (%s) did not reach MySQL's position %s within %s: is binlog2ch run running? ClickHouse may just be behind", cp.Position, pos, v.opts.CatchUp), nil
		}
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
