package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"

	"github.com/binlog2ch/binlog2ch/hostcost"
)

// The catch-up's two companions (issue 33): rows of a table nobody
// replicates, and loadgen's varied rows in place of Bifrost-sized ones.
// Each is compared with the catch-up's applied rows of the same run.

// excludedTable is the table the daemon's config excludes.
const excludedTable = "bench_excluded"

// variedTable holds the varied rows.
const variedTable = "binlog_field_test_varied"

// Excluded is what reading past an excluded table's rows cost.
type Excluded struct {
	// StartCPUSeconds is a start of the daemon with nothing to read, over
	// as long as the reading took (at least 2 s): its start-up
	// (connections, schemas, the state) and what it spends idle
	// (heartbeats, checkpoints, metrics), subtracted from the reading's
	// CPU, as from the catch-up's for the ratio: neither is per row.
	StartCPUSeconds float64 `json:"start_cpu_seconds"`
	// RunsCPUPerMRows are the readings' CPU per million rows less the
	// start; the scenario's CPUPerMRows is their median.
	RunsCPUPerMRows []float64 `json:"runs_cpu_seconds_per_million_rows"`
	// AppliedCPUPerMRows is the catch-up's CPU per million rows less the
	// start, its rows applied, and Ratio the excluded rows' over it (0:
	// no catch-up ran).
	AppliedCPUPerMRows float64 `json:"applied_cpu_seconds_per_million_rows,omitempty"`
	Ratio              float64 `json:"ratio,omitempty"`
}

// excluded fills a table tables.exclude drops with the daemon stopped,
// then times the daemon until its checkpoint passes the rows.
func (r *run) excluded(ctx context.Context, rep *Report) (Scenario, error) {
	lo := r.loadOptions()
	lo.Table, lo.Count = excludedTable, r.o.CatchUpRows
	s, _, err := r.fill(ctx, ScenarioExcluded, lo, " of "+excludedTable+", which the daemon's tables.exclude drops,")
	if err != nil {
		return s, err
	}
	end, err := r.binlogEnd(ctx)
	if err != nil {
		return s, err
	}
	fmt.Fprintf(r.log, "%s: %d rows in MySQL, the binlog ends at %s; starting the daemon\n", s.Name, s.Rows, end)
	saved, err := r.saveState()
	if err != nil {
		return s, err
	}
	// Read as many times as the catch-up runs (ceilingRuns), each from
	// the state of before the rows, and take the median's CPU: one
	// reading of ~0.2 CPU-s swings by a third on a shared host.
	var busy []time.Duration
	var el time.Duration
	for i := range ceilingRuns {
		if i > 0 {
			if err := r.restoreState(saved); err != nil {
				return s, err
			}
		}
		start := time.Now()
		if err := r.startDaemon(ctx); err != nil {
			return s, err
		}
		m := r.newMeter()
		if err := r.waitCheckpoint(s.Name, start, end); err != nil {
			return s, err
		}
		busy, el = append(busy, hostcost.CPU(m.pid)-m.cpu), time.Since(start)
		if i == 0 {
			s.PeakRSSMiB = hostcost.PeakRSS(m.pid)
			s.SystemCPUSeconds, s.MinorFaults = m.memory()
			s.Seconds, s.RowsPerMin = el.Seconds(), float64(s.Rows)/el.Minutes()
		}
	}
	idle, err := r.idleStart(ctx, max(el, 2*time.Second))
	if err != nil {
		return s, err
	}
	s.Excluded = &Excluded{StartCPUSeconds: idle.Seconds()}
	for _, b := range busy {
		s.Excluded.RunsCPUPerMRows = append(s.Excluded.RunsCPUPerMRows, max(b-idle, 0).Seconds()/(float64(s.Rows)/1e6))
	}
	s.CPUPerMRows = median(s.Excluded.RunsCPUPerMRows)
	if n, err := r.count(ctx, excludedTable); err != nil || n != 0 {
		return s, fmt.Errorf("%s: ClickHouse has %d rows of %s, which tables.exclude drops (%v)", s.Name, n, excludedTable, err)
	}
	for _, c := range rep.Scenarios {
		if cpu := c.appliedCPU(); c.Name == ScenarioCatchUp && cpu > 0 && c.Rows > 0 {
			applied := max(cpu-idle.Seconds()/(float64(c.Rows)/1e6), 0)
			if applied > 0 {
				s.Excluded.AppliedCPUPerMRows, s.Excluded.Ratio = applied, s.CPUPerMRows/applied
			}
		}
	}
	return s, nil
}

// joinFloats formats values, comma-separated.
func joinFloats(values []float64, format string) string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = fmt.Sprintf(format, v)
	}
	return strings.Join(out, ", ")
}

// waitCheckpoint waits until the daemon's checkpoint reaches end.
func (r *run) waitCheckpoint(name string, start time.Time, end source.Position) error {
	for {
		at, err := r.checkpointAt()
		if err != nil || !at.Before(end) {
			return err
		}
		if err := r.alive(); err != nil {
			return err
		}
		if time.Since(start) > 30*time.Minute {
			return fmt.Errorf("%s: the checkpoint is at %s after 30 minutes, the rows end at %s", name, at, end)
		}
		time.Sleep(sampleEvery)
	}
}

// appliedCPU is the catch-up's CPU per million rows: the median of its
// runs (Ceiling.CatchUps), which vary by a fifth from one to the next,
// or its only one.
func (s Scenario) appliedCPU() float64 {
	if s.Ceiling == nil || len(s.Ceiling.CatchUps) == 0 {
		return s.CPUPerMRows
	}
	cpu := make([]float64, len(s.Ceiling.CatchUps))
	for i, run := range s.Ceiling.CatchUps {
		cpu[i] = run.CPUPerMRows
	}
	return median(cpu)
}

// median is the middle of values (the mean of the two middle ones).
func median(values []float64) float64 {
	v := slices.Sorted(slices.Values(values))
	if n := len(v); n == 0 {
		return 0
	} else if n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// idleStart restarts the daemon, which has nothing to read, and returns
// its CPU over the window: what a start costs whatever it reads. The
// daemon is left running.
func (r *run) idleStart(ctx context.Context, window time.Duration) (time.Duration, error) {
	if err := r.stopDaemon(); err != nil {
		return 0, err
	}
	if err := r.startDaemon(ctx); err != nil {
		return 0, err
	}
	m := r.newMeter()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := r.alive(); err != nil {
		return 0, err
	}
	return hostcost.CPU(m.pid) - m.cpu, nil
}

// varied is the catch-up of loadgen's varied rows: strings and blobs of
// its realistic long tail, not capped at Options.MaxLen.
func (r *run) varied(ctx context.Context, rep *Report) (Scenario, error) {
	lo := r.loadOptions()
	lo.Table, lo.Count, lo.MaxLen = variedTable, max(r.o.CatchUpRows/2, 1), 0
	s, err := r.fillAndCatchUp(ctx, ScenarioVaried, lo)
	for _, c := range rep.Scenarios {
		if c.Name == ScenarioCatchUp && err == nil {
			s.Floor, err = hostcost.MeasurePerByte(ctx, c.workload(c.appliedCPU()), s.workload(s.CPUPerMRows))
		}
	}
	return s, err
}

// workload is what the scenario's rows cost the daemon and moved.
func (s Scenario) workload(cpu float64) hostcost.Workload {
	return hostcost.Workload{Rows: float64(s.Rows), CPUPerMRows: cpu, ReadBytesPerRow: s.ReadBytesPerRow,
		WrittenBytesPerRow: s.WrittenBytesPerRow, PeakRSSMiB: s.PeakRSSMiB}
}

// binlogBytes is the size of the server's binlog files together.
func (r *run) binlogBytes(ctx context.Context) (int64, error) {
	var total int64
	err := r.eachRow(ctx, "SHOW BINARY LOGS", func(cols []sql.RawBytes) error {
		if len(cols) < 2 {
			return fmt.Errorf("SHOW BINARY LOGS: %d columns", len(cols))
		}
		n, err := strconv.ParseInt(string(cols[1]), 10, 64)
		total += n
		return err
	})
	return total, err
}

// binlogPerRow is the binlog's growth since before, per row.
func (r *run) binlogPerRow(ctx context.Context, before int64, rows uint64) (float64, error) {
	after, err := r.binlogBytes(ctx)
	if err != nil || rows == 0 {
		return 0, err
	}
	return float64(after-before) / float64(rows), nil
}

// binlogEnd is the server's binlog position now.
func (r *run) binlogEnd(ctx context.Context) (source.Position, error) {
	var p source.Position
	err := r.eachRow(ctx, "SHOW MASTER STATUS", func(cols []sql.RawBytes) error {
		pos, err := strconv.ParseUint(string(cols[1]), 10, 32)
		p = source.Position{File: string(cols[0]), Pos: uint32(pos)}
		return err
	})
	if err == nil && p.File == "" {
		err = fmt.Errorf("SHOW MASTER STATUS: no binlog (log_bin is off?)")
	}
	return p, err
}

// checkpointAt is the daemon's saved position.
func (r *run) checkpointAt() (source.Position, error) {
	data, err := os.ReadFile(filepath.Join(r.o.Dir, "state", state.CheckpointFile))
	if err != nil {
		return source.Position{}, err
	}
	var c state.Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return source.Position{}, fmt.Errorf("the daemon's checkpoint: %w", err)
	}
	return c.Position, nil
}

// eachRow runs a statement and hands over each row's columns.
func (r *run) eachRow(ctx context.Context, query string, fn func([]sql.RawBytes) error) error {
	rows, err := r.my.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return err
	}
	cols := make([]sql.RawBytes, len(names))
	dest := make([]any, len(cols))
	for i := range cols {
		dest[i] = &cols[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := fn(cols); err != nil {
			return err
		}
	}
	return rows.Err()
}

// memoryLine is a catch-up's system CPU and minor page faults ("" for
// scenarios that did not measure them).
func (s Scenario) memoryLine() string {
	if s.MinorFaults == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the daemon spent %.2f CPU-s in the kernel and took %d minor page faults (%.0f MiB of pages touched first)",
		s.Name, s.SystemCPUSeconds, s.MinorFaults, float64(s.MinorFaults)*4096/(1<<20))
}

// companionLine is an excluded or varied scenario against the catch-up's
// rows ("" for other scenarios).
func (s Scenario) companionLine(catchUp *Scenario) string {
	switch s.Name {
	case ScenarioExcluded:
		e := s.Excluded
		if e == nil {
			return ""
		}
		line := fmt.Sprintf("%s: reading past %d rows of an excluded table (%.0f binlog bytes a row) cost %.3f CPU-s per million rows, the median of %s (less %.2f CPU-s, a start with nothing to read over as long)",
			s.Name, s.Rows, s.BinlogBytesPerRow, s.CPUPerMRows, joinFloats(e.RunsCPUPerMRows, "%.3f"), e.StartCPUSeconds)
		if e.Ratio > 0 {
			line += fmt.Sprintf(": %.3f of applying the catch-up's rows (%.2f, the median of its runs, less the same start)", e.Ratio, e.AppliedCPUPerMRows)
		}
		return line
	case ScenarioVaried:
		line := fmt.Sprintf("%s: loadgen's varied rows (strings and blobs not capped, %.0f binlog bytes a row): %.2f CPU-s per million rows",
			s.Name, s.BinlogBytesPerRow, s.CPUPerMRows)
		if catchUp != nil && catchUp.CPUPerMRows > 0 {
			line += fmt.Sprintf(", %.2f of the catch-up's rows (%.2f CPU-s per million rows, %.0f bytes a row)",
				s.CPUPerMRows/catchUp.CPUPerMRows, catchUp.CPUPerMRows, catchUp.BinlogBytesPerRow)
		}
		if f := s.Floor; f != nil {
			line += fmt.Sprintf("; %.2f of its per-byte floor, %.2f CPU-s per million rows: the catch-up's rows' cost plus moving %.0f bytes read and %.0f written a row more, through %.0f MiB more memory (%.2f CPU-s)",
				f.Ratio, f.CPUPerMRows, f.ExtraReadBytesPerRow, f.ExtraWrittenBytesPerRow, f.ExtraHeldMiB, f.MoveCPUSeconds)
		}
		return line
	}
	return ""
}
