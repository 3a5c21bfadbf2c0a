package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Table writes the scenarios as aligned text tables.
func (rep *Report) Table(w io.Writer) {
	fmt.Fprintf(w, "binlog2ch %s on %s\nMySQL %s, ClickHouse %s\n%s\n\n", rep.Binlog2ch, rep.Host, rep.MySQL, rep.ClickHouse, rep.Settings)
	if len(rep.Scenarios) > 0 {
		rows := [][]string{{"scenario", "rows", "seconds", "load rows/min", "replicated rows/min", "lag p50/p99/max", "kept up", "daemon CPU-s/Mrows", "peak RSS", "CH parts"}}
		for _, s := range rep.Scenarios {
			rows = append(rows, s.cells())
		}
		alignRows(w, rows)
		for _, line := range rep.scenarioNotes() {
			fmt.Fprintln(w, line)
		}
	}
	if len(rep.ManyTables) > 0 {
		if len(rep.Scenarios) > 0 {
			fmt.Fprintln(w)
		}
		rows := [][]string{tablesHeader}
		for _, t := range rep.ManyTables {
			rows = append(rows, t.cells())
		}
		alignRows(w, rows)
		fmt.Fprintf(w, "\n%s\n", rep.manyTablesNotes())
	}
}

func alignRows(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(w, "  ")
			}
			fmt.Fprintf(w, "%-*s", width[i], c)
		}
		fmt.Fprintln(w)
	}
}

func (s Scenario) cells() []string {
	lag, kept, load := "-", "-", "-"
	if s.LoadRowsPerMin > 0 {
		load = fmt.Sprintf("%.2fM", s.LoadRowsPerMin/1e6)
	}
	if s.Lag != nil {
		lag = fmt.Sprintf("%.2f/%.2f/%.2f s", s.Lag.P50, s.Lag.P99, s.Lag.Max)
	}
	if s.KeptUp != nil {
		kept = map[bool]string{true: "yes", false: "no"}[*s.KeptUp]
	}
	return []string{s.Name, fmt.Sprint(s.Rows), fmt.Sprintf("%.2f", s.Seconds), load, fmt.Sprintf("%.2fM", s.RowsPerMin/1e6), lag, kept,
		fmt.Sprintf("%.2f", s.CPUPerMRows), fmt.Sprintf("%.0f MiB", s.PeakRSSMiB), fmt.Sprint(s.Parts)}
}

// scenarioNotes are the lines under the scenarios' table: the catch-up
// against its ceiling, its companions against it.
func (rep *Report) scenarioNotes() []string {
	var catchUp *Scenario
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Name == ScenarioCatchUp {
			catchUp = &rep.Scenarios[i]
		}
	}
	var lines []string
	for _, s := range rep.Scenarios {
		for _, line := range []string{s.ceilingLine(), s.companionLine(catchUp), s.memoryLine()} {
			if line != "" {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// ceilingLine is the catch-up against ClickHouse's own insert of its
// rows, or why that was not measured ("" for other scenarios).
func (s Scenario) ceilingLine() string {
	if c := s.Ceiling; c != nil {
		runs := ""
		for i, sec := range c.RunSeconds {
			if i > 0 {
				runs += ", "
			}
			runs += fmt.Sprintf("%.2f", sec)
		}
		catchUps := ""
		for i, run := range c.CatchUps {
			if i > 0 {
				catchUps += ", "
			}
			catchUps += fmt.Sprintf("%.2fM (%.2f CPU-s per million rows)", run.RowsPerMin/1e6, run.CPUPerMRows)
		}
		return fmt.Sprintf("%s: %.2f of ClickHouse's own insert of the same %d rows, the fastest of %d catch-ups (%s rows/min; the first alone %.2f) against the fastest of the client's %d inserts alternated with them (%s, INSERT ... FORMAT Native from a dump: %.2fM rows/min, %.2fs of %s, ClickHouse %.2f CPU-s, the client %.2f); during the first catch-up ClickHouse %.2f CPU-s, its merges reading %d rows in %.2f s of merge threads",
			s.Name, c.Ratio, c.Rows, len(c.CatchUps), catchUps, c.FirstRatio, len(c.RunSeconds), c.Client, c.RowsPerMin/1e6, c.Seconds, runs, c.CHCPUSeconds, c.ClientCPUSeconds, s.CHCPUSeconds, s.CHMergedRows, s.CHMergeSeconds)
	}
	if s.NoCeiling != "" {
		return s.Name + ": " + s.NoCeiling
	}
	return ""
}

// tablesHeader are the many-tables runs' columns.
var tablesHeader = []string{"many tables", "rows", "load rows/s", "seconds", "CH CPU-s (system)", "CH inserts/s", "CH parts created/active", "daemon CPU-s", "peak RSS", "goroutines", "lag p50/p99/max", "worst table p99", "daemon lag max", "every row"}

func (t TablesRun) cells() []string {
	lag, worst, dlag, every := "-", "-", "-", "yes"
	if t.Lag != nil && t.Lag.Samples > 0 {
		lag = fmt.Sprintf("%.2f/%.2f/%.2f s", t.Lag.P50, t.Lag.P99, t.Lag.Max)
		worst = fmt.Sprintf("%.2f s", t.WorstTableP99)
	}
	if t.DaemonLag != nil {
		dlag = fmt.Sprintf("%.0f s", t.DaemonLag.Max)
	}
	if t.TablesDiffering > 0 {
		every = fmt.Sprintf("no: %d tables differ", t.TablesDiffering)
	}
	return []string{t.Name, fmt.Sprint(t.LoadRows), fmt.Sprintf("%.0f", t.LoadRowsPerSec), fmt.Sprintf("%.2f", t.Seconds), fmt.Sprintf("%.2f (%.2f)", t.CHCPUSeconds, t.CHSystemCPUSeconds), fmt.Sprintf("%.1f", t.CHInsertsPerSec),
		fmt.Sprintf("%d/%d", t.PartsCreated, t.PartsActive), fmt.Sprintf("%.2f", t.DaemonCPUSeconds), fmt.Sprintf("%.0f MiB", t.DaemonPeakRSSMiB),
		fmt.Sprintf("%.0f", t.DaemonGoroutines), lag, worst, dlag, every}
}

// manyTablesNotes are the ratio and how each figure was measured.
func (rep *Report) manyTablesNotes() string {
	var b strings.Builder
	if rep.ManyTablesCPURatio > 0 && len(rep.ManyTables) == 2 {
		fmt.Fprintf(&b, "ClickHouse CPU, %d tables / 1 table: %.1fx. ", rep.ManyTables[1].Tables, rep.ManyTablesCPURatio)
	}
	for _, t := range rep.ManyTables {
		if t.LoadRowsPerSec < 0.95*t.Rate {
			fmt.Fprintf(&b, "The %s run's load reached only %.0f rows/s (the machine was saturated): its figures are for fewer rows than asked. ", t.Name, t.LoadRowsPerSec)
		}
	}
	for i, t := range rep.ManyTables {
		if i == 0 {
			fmt.Fprintf(&b, "ClickHouse CPU from the %s; at rest before each run: %.1f%% of a core", t.CHCPUSource, 100*t.CHIdleCPUShare)
		} else {
			fmt.Fprintf(&b, ", %.1f%%", 100*t.CHIdleCPUShare)
		}
	}
	b.WriteString(".\n")
	b.WriteString("Many tables: single-row INSERTs (autocommit) at a fixed total rate, the tables taking turns, for a fixed time after one warm-up row per table (so tables and writers exist before the clock starts); measured from the first INSERT until ClickHouse held every row. ")
	fmt.Fprintf(&b, "Inserts: system.events InsertQuery. Parts: level-0 parts made during the run (system.parts, merged-away ones included) / active parts at the end. Daemon: CPU and peak RSS from /proc, goroutines from its /metrics (go_goroutines, the largest of its reads every %s; a read costs the daemon ~23 ms of CPU with 500 tables). ", scrapeEvery)
	b.WriteString("Lag: from each row's commit (when its INSERT returned) to its arrival in ClickHouse, rows matched by count within their table; arrivals observed by ")
	var sources []string
	for _, t := range rep.ManyTables {
		if !slices.Contains(sources, t.LagSource) {
			sources = append(sources, t.LagSource)
		}
	}
	b.WriteString(strings.Join(sources, "; "))
	b.WriteString(". ")
	fmt.Fprintf(&b, "Daemon lag: binlog2ch_lag_seconds, read every %s (whole-second binlog timestamps: up to 1 s high). Every row: each table's count in ClickHouse equals MySQL's.", scrapeEvery)
	return b.String()
}

// Markdown writes the report as a Markdown summary.
func (rep *Report) Markdown(w io.Writer, chart string) {
	fmt.Fprintf(w, "# binlog2ch benchmark, %s\n\n", rep.Date.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- binlog2ch %s\n- %s\n- MySQL %s, ClickHouse %s, on the same machine\n- %s\n\n", rep.Binlog2ch, rep.Host, rep.MySQL, rep.ClickHouse, rep.Settings)
	if len(rep.Scenarios) > 0 {
		fmt.Fprintln(w, "| scenario | rows | seconds | load rows/min | replicated rows/min | lag p50/p99/max | kept up | daemon CPU-s per 1M rows | peak RSS | ClickHouse parts |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
		for _, s := range rep.Scenarios {
			fmt.Fprintf(w, "| %s |\n", strings.Join(s.cells(), " | "))
		}
		fmt.Fprintf(w, "\nCatch-up: the rows are in the binlog before the daemon starts; timed until ClickHouse holds them all. Live: loadgen writes for a fixed time while the daemon follows, timed until ClickHouse holds every row; lag is the time from a row's commit in MySQL to its visibility in ClickHouse, and a phase kept up when no row took longer than %s.\n", keptUpLag)
		for _, sc := range rep.Scenarios {
			if sc.Lag == nil || sc.Lag.Source == "" {
				continue
			}
			fmt.Fprintf(w, "- %s: lag observed by %s", sc.Name, sc.Lag.Source)
			if l := sc.SampledLag; l != nil {
				fmt.Fprintf(w, " (by %s: %.2f/%.2f/%.2f s)", l.Source, l.P50, l.P99, l.Max)
			}
			fmt.Fprintf(w, "; ClickHouse spent %.1f CPU-s in the phase.\n", sc.CHCPUSeconds)
		}
		for _, line := range rep.scenarioNotes() {
			fmt.Fprintf(w, "- %s\n", line)
		}
	}
	if len(rep.ManyTables) > 0 {
		if len(rep.Scenarios) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(tablesHeader, " | "), strings.Repeat("---|", len(tablesHeader)))
		for _, t := range rep.ManyTables {
			fmt.Fprintf(w, "| %s |\n", strings.Join(t.cells(), " | "))
		}
		fmt.Fprintf(w, "\n%s\n", rep.manyTablesNotes())
	}
	if chart != "" {
		fmt.Fprintf(w, "\n![MySQL rows written, ClickHouse rows held and lag over time](%s)\n", chart)
	}
}

// WriteFiles writes <dir>/<date>.json, .md and .svg and returns their
// paths.
func (rep *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, rep.Date.Format("2006-01-02T150405Z"))
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	var svg, md strings.Builder
	rep.SVG(&svg)
	rep.Markdown(&md, filepath.Base(base+".svg"))
	files := map[string]string{base + ".json": string(data) + "\n", base + ".svg": svg.String(), base + ".md": md.String()}
	var paths []string
	for _, p := range []string{base + ".json", base + ".md", base + ".svg"} {
		if err := os.WriteFile(p, []byte(files[p]), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
