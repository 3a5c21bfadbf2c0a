package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// writtenBySecond is the rows written to MySQL by the end of each of n
// seconds, from samples of the rows written by their time.
func writtenBySecond(n int, side []sample) []uint64 {
	out := make([]uint64, n)
	j := 0
	var last uint64
	for i := range out {
		end := time.Duration(i+1) * time.Second
		for j < len(side) && side[j].t < end {
			last = max(last, side[j].n)
			j++
		}
		out[i] = last
	}
	return out
}

// committedBySecond is the rows committed by the end of each of n seconds
// after start, from every table's commit times.
func committedBySecond(n int, start time.Time, commits map[string][]time.Time) []uint64 {
	per := make([]uint64, n)
	for _, times := range commits {
		for _, at := range times {
			if i := int(at.Sub(start) / time.Second); i >= 0 && i < n {
				per[i]++
			}
		}
	}
	var sum uint64
	for i, c := range per {
		sum += c
		per[i] = sum
	}
	return per
}

// panel is one phase in the chart: its series, the rows written to MySQL
// by the end of each second (nil: not recorded), and its summary line.
type panel struct {
	name, summary string
	series        []Point
	written       []uint64
}

// Chart geometry, in pixels: each panel a plot with room for the tick
// labels and axis titles around it.
const (
	chartLeft   = 78.0  // rows axis: tick labels and title
	chartPlotW  = 620.0 // plot width
	chartRight  = 74.0  // lag axis: tick labels and title
	chartTop    = 44.0  // legend
	chartPlotH  = 170.0 // plot height
	chartPanelH = 250.0 // plot plus title above and time axis below
	chartFont   = 11.0  // font-size
	// charWidth estimates a character's width at chartFont in a sans-serif
	// font, generously, to keep labels inside the margins.
	charWidth = 7.0
)

// Chart colours.
const (
	colourMySQL = "#2e62b8"
	colourCH    = "#1b8a5a"
	colourLag   = "#c0262d"
	colourGrid  = "#e3e6eb"
	colourAxis  = "#667085"
)

// niceScale is an axis from 0: the top, at or above max, and the step
// between ticks, both round numbers (1, 2, 2.5 or 5 times a power of ten),
// about target ticks.
func niceScale(maxV float64, target int) (top, step float64) {
	if maxV <= 0 || math.IsNaN(maxV) || math.IsInf(maxV, 0) {
		maxV = 1
	}
	raw := maxV / float64(target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top = math.Ceil(maxV/step-1e-9) * step
	return top, step
}

// countLabel prints a tick's row count short: 0, 750, 1.5k, 250k, 1.25M.
func countLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return trimFloat(v/1e9) + "G"
	case a >= 1e6:
		return trimFloat(v/1e6) + "M"
	case a >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

// thousands prints n with its thousands separated: 1,234,567.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// trimFloat prints v with at most three decimals, no trailing zeros.
func trimFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// SVG draws each phase as a panel: MySQL rows written and ClickHouse rows
// held over time on the left axis, the lag of the rows committed in each
// second on the right axis, seconds along the bottom. Every axis has ticks,
// units and a title, and every label fits its margin.
func (rep *Report) SVG(w io.Writer) {
	var panels []panel
	for _, s := range rep.Scenarios {
		sum := fmt.Sprintf("%s rows in %.1f s, %.2fM rows/min", thousands(s.Rows), s.Seconds, s.RowsPerMin/1e6)
		if s.Lag != nil && s.Lag.Samples > 0 {
			sum += fmt.Sprintf(", lag p99 %.2f s", s.Lag.P99)
		}
		panels = append(panels, panel{s.Name, sum, s.Series, s.MySQLRows})
	}
	for _, t := range rep.ManyTables {
		tables := "1 table"
		if t.Tables != 1 {
			tables = fmt.Sprintf("%d tables", t.Tables)
		}
		sum := fmt.Sprintf("%s, %s rows in %.1f s", tables, thousands(t.LoadRows), t.Seconds)
		if t.Lag != nil && t.Lag.Samples > 0 {
			sum += fmt.Sprintf(", lag p99 %.2f s", t.Lag.P99)
		}
		panels = append(panels, panel{t.Name, sum, t.Series, t.MySQLRows})
	}
	width := chartLeft + chartPlotW + chartRight
	height := chartTop + float64(max(len(panels), 1))*chartPanelH
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="DejaVu Sans, sans-serif" font-size="%.0f">`+"\n",
		width, height, width, height, chartFont)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	legend(w)
	for i, p := range panels {
		p.draw(w, chartTop+float64(i)*chartPanelH)
	}
	fmt.Fprintln(w, "</svg>")
}

// legend explains the three lines once, above the panels.
func legend(w io.Writer) {
	x := chartLeft
	for _, item := range []struct{ label, colour, dash string }{
		{"MySQL rows written", colourMySQL, "6 3"},
		{"ClickHouse rows held", colourCH, ""},
		{"lag (right axis)", colourLag, ""},
	} {
		dash := ""
		if item.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, item.dash)
		}
		fmt.Fprintf(w, `<line class="legend" x1="%.0f" y1="16" x2="%.0f" y2="16" stroke="%s" stroke-width="2.5"%s/>`+"\n", x, x+22, item.colour, dash)
		fmt.Fprintf(w, `<text class="legend" x="%.0f" y="20">%s</text>`+"\n", x+28, escape(item.label))
		x += 28 + float64(len(item.label))*charWidth + 20
	}
}

// draw renders one panel with its plot's top at y0 + 26.
func (p panel) draw(w io.Writer, y0 float64) {
	top := y0 + 26
	left, bottom := chartLeft, top+chartPlotH
	fmt.Fprintf(w, `<text class="title" x="%.0f" y="%.0f"><tspan font-weight="bold">%s</tspan><tspan fill="%s">  %s</tspan></text>`+"\n",
		left, y0+12, escape(p.name), colourAxis, escape(p.summary))

	// The data: ClickHouse's rows held are the per-second rows summed.
	n := len(p.series)
	held := make([]float64, n)
	var sum, maxRows, maxLag float64
	for i, pt := range p.series {
		sum += pt.RowsPerSec
		held[i] = sum
		maxRows = max(maxRows, sum)
		maxLag = max(maxLag, pt.LagSeconds)
	}
	for _, v := range p.written {
		maxRows = max(maxRows, float64(v))
	}
	rowsTop, rowsStep := niceScale(maxRows, 5)
	lagTop, lagStep := niceScale(math.Max(maxLag, 0.1), 4)
	// Time runs to the phase's end, not to a round number past it.
	tTop := float64(max(n, 1))
	_, tStep := niceScale(tTop, 8)
	x := func(sec float64) float64 { return left + sec/tTop*chartPlotW }
	yRows := func(v float64) float64 { return bottom - v/rowsTop*chartPlotH }
	yLag := func(v float64) float64 { return bottom - v/lagTop*chartPlotH }

	// Grid and the rows axis (left), its ticks at the grid lines.
	for v := 0.0; v <= rowsTop+rowsStep/2; v += rowsStep {
		y := yRows(v)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, y, left+chartPlotW, y, colourGrid)
		fmt.Fprintf(w, `<line class="tick rows" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left-5, y, left, y, colourAxis)
		fmt.Fprintf(w, `<text class="tick rows" x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+4, countLabel(v))
	}
	// The lag axis (right), when the phase measured one: catch-up's rows
	// were written before it started.
	hasLag := slices.ContainsFunc(p.series, func(pt Point) bool { return pt.LagSeconds >= 0 })
	for v := 0.0; hasLag && v <= lagTop+lagStep/2; v += lagStep {
		y := yLag(v)
		fmt.Fprintf(w, `<line class="tick lag" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left+chartPlotW, y, left+chartPlotW+5, y, colourLag)
		fmt.Fprintf(w, `<text class="tick lag" x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", left+chartPlotW+8, y+4, colourLag, trimFloat(v))
	}
	// The time axis (bottom).
	for v := 0.0; v <= tTop+tStep/1e6; v += tStep {
		xx := x(v)
		fmt.Fprintf(w, `<line class="tick time" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", xx, bottom, xx, bottom+5, colourAxis)
		fmt.Fprintf(w, `<text class="tick time" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", xx, bottom+18, trimFloat(v))
	}
	fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="%s"/>`+"\n", left, top, chartPlotW, chartPlotH, colourAxis)
	// Axis titles, with their units.
	fmt.Fprintf(w, `<text class="axis rows" transform="translate(%.0f %.1f) rotate(-90)" text-anchor="middle">rows</text>`+"\n", 14.0, top+chartPlotH/2)
	if hasLag {
		fmt.Fprintf(w, `<text class="axis lag" transform="translate(%.0f %.1f) rotate(90)" text-anchor="middle" fill="%s">lag (s)</text>`+"\n", left+chartPlotW+chartRight-14, top+chartPlotH/2, colourLag)
	}
	fmt.Fprintf(w, `<text class="axis time" x="%.1f" y="%.1f" text-anchor="middle">seconds since the phase started</text>`+"\n", left+chartPlotW/2, bottom+34)

	if n == 0 {
		return
	}
	// Rows as steps at each second's end, from 0 at the start.
	line := func(class, colour, dash string, v func(i int) float64) {
		pts := []string{fmt.Sprintf("%.1f,%.1f", x(0), yRows(v(-1)))}
		for i := range n {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i+1)), yRows(v(i))))
		}
		extra := ""
		if dash != "" {
			extra = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(w, `<polyline class="%s" points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", class, strings.Join(pts, " "), colour, extra)
	}
	if len(p.written) == n {
		line("mysql", colourMySQL, "6 3", func(i int) float64 {
			if i < 0 {
				// Catch-up's rows were all written before the start.
				if p.written[0] == p.written[n-1] {
					return float64(p.written[0])
				}
				return 0
			}
			return float64(p.written[i])
		})
	}
	line("clickhouse", colourCH, "", func(i int) float64 {
		if i < 0 {
			return 0
		}
		return held[i]
	})
	// Lag at the middle of each second that had commits; gaps where none.
	var runs [][]string
	var cur []string
	for i, pt := range p.series {
		if pt.LagSeconds < 0 {
			if len(cur) > 0 {
				runs = append(runs, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, fmt.Sprintf("%.1f,%.1f", x(float64(i)+0.5), yLag(pt.LagSeconds)))
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	for _, r := range runs {
		if len(r) == 1 {
			xy := strings.Split(r[0], ",")
			fmt.Fprintf(w, `<circle class="lag" cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], colourLag)
			continue
		}
		fmt.Fprintf(w, `<polyline class="lag" points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(r, " "), colourLag)
	}
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
