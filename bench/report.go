package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Table writes the scenarios as an aligned text table.
func (rep *Report) Table(w io.Writer) {
	fmt.Fprintf(w, "binlog2ch %s on %s\nMySQL %s, ClickHouse %s\n%s\n\n", rep.Binlog2ch, rep.Host, rep.MySQL, rep.ClickHouse, rep.Settings)
	rows := [][]string{{"scenario", "rows", "seconds", "load rows/min", "replicated rows/min", "lag p50/p99/max", "kept up", "daemon CPU-s/Mrows", "peak RSS", "CH parts"}}
	for _, s := range rep.Scenarios {
		rows = append(rows, s.cells())
	}
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

// Markdown writes the report as a Markdown summary.
func (rep *Report) Markdown(w io.Writer, chart string) {
	fmt.Fprintf(w, "# binlog2ch benchmark, %s\n\n", rep.Date.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- binlog2ch %s\n- %s\n- MySQL %s, ClickHouse %s, on the same machine\n- %s\n\n", rep.Binlog2ch, rep.Host, rep.MySQL, rep.ClickHouse, rep.Settings)
	fmt.Fprintln(w, "| scenario | rows | seconds | load rows/min | replicated rows/min | lag p50/p99/max | kept up | daemon CPU-s per 1M rows | peak RSS | ClickHouse parts |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range rep.Scenarios {
		fmt.Fprintf(w, "| %s |\n", strings.Join(s.cells(), " | "))
	}
	fmt.Fprintf(w, "\nCatch-up: the rows are in the binlog before the daemon starts; timed until ClickHouse holds them all. Live: loadgen writes for a fixed time while the daemon follows, timed until ClickHouse holds every row; lag is the time from a row's commit in MySQL to its visibility in ClickHouse (sampled every %s), and a phase kept up when no row took longer than %s.\n", sampleEvery, keptUpLag)
	if chart != "" {
		fmt.Fprintf(w, "\n![rows/s and lag over time](%s)\n", chart)
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

// SVG draws each scenario's rows/s (bars) and lag (line) over time, one
// panel per scenario.
func (rep *Report) SVG(w io.Writer) {
	const pw, ph, left, top, gap = 640.0, 160.0, 60.0, 30.0, 50.0
	height := top + float64(len(rep.Scenarios))*(ph+gap)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", left+pw+70, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, s := range rep.Scenarios {
		y0 := top + float64(i)*(ph+gap)
		maxRate, maxLag := 1.0, 1.0
		for _, p := range s.Series {
			maxRate = math.Max(maxRate, p.RowsPerSec)
			maxLag = math.Max(maxLag, p.LagSeconds)
		}
		n := math.Max(1, float64(len(s.Series)))
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-8, escape(s.Name))
		fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, y0, pw, ph)
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="end" fill="#3366aa">%.0fk rows/s</text>`+"\n", left-4, y0+10, maxRate/1000)
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" fill="#cc3333">%.1f s lag</text>`+"\n", left+pw+4, y0+10, maxLag)
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="end">%.0f s</text>`+"\n", left+pw, y0+ph+14, n)
		bw := pw / n
		for j, p := range s.Series {
			h := p.RowsPerSec / maxRate * ph
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#88aadd"/>`+"\n", left+float64(j)*bw, y0+ph-h, math.Max(bw-1, 0.5), h)
		}
		var pts []string
		for j, p := range s.Series {
			if p.LagSeconds >= 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+(float64(j)+0.5)*bw, y0+ph-p.LagSeconds/maxLag*ph))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="#cc3333" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "))
		}
	}
	fmt.Fprintln(w, "</svg>")
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
