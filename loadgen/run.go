package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	binlog2ch "github.com/binlog2ch/binlog2ch"
)

// Options are insertDataTest's flags, with the same meaning, and
// binlog2ch's additions.
//
// With Tables > 1 every table gets exactly Count rows (when counting) and
// every connection writes to every table: connection i takes its
// statements from the tables in turn, round-robin, starting at table
// i*Tables/Conns, so the tables fill at the same pace whatever Conns is
// (fewer, as many, or more connections than tables). The connections
// start spread over the tables rather than side by side: side by side,
// they would follow each other round, and each table would get a burst
// of one statement per connection and then nothing for a whole round,
// where a table's statements should come evenly spaced. Each INSERT goes to
// one table and holds BatchSize rows, except a table's last one, which
// holds what is left of its Count; the run makes ceil(Count/BatchSize)
// INSERTs per table. Updates and deletes go to the table whose turn it is.
type Options struct {
	Host     string
	Port     int
	User     string
	Password string
	Schema   string
	// Table is the table to fill; with Tables > 1, its name without a
	// trailing _N is the prefix of <prefix>_1 .. <prefix>_N.
	Table     string
	Tables    int
	Count     int           // rows to insert per table; 0 with Duration: no limit
	BatchSize int           // rows per INSERT
	Conns     int           // connections, each writing to every table in turn
	Interval  time.Duration // pause between statements per connection
	// UpdateRatio and DeleteRatio are the shares of statements that update
	// or delete one existing random row.
	UpdateRatio, DeleteRatio float64
	Duration                 time.Duration // stop after this (0: when Count rows are in)
	Rate                     float64       // target inserted rows/s over all connections (0: as fast as possible)
	ExtraColumns             int
	MaxLen                   int // cap on string and blob lengths (0: a realistic long tail)
	// FullRange writes DATE and DATETIME values over MySQL's whole range
	// (years 1000 to 9999) instead of the ClickHouse-safe default; see the
	// package comment.
	FullRange    bool
	Create, Drop bool
	Seed         uint64
	// Progress is where the per-second line and the summary go (nil: none).
	Progress io.Writer
	// Inserted, if set, counts committed inserted rows as they commit, for
	// a caller that samples the run (the benchmark's lag measurement).
	Inserted *atomic.Uint64
	// Started, if set, is called once the tables are checked and just
	// before the first statement, so a caller's measurements leave out
	// the checks (one information_schema query per table).
	Started func()
	// Committed, if set, is called after each INSERT commits, with its
	// table and row count, from the connection's goroutine (so it must be
	// safe for concurrent use): a caller timing each table's rows (the
	// benchmark's many-tables lag) learns when they were committed.
	Committed func(table string, rows int)
}

// Result is what a run did.
type Result struct {
	Elapsed                    time.Duration
	Inserted, Updated, Deleted uint64 // rows
	Errors                     uint64
	// Statements run successfully, by kind.
	InsertStatements, UpdateStatements, DeleteStatements uint64
	Tables                                               []string
	FirstError                                           string
}

// RowsPerSecond is the insert rate.
func (r Result) RowsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Inserted) / r.Elapsed.Seconds()
}

// maxConsecutiveErrors is when a connection gives up; the run fails only
// when every connection has.
const maxConsecutiveErrors = 20

var tableSuffix = regexp.MustCompile(`_[0-9]+$`)

// TableNames are the tables a run fills.
func (o *Options) TableNames() []string {
	if o.Tables <= 1 {
		return []string{o.Table}
	}
	prefix := tableSuffix.ReplaceAllString(o.Table, "")
	names := make([]string, o.Tables)
	for i := range names {
		names[i] = prefix + "_" + strconv.Itoa(i+1)
	}
	return names
}

// OptionsError is a bad option, before anything ran.
type OptionsError struct{ msg string }

func (e *OptionsError) Error() string { return e.msg }

func (o *Options) validate() error {
	if err := o.check(); err != nil {
		return &OptionsError{err.Error()}
	}
	return nil
}

func (o *Options) check() error {
	switch {
	case o.Schema == "":
		return errors.New("-schema is required")
	case o.Table == "":
		return errors.New("-table is required")
	case o.Count < 0, o.BatchSize < 1, o.Conns < 1, o.Tables < 0, o.ExtraColumns < 0, o.MaxLen < 0, o.Rate < 0, o.Interval < 0, o.Duration < 0:
		return errors.New("-count, -batchsize, -conn, -tables, -extra-columns, -max-len, -rate, -time_interval and -duration must not be negative (-batchsize and -conn at least 1)")
	case o.UpdateRatio < 0 || o.DeleteRatio < 0 || o.UpdateRatio+o.DeleteRatio >= 1:
		return errors.New("-update-ratio and -delete-ratio must be >= 0 and leave room for inserts (sum below 1)")
	case o.Count == 0 && o.Duration == 0:
		return errors.New("give -count, -duration or both")
	}
	return nil
}

// Open connects to MySQL with the session settings the generated
// statements assume (UTC TIMESTAMP literals).
func Open(o *Options) (*sql.DB, error) {
	c := mysql.NewConfig()
	c.Net = "tcp"
	c.Addr = o.Host + ":" + strconv.Itoa(o.Port)
	c.User = o.User
	c.Passwd = o.Password
	c.Timeout = 10 * time.Second
	// Statements are not canceled when a run ends (see worker.run); these
	// bound one that hangs.
	c.ReadTimeout, c.WriteTimeout = time.Minute, time.Minute
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(o.Conns + 1)
	db.SetMaxIdleConns(o.Conns + 1)
	return db, nil
}

// table is one table being filled.
type table struct {
	name      string
	remaining atomic.Int64 // rows still to insert (when counting); never below 0
	maxID     atomic.Uint64
}

// claim takes up to n of the table's remaining rows and returns how many
// it took (0: none left). Rows claimed but not inserted go back with
// unclaim, so the table ends with exactly its count.
func (t *table) claim(n int) int {
	for {
		left := t.remaining.Load()
		if left <= 0 {
			return 0
		}
		k := min(int64(n), left)
		if t.remaining.CompareAndSwap(left, left-k) {
			return int(k)
		}
	}
}

func (t *table) unclaim(n int) { t.remaining.Add(int64(n)) }

// Run fills the tables and returns what it did. Statement errors are
// counted, not fatal, unless every connection fails.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	db, err := Open(&o)
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	names := o.TableNames()
	if err := prepare(ctx, db, &o, names); err != nil {
		return Result{}, err
	}
	tables := make([]*table, len(names))
	for i, n := range names {
		t := &table{name: n}
		t.remaining.Store(int64(o.Count))
		var maxID sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MAX(`id`) FROM "+ident(o.Schema)+"."+ident(n)).Scan(&maxID); err != nil {
			return Result{}, fmt.Errorf("%s.%s: %w", o.Schema, n, err)
		}
		t.maxID.Store(uint64(maxID.Int64))
		tables[i] = t
	}
	if o.Started != nil {
		o.Started() // before the clock of Duration starts
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	var st stats
	start := time.Now()
	stopProgress := st.report(o.Progress, start)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < o.Conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := worker{o: &o, db: db, tables: tables, next: startTable(i, o.Conns, len(tables)), st: &st,
				gen: NewFieldTestGen(o.Seed + uint64(i) + 1).Compact(o.MaxLen).WithExtraColumns(o.ExtraColumns).WithFullRange(o.FullRange),
				rnd: rand.New(rand.NewPCG(o.Seed, uint64(i)))}
			// -rate is over all connections. Their paces start staggered
			// (connection i a 1/Conns share of a period later): started
			// together, they would commit in bursts of Conns statements
			// and then nothing for a period, where a rate means statements
			// evenly spaced.
			if o.Rate > 0 {
				w.perConnRate = o.Rate / float64(o.Conns)
				w.paceNext = time.Now().Add(time.Duration(float64(i) * float64(o.BatchSize) / o.Rate * float64(time.Second)))
			}
			if !w.run(ctx) {
				failed.Add(1)
			}
		}(i)
	}
	wg.Wait()
	res := st.result(time.Since(start), names)
	stopProgress(res)
	if int(failed.Load()) == o.Conns {
		return res, fmt.Errorf("every connection failed; the first error: %s", res.FirstError)
	}
	return res, nil
}

// startTable is the table connection i of conns starts at: the
// connections spread evenly over the tables (see Options).
func startTable(i, conns, tables int) int { return i * tables / conns }

// prepare drops and creates the tables as asked, and checks they have the
// columns the generator writes.
func prepare(ctx context.Context, db *sql.DB, o *Options, names []string) error {
	if o.Drop || o.Create {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+ident(o.Schema)); err != nil {
			return fmt.Errorf("create database %s: %w", o.Schema, err)
		}
	}
	for _, n := range names {
		full := ident(o.Schema) + "." + ident(n)
		if o.Drop {
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+full); err != nil {
				return fmt.Errorf("drop %s.%s: %w", o.Schema, n, err)
			}
		}
		if o.Drop || o.Create {
			ddl := strings.Replace(binlog2ch.BinlogFieldTestDDL, "`binlog_field_test_1`", full, 1)
			if _, err := db.ExecContext(ctx, ddl); err != nil {
				return fmt.Errorf("create %s.%s: %w", o.Schema, n, err)
			}
		}
		have := map[string]bool{}
		rows, err := db.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", o.Schema, n)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", o.Schema, n, err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			have[c] = true
		}
		rows.Close()
		if len(have) == 0 {
			return fmt.Errorf("table %s.%s does not exist: run with -create", o.Schema, n)
		}
		for i := 1; i <= o.ExtraColumns; i++ {
			name := "extra_" + strconv.Itoa(i)
			if have[name] {
				continue
			}
			if !o.Create && !o.Drop {
				return fmt.Errorf("table %s.%s has no column %s for -extra-columns %d: run with -create to add it", o.Schema, n, name, o.ExtraColumns)
			}
			if _, err := db.ExecContext(ctx, "ALTER TABLE "+full+" ADD COLUMN "+ExtraColumnDDL(i)); err != nil {
				return fmt.Errorf("%s.%s: add %s: %w", o.Schema, n, name, err)
			}
		}
		for _, c := range append([]string{"id"}, FieldTestColumns...) {
			if !have[c] {
				return fmt.Errorf("table %s.%s has no column %s: it is not binlog_field_test; use -drop to recreate it", o.Schema, n, c)
			}
		}
	}
	return nil
}

func ident(s string) string { return string(appendIdent(nil, s)) }

// stats are a run's counters, shared by its connections.
type stats struct {
	ins, upd, del, errs       atomic.Uint64
	insStmt, updStmt, delStmt atomic.Uint64
	mu                        sync.Mutex
	firstErr                  string
}

func (s *stats) fail(err error) {
	s.errs.Add(1)
	s.mu.Lock()
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
	s.mu.Unlock()
}

func (s *stats) result(elapsed time.Duration, tables []string) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Result{Elapsed: elapsed, Inserted: s.ins.Load(), Updated: s.upd.Load(), Deleted: s.del.Load(),
		Errors: s.errs.Load(), Tables: tables, FirstError: s.firstErr,
		InsertStatements: s.insStmt.Load(), UpdateStatements: s.updStmt.Load(), DeleteStatements: s.delStmt.Load()}
}

// report prints a progress line every second; the returned function stops
// it and prints the summary.
func (s *stats) report(w io.Writer, start time.Time) func(Result) {
	if w == nil {
		return func(Result) {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				el := now.Sub(start).Seconds()
				ins, upd, del := s.ins.Load(), s.upd.Load(), s.del.Load()
				fmt.Fprintf(w, "INS %d (%.1f/s), UPD %d (%.1f/s), DEL %d (%.1f/s), ERR %d, %d sec\n",
					ins, float64(ins)/el, upd, float64(upd)/el, del, float64(del)/el, s.errs.Load(), int(el+0.5))
			}
		}
	}()
	return func(r Result) {
		close(done)
		<-stopped
		el := r.Elapsed.Seconds()
		fmt.Fprintf(w, "\nGlobal Results\n")
		fmt.Fprintf(w, "  tables:    %s\n", strings.Join(r.Tables, ", "))
		fmt.Fprintf(w, "  time:      %.1f s\n", el)
		fmt.Fprintf(w, "  inserted:  %d rows (%.0f rows/s, %.2fM rows/min)\n", r.Inserted, r.RowsPerSecond(), r.RowsPerSecond()*60/1e6)
		fmt.Fprintf(w, "  updated:   %d rows\n", r.Updated)
		fmt.Fprintf(w, "  deleted:   %d rows\n", r.Deleted)
		fmt.Fprintf(w, "  errors:    %d\n", r.Errors)
		if r.FirstError != "" {
			fmt.Fprintf(w, "  first error: %s\n", r.FirstError)
		}
	}
}

// worker is one connection's loop.
type worker struct {
	o           *Options
	db          *sql.DB
	tables      []*table // every table of the run, shared by the workers
	next        int      // index of the table whose turn is next
	st          *stats
	gen         *FieldTestGen
	rnd         *rand.Rand
	perConnRate float64
	paceNext    time.Time // rate pacing: when the next insert may start
}

// turn returns the table the next statement goes to, the tables taking
// turns; when counting, tables that have all their rows are skipped, and
// nil means every table has.
func (w *worker) turn(counting bool) *table {
	for k := 0; k < len(w.tables); k++ {
		t := w.tables[w.next]
		w.next++
		if w.next == len(w.tables) {
			w.next = 0
		}
		if !counting || t.remaining.Load() > 0 {
			return t
		}
	}
	return nil
}

// run issues statements until every table's count is in or ctx ends; it
// reports false when the connection gave up after repeated errors.
func (w *worker) run(ctx context.Context) bool {
	o := w.o
	// Statements run to completion even when the run ends meanwhile: one
	// canceled in flight may still have committed, and the counts would
	// no longer match what MySQL holds.
	stmtCtx := context.WithoutCancel(ctx)
	counting := o.Count > 0
	failures := 0
	for ctx.Err() == nil {
		t := w.turn(counting)
		if t == nil {
			return true
		}
		var err error
		switch p := w.rnd.Float64(); {
		case p < o.UpdateRatio && t.maxID.Load() > 0:
			err = w.change(stmtCtx, w.gen.Update(o.Schema, t.name, 1+w.rnd.Uint64N(t.maxID.Load())), &w.st.upd, &w.st.updStmt)
		case p >= o.UpdateRatio && p < o.UpdateRatio+o.DeleteRatio && t.maxID.Load() > 0:
			err = w.change(stmtCtx, w.gen.Delete(o.Schema, t.name, 1+w.rnd.Uint64N(t.maxID.Load())), &w.st.del, &w.st.delStmt)
		default:
			err = w.insert(ctx, stmtCtx, t, counting)
		}
		if err != nil {
			if ctx.Err() != nil {
				return true
			}
			w.st.fail(err)
			if failures++; failures >= maxConsecutiveErrors {
				return false
			}
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		failures = 0
		if o.Interval > 0 {
			sleep(ctx, o.Interval)
		}
	}
	return true
}

// insert writes one INSERT into t: BatchSize rows, or when counting what
// is left of t's count if that is less.
func (w *worker) insert(ctx, stmtCtx context.Context, t *table, counting bool) error {
	n := w.o.BatchSize
	if counting {
		// Claim the rows first, so connections never overshoot the count.
		if n = t.claim(n); n == 0 {
			return nil // another connection took the last ones
		}
	}
	if w.perConnRate > 0 {
		now := time.Now()
		if w.paceNext.Before(now) {
			w.paceNext = now
		}
		sleep(ctx, time.Until(w.paceNext))
		w.paceNext = w.paceNext.Add(time.Duration(float64(n) / w.perConnRate * float64(time.Second)))
		if ctx.Err() != nil {
			if counting {
				t.unclaim(n)
			}
			return nil
		}
	}
	res, err := w.db.ExecContext(stmtCtx, w.gen.Insert(w.o.Schema, t.name, n))
	if err != nil {
		if counting {
			t.unclaim(n) // not in: someone inserts them later
		}
		return err
	}
	w.st.ins.Add(uint64(n))
	w.st.insStmt.Add(1)
	if w.o.Inserted != nil {
		w.o.Inserted.Add(uint64(n))
	}
	if w.o.Committed != nil {
		w.o.Committed(t.name, n)
	}
	if first, err := res.LastInsertId(); err == nil && first > 0 {
		// A multi-row INSERT gets consecutive ids from the first.
		last := uint64(first) + uint64(n) - 1
		for {
			cur := t.maxID.Load()
			if last <= cur || t.maxID.CompareAndSwap(cur, last) {
				break
			}
		}
	}
	return nil
}

func (w *worker) change(ctx context.Context, stmt string, counter, statements *atomic.Uint64) error {
	res, err := w.db.ExecContext(ctx, stmt)
	if err != nil {
		return err
	}
	statements.Add(1)
	if n, err := res.RowsAffected(); err == nil {
		counter.Add(uint64(n))
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
