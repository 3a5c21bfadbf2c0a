package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/loadgen"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The scenarios' phases: each drives loadgen and the daemon and counts what
// reaches ClickHouse; measure.go turns the counts into lag and rates.

// catchUp fills a table with the daemon stopped, then starts it and times
// it until ClickHouse holds every row; then ClickHouse's own client
// inserts the same rows (ceiling.go), its inserts alternated with the
// same catch-up again (catchUpAgain).
func (r *run) catchUp(ctx context.Context) (Scenario, error) {
	lo := r.loadOptions()
	lo.Table, lo.Count = "binlog_field_test_1", r.o.CatchUpRows
	saved, err := r.saveState()
	if err != nil {
		return Scenario{}, err
	}
	defer os.RemoveAll(saved)
	s, err := r.fillAndCatchUp(ctx, ScenarioCatchUp, lo)
	if err != nil {
		return s, err
	}
	fmt.Fprintf(r.log, "catch-up: %d rows in %.1fs; ClickHouse's own client inserting the same rows from a Native dump, alternated with the catch-up again\n", s.Rows, s.Seconds)
	again := func(ctx context.Context) (CatchUpRun, error) { return r.catchUpAgain(ctx, saved, lo.Table, s.Rows) }
	c, why, err := r.ceiling(ctx, lo.Table, s, again)
	if err != nil {
		return s, err
	}
	s.Ceiling, s.NoCeiling = c, why
	return s, nil
}

// CatchUpRun is one catch-up of the catch-up scenario's rows.
type CatchUpRun struct {
	Seconds     float64 `json:"seconds"`
	RowsPerMin  float64 `json:"rows_per_min"`
	CPUPerMRows float64 `json:"daemon_cpu_seconds_per_million_rows"`
}

// saveState copies the daemon's state directory (the daemon stopped), to
// start a catch-up again from there (catchUpAgain).
func (r *run) saveState() (string, error) {
	saved := filepath.Join(r.o.Dir, "state.saved")
	if err := os.RemoveAll(saved); err != nil {
		return "", err
	}
	return saved, copyFiles(filepath.Join(r.o.Dir, "state"), saved)
}

// catchUpAgain times the catch-up of rows of table again: the daemon
// stopped, ClickHouse's database dropped and the state saved before the
// rows were written put back, then the daemon started and timed until
// ClickHouse holds them all. It is left running.
func (r *run) catchUpAgain(ctx context.Context, saved, table string, rows uint64) (CatchUpRun, error) {
	if err := r.stopDaemon(); err != nil {
		return CatchUpRun{}, err
	}
	if err := r.ch.Exec(ctx, "DROP DATABASE IF EXISTS "+r.db+r.onCluster()); err != nil {
		return CatchUpRun{}, err
	}
	if err := r.restoreState(saved); err != nil {
		return CatchUpRun{}, err
	}
	s := Scenario{Name: ScenarioCatchUp, Rows: rows}
	if err := r.timeCatchUp(ctx, &s, table); err != nil {
		return CatchUpRun{}, err
	}
	fmt.Fprintf(r.log, "catch-up again: %.2fM rows/min, %.2f CPU-s per million rows\n", s.RowsPerMin/1e6, s.CPUPerMRows)
	return CatchUpRun{Seconds: s.Seconds, RowsPerMin: s.RowsPerMin, CPUPerMRows: s.CPUPerMRows}, nil
}

// restoreState stops the daemon and puts back the state directory
// saveState saved.
func (r *run) restoreState(saved string) error {
	if err := r.stopDaemon(); err != nil {
		return err
	}
	dir := filepath.Join(r.o.Dir, "state")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return copyFiles(saved, dir)
}

// copyFiles copies the files of directory from into a new directory to
// (the state directory holds no subdirectories).
func copyFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return fmt.Errorf("copy %s: %s is not a file", from, e.Name())
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// fill stops the daemon and writes lo's rows: the scenario with its rows
// and the binlog bytes they took. what says what the rows are to the log.
func (r *run) fill(ctx context.Context, name string, lo *loadgen.Options, what string) (Scenario, loadgen.Result, error) {
	s := Scenario{Name: name}
	if err := r.stopDaemon(); err != nil {
		return s, loadgen.Result{}, err
	}
	fmt.Fprintf(r.log, "%s: writing %d rows%s with the daemon stopped\n", name, lo.Count, what)
	binlog0, err := r.binlogBytes(ctx)
	if err != nil {
		return s, loadgen.Result{}, err
	}
	res, err := loadgen.Run(ctx, *lo)
	if err != nil {
		return s, res, err
	}
	s.Rows = res.Inserted
	if s.BinlogBytesPerRow, err = r.binlogPerRow(ctx, binlog0, s.Rows); err != nil {
		return s, res, err
	}
	return s, res, nil
}

// fillAndCatchUp writes lo's rows with the daemon stopped, then starts it
// and times it until ClickHouse holds them all. The daemon is left
// running.
func (r *run) fillAndCatchUp(ctx context.Context, name string, lo *loadgen.Options) (Scenario, error) {
	s, res, err := r.fill(ctx, name, lo, "")
	if err != nil {
		return s, err
	}
	fmt.Fprintf(r.log, "%s: %d rows in MySQL (%.0f rows/s); starting the daemon\n", name, res.Inserted, res.RowsPerSecond())
	return s, r.timeCatchUp(ctx, &s, lo.Table)
}

// timeCatchUp starts the daemon and times it until ClickHouse holds the
// scenario's rows of table. The daemon is left running.
func (r *run) timeCatchUp(ctx context.Context, s *Scenario, table string) error {
	cpu0 := r.chCPU(ctx)
	ev0, err := r.events(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := r.startDaemon(ctx); err != nil {
		return err
	}
	m := r.newMeter()
	var counts []sample
	for {
		n, err := r.count(ctx, table)
		if err != nil {
			return err
		}
		counts = append(counts, sample{time.Since(start), n})
		if n >= s.Rows {
			break
		}
		if err := r.alive(); err != nil {
			return err
		}
		if time.Since(start) > 30*time.Minute {
			return fmt.Errorf("%s: ClickHouse holds %d of %d rows after 30 minutes", s.Name, n, s.Rows)
		}
		time.Sleep(sampleEvery)
	}
	el := time.Since(start)
	s.CHCPUSeconds = (r.chCPU(ctx).cpu - cpu0.cpu).Seconds()
	if ev, err := r.events(ctx); err == nil {
		s.CHMergedRows = ev["MergedRows"] - ev0["MergedRows"]
		s.CHMergeSeconds = float64(ev["MergesTimeMilliseconds"]-ev0["MergesTimeMilliseconds"]) / 1000
	}
	s.RowsInCH = counts[len(counts)-1].n
	s.Seconds = el.Seconds()
	s.RowsPerMin = float64(s.Rows) / el.Minutes()
	s.CPUPerMRows, s.PeakRSSMiB = m.read(s.Rows)
	s.SystemCPUSeconds, s.MinorFaults = m.memory()
	s.ReadBytesPerRow, s.WrittenBytesPerRow = m.bytes(s.Rows)
	s.Series = series(nil, counts)
	s.MySQLRows = writtenBySecond(len(s.Series), []sample{{0, s.Rows}}) // all written before the start
	s.Parts = r.parts(ctx, table)
	return nil
}

// sample is a row count at a moment of a phase.
type sample struct {
	t time.Duration
	n uint64
}

// live runs loadgen into a new table at rate rows/s (0: as fast as it
// goes) while the daemon follows, and measures the lag.
func (r *run) live(ctx context.Context, table string, rate float64) (Scenario, error) {
	name := "live, max rate"
	if rate > 0 {
		name = fmt.Sprintf("live, %.0f rows/s", rate)
	}
	s := Scenario{Name: name}
	lo := r.loadOptions()
	lo.Table, lo.Rate, lo.Duration = table, rate, r.o.LiveDuration
	var inserted atomic.Uint64
	lo.Inserted = &inserted
	// The table exists before the clock starts, so the phase measures rows
	// (created from the DDL, not LIKE the catch-up table: live may run
	// without catch-up).
	if _, err := r.my.ExecContext(ctx, strings.Replace(binlog2ch.BinlogFieldTestDDL, "`binlog_field_test_1`", "`"+r.db+"`.`"+table+"`", 1)); err != nil {
		return s, err
	}
	// Rows timed to the millisecond where the table's directory can be
	// watched here (arrivals.go): sampling ClickHouse's count every
	// sampleEvery adds up to a sample period plus the query to each
	// lag, too coarse for a lag of a few hundred milliseconds. The
	// watcher needs the table and a part: one warm-up row first.
	var (
		arr     *partWatcher
		warm    uint64
		mu      sync.Mutex
		commits []time.Time
	)
	if r.o.Cluster == "" {
		wo := *lo
		wo.Count, wo.BatchSize, wo.Rate, wo.Duration, wo.Inserted, wo.Progress = 1, 1, 0, 0, nil, nil
		if _, err := loadgen.Run(ctx, wo); err != nil {
			return s, err
		}
		warm = 1
		if err := r.awaitRows(ctx, "^"+table+"$", warm, 10*time.Minute); err != nil {
			return s, fmt.Errorf("%s: warm-up: %w", name, err)
		}
		w, err := r.newPartWatcher(ctx, "^"+table+"$", 1)
		if err != nil {
			fmt.Fprintf(r.log, "%s: cannot watch the table's directory (%v); lag from ClickHouse's count sampled every %s\n", name, err, sampleEvery)
		} else {
			arr = w
			defer arr.stop()
			lo.Committed = func(_ string, rows int) {
				now := time.Now()
				mu.Lock()
				for range rows {
					commits = append(commits, now)
				}
				mu.Unlock()
			}
		}
	}
	fmt.Fprintf(r.log, "%s: loadgen for %s while the daemon follows\n", name, r.o.LiveDuration)
	m := r.newMeter()
	cpu0 := r.chCPU(ctx)
	start := time.Now()
	type result struct {
		res loadgen.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := loadgen.Run(ctx, *lo)
		done <- result{res, err}
	}()
	var mysqlSide, chSide []sample
	var lr result
	finished := false
	for {
		t := time.Since(start)
		mysqlSide = append(mysqlSide, sample{t, inserted.Load()})
		n, err := r.count(ctx, table)
		if err != nil {
			return s, err
		}
		chSide = append(chSide, sample{time.Since(start), n})
		if !finished {
			select {
			case lr = <-done:
				finished = true
				if lr.err != nil {
					return s, lr.err
				}
				s.Rows = lr.res.Inserted
				s.LoadRowsPerMin = lr.res.RowsPerSecond() * 60
			default:
			}
		}
		if finished && n >= s.Rows+warm {
			break
		}
		if err := r.alive(); err != nil {
			return s, err
		}
		if finished && time.Since(start) > r.o.LiveDuration+10*time.Minute {
			return s, fmt.Errorf("%s: ClickHouse holds %d of %d rows 10 minutes after the load stopped", name, n, s.Rows)
		}
		time.Sleep(sampleEvery)
	}
	el := chSide[len(chSide)-1].t
	s.CHCPUSeconds = (r.chCPU(ctx).cpu - cpu0.cpu).Seconds()
	s.RowsInCH = chSide[len(chSide)-1].n - warm
	s.Seconds = el.Seconds()
	s.RowsPerMin = float64(s.Rows) / el.Minutes()
	s.CPUPerMRows, s.PeakRSSMiB = m.read(s.Rows)
	lags := lagSamples(mysqlSide, chSide)
	s.Lag = summarize(lags)
	s.Lag.Source = "ClickHouse's count sampled every " + sampleEvery.String()
	s.Series = series(lags, chSide)
	if arr != nil {
		mu.Lock()
		want := map[string]uint64{table: uint64(len(commits))}
		mu.Unlock()
		if _, err := arr.awaitAll(ctx, want, 0, r.alive); err != nil {
			return s, fmt.Errorf("%s: watching the table's parts: %w", name, err)
		}
		exact, _ := tableLags(start, map[string][]time.Time{table: commits}, arr.arrivals())
		if len(exact) == 0 {
			return s, fmt.Errorf("%s: no row's arrival observed in the table's directory", name)
		}
		s.SampledLag = s.Lag
		s.Lag = summarize(exact)
		s.Lag.Source = "each row, by the part it arrived in (inotify)"
		s.Series = arrivalSeries(start, start.Add(el), exact, arr.arrivals())
	}
	s.MySQLRows = writtenBySecond(len(s.Series), mysqlSide)
	kept := s.Lag.Max <= keptUpLag.Seconds()
	s.KeptUp = &kept
	s.Parts = r.parts(ctx, table) - warm
	return s, nil
}

// count is the rows ClickHouse holds in table (0 before it exists). On
// one server it sums the rows of the table's active parts, which
// system.parts reads from each part's metadata: 18.16 has no trivial
// count, and count() polled every sampleEvery through a catch-up read a
// column of every part, 100-200 MB of files in 50 queries, work the
// ceiling's insert is spared.
func (r *run) count(ctx context.Context, table string) (uint64, error) {
	var n uint64
	if r.o.Cluster == "" {
		err := r.ch.QueryRow(ctx, "SELECT sum(rows) FROM system.parts WHERE database = ? AND table = ? AND active", r.db, table).Scan(&n)
		return n, err
	}
	table += "_all" // the daemon's default distributed_table
	err := r.ch.QueryRow(ctx, "SELECT count() FROM "+r.db+"."+table).Scan(&n)
	if err != nil && strings.Contains(err.Error(), "doesn't exist") {
		return 0, nil // not created yet
	}
	return n, err
}

// parts counts the parts ClickHouse created for a table: active ones and
// those merged away (kept for old_parts_lifetime, 8 minutes by default).
func (r *run) parts(ctx context.Context, table string) uint64 {
	from := "system.parts"
	if r.o.Cluster != "" {
		from = "cluster(" + schema.QuoteString(r.o.Cluster) + ", system, parts)" // one replica per shard
	}
	var n uint64
	_ = r.ch.QueryRow(ctx, "SELECT count() FROM "+from+" WHERE database = ? AND table = ? AND level = 0", r.db, table).Scan(&n)
	return n
}
