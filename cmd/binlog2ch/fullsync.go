package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/binlog2ch/binlog2ch/replicator"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
)

// fullsyncCmd copies the configured tables once and exits: 0 when every
// table was copied, 1 otherwise (the summary and the log name each failed
// table).
func fullsyncCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "fullsync", "-config FILE [-tables db.t1,db.t2] [-recreate [-checkpoint]] [-progress auto|bars|log]")
	var cf configFlags
	cf.register(fs)
	tables := fs.String("tables", "", "comma-separated db.table list to copy (default: every table the config includes)")
	recreate := fs.Bool("recreate", false, "drop each target table and copy it from the start (once per copy: an interrupted -recreate copy run again with -recreate resumes)")
	setCheckpoint := fs.Bool("checkpoint", false, "with -recreate and every table: afterwards, set run's checkpoint to this copy's binlog position (after run's binlog was purged; stop run first); with -tables, repair a GTID gap after a failover: copy the tables the gap names and let run go on by GTID")
	progress := fs.String("progress", "auto", "progress display: bars (live, per table), log (a line every 5s), or auto (bars on a terminal)")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	var names []schema.TableName
	if *tables != "" {
		for _, s := range strings.Split(*tables, ",") {
			db, table, ok := strings.Cut(strings.TrimSpace(s), ".")
			if !ok || db == "" || table == "" {
				fmt.Fprintf(e.stderr, "binlog2ch fullsync: -tables: want db.table, got %q\n", s)
				return exitUsage
			}
			names = append(names, schema.TableName{Database: db, Table: table})
		}
	}
	var bars *barDisplay
	switch *progress {
	case "bars":
		bars = &barDisplay{w: e.stderr}
	case "auto":
		if isTerminal(e.stderr) {
			bars = &barDisplay{w: e.stderr}
		}
	case "log":
	default:
		fmt.Fprintf(e.stderr, "binlog2ch fullsync: -progress: want auto, bars or log, got %q\n", *progress)
		return exitUsage
	}
	le := e
	if bars != nil {
		// Log lines go through the display, which redraws the bars below.
		le = &env{stdout: e.stdout, stderr: bars}
		if cf.logFormat == "auto" {
			cf.logFormat = "text"
		}
	}
	logger, cfg, code := cf.load(le, "fullsync")
	if code != exitOK {
		return code
	}
	for _, n := range names {
		if !cfg.Replicates(n.Database, n.Table) {
			fmt.Fprintf(e.stderr, "binlog2ch fullsync: -tables: %s is not selected by tables.include/exclude in %s\n", n, cf.config)
			return exitUsage
		}
	}
	// fullsync writes its progress into state_dir and may move the
	// checkpoint: never beside a daemon on the same state_dir.
	hint := "binlog2ch resync -config " + cf.config + " -tables "
	if *tables != "" {
		hint += *tables
	} else {
		hint += "db.t[,...]"
	}
	lock, code := lockStateDir(e, cfg, "fullsync", hint)
	if code != exitOK {
		return code
	}
	defer lock.Release()
	copyGC()
	r, err := replicator.New(ctx, cfg, logger)
	if err != nil {
		logger.Error("cannot start", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch fullsync: %v\n", err)
		return exitError
	}
	defer r.Close()
	if *setCheckpoint && !*recreate {
		fmt.Fprintln(e.stderr, "binlog2ch fullsync: -checkpoint needs -recreate (and every table, no -tables, except to repair a GTID gap after a failover): run skips the events before the copy, so only a copy into emptied tables holds their effects")
		return exitUsage
	}
	opts := replicator.FullSyncOptions{Tables: names, Recreate: *recreate, SetCheckpoint: *setCheckpoint}
	if bars != nil {
		opts.Progress = bars.update
	} else {
		opts.Progress = snapshot.LogProgress(logger, 5*time.Second)
	}
	start := time.Now()
	statuses, err := r.FullSync(ctx, opts)
	if bars != nil {
		bars.finish()
	}
	writeSummary(e.stdout, statuses, time.Since(start))
	if err != nil {
		logger.Error("fullsync failed", "error", err)
		fmt.Fprintf(e.stderr, "binlog2ch fullsync: %v\n", err)
		return exitError
	}
	return exitOK
}

// Garbage collector settings for a copy, unless GOGC or GOMEMLIMIT are
// set: a copy allocates a little per value read (the MySQL driver hands
// each one over as an interface), and collecting every 100% of heap growth
// took half the CPU of the process writing into ClickHouse. The limit keeps
// the heap (normally ~60 MiB live) within the memory target.
const (
	copyGCPercent   = 400
	copyMemoryLimit = 256 << 20
)

func copyGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(copyGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(copyMemoryLimit)
	}
}

// writeSummary prints one line per table: rows, seconds, rows per minute.
func writeSummary(w io.Writer, statuses []snapshot.TableStatus, elapsed time.Duration) {
	if len(statuses) == 0 {
		fmt.Fprintln(w, "no tables to copy")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tstate\trows\tseconds\trows/min\t")
	var rows uint64
	for _, s := range statuses {
		secs := 0.0
		if !s.Start.IsZero() && !s.End.IsZero() {
			secs = s.End.Sub(s.Start).Seconds()
		}
		state := s.State
		if s.Resumed {
			state += " (resumed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t\n", s.Name, state, s.Rows, secs, perMin(s.Rows, secs))
		rows += s.Rows
	}
	fmt.Fprintf(tw, "total\t\t%d\t%.1f\t%s\t\n", rows, elapsed.Seconds(), perMin(rows, elapsed.Seconds()))
	tw.Flush()
	for _, s := range statuses {
		if s.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", s.Name, s.Err)
		}
	}
}

func perMin(rows uint64, secs float64) string {
	if secs <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(rows)/secs*60)
}

// barDisplay draws a live progress bar per table and one overall at the
// bottom of a terminal; log lines written through it appear above them.
type barDisplay struct {
	mu    sync.Mutex
	w     io.Writer
	drawn int // lines of bars on screen
	last  []snapshot.TableStatus
	done  bool
}

func (d *barDisplay) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	n, err := d.w.Write(p)
	d.draw()
	return n, err
}

func (d *barDisplay) update(ts []snapshot.TableStatus) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last = ts
	d.clear()
	d.draw()
}

// finish leaves the last bars on screen and stops drawing.
func (d *barDisplay) finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done = true
	d.drawn = 0
}

func (d *barDisplay) clear() {
	for ; d.drawn > 0; d.drawn-- {
		fmt.Fprint(d.w, "\x1b[1A\x1b[2K")
	}
	fmt.Fprint(d.w, "\r")
}

func (d *barDisplay) draw() {
	if d.done || len(d.last) == 0 {
		return
	}
	var b strings.Builder
	now := time.Now()
	var rows, est uint64
	var first time.Time
	// Many tables: bars only for those being copied or failed, and the
	// tables copied in the overall line (a screen of two thousand bars
	// redrawn four times a second helps no one).
	shown := d.last
	overall := "overall"
	if len(d.last) > maxBars {
		shown = nil
		done := 0
		for _, s := range d.last {
			switch s.State {
			case snapshot.StateCopying, snapshot.StateFailed:
				shown = append(shown, s)
			case snapshot.StateDone:
				done++
			}
		}
		overall = fmt.Sprintf("overall (%d of %d tables copied)", done, len(d.last))
	}
	width := len(overall)
	for _, s := range shown {
		width = max(width, len(s.Name.String()))
	}
	for _, s := range d.last {
		rows += s.Confirmed
		est += max(s.Estimate, s.Confirmed)
		if !s.Start.IsZero() && (first.IsZero() || s.Start.Before(first)) {
			first = s.Start
		}
	}
	for _, s := range shown {
		end := now
		if !s.End.IsZero() {
			end = s.End
		}
		secs := 0.0
		if !s.Start.IsZero() {
			secs = end.Sub(s.Start).Seconds()
		}
		fmt.Fprintf(&b, "%-*s %s\n", width, s.Name.String(), barLine(s.Confirmed, s.Estimate, s.Rows, secs, s.State))
	}
	secs := 0.0
	if !first.IsZero() {
		secs = now.Sub(first).Seconds()
	}
	fmt.Fprintf(&b, "%-*s %s\n", width, overall, barLine(rows, est, rows, secs, ""))
	fmt.Fprint(d.w, b.String())
	d.drawn = len(shown) + 1
}

// maxBars is how many tables get a bar each, all of them, before only
// those being copied or failed do.
const maxBars = 20

// barLine is "[#####.....]  45%  450000/1000000  120000 rows/s  ETA 5s".
func barLine(done, estimate, read uint64, secs float64, state string) string {
	const width = 30
	total := max(estimate, done)
	frac := 0.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	if state == snapshot.StateDone {
		frac = 1
	}
	n := int(frac * width)
	bar := "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
	rate := 0.0
	if secs > 0 {
		rate = float64(read) / secs
	}
	eta := "-"
	if rate > 0 && total > done && state != snapshot.StateDone {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	line := fmt.Sprintf("%s %3.0f%%  %d/~%d rows  %.0f rows/s  ETA %s", bar, frac*100, done, total, rate, eta)
	if state != "" {
		line += "  " + state
	}
	return line
}
