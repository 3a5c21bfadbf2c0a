package bench

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgNode is an element of the chart, its attributes and its text.
type svgNode struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG reads the chart as XML: it must be well-formed.
func parseSVG(t *testing.T, svg string) []svgNode {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var nodes []svgNode
	var open []int // indexes of the open elements
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return nodes
			}
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			n := svgNode{name: e.Name.Local, attrs: map[string]string{}}
			for _, a := range e.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			nodes = append(nodes, n)
			open = append(open, len(nodes)-1)
		case xml.CharData:
			// A <tspan>'s text belongs to its <text> too.
			for _, i := range open {
				if nodes[i].name == "text" || nodes[i].name == "tspan" {
					nodes[i].text += string(e)
				}
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

// TestChart renders a report with known series and reads the SVG back:
// each axis has its title with the unit and ticks at round values that
// cover the data; every label fits the canvas; the lines are MySQL's
// rows written, ClickHouse's rows held (ending at the rows replicated)
// and the lag on the right axis.
func TestChart(t *testing.T) {
	var series []Point
	var written []uint64
	for i := range 30 {
		lag := 0.25 + float64(i%5)/10 // up to 0.65 s
		if i == 7 {
			lag = -1 // no commit that second: a gap
		}
		series = append(series, Point{T: float64(i), RowsPerSec: 40000, LagSeconds: lag})
		written = append(written, uint64(min(i+2, 30))*40000)
	}
	rep := &Report{Date: time.Now(), Scenarios: []Scenario{
		{Name: "catch-up <all>", Rows: 1_000_000, Seconds: 2, RowsPerMin: 30e6, Series: []Point{{T: 0, RowsPerSec: 600000, LagSeconds: -1}, {T: 1, RowsPerSec: 400000, LagSeconds: -1}},
			MySQLRows: []uint64{1_000_000, 1_000_000}},
		{Name: "live, 40000 rows/s", Rows: 1_200_000, Seconds: 30, RowsPerMin: 2.4e6, Lag: &Lag{P99: 0.65, Samples: 29}, Series: series, MySQLRows: written},
	}}
	var b strings.Builder
	rep.SVG(&b)
	nodes := parseSVG(t, b.String())
	root := nodes[0]
	width, height := num(t, root.attrs["width"]), num(t, root.attrs["height"])

	ticks := map[string][]string{} // class -> labels, in order
	var titles, axes []string
	for _, n := range nodes {
		if n.name != "text" {
			continue
		}
		class := n.attrs["class"]
		switch {
		case strings.HasPrefix(class, "tick "):
			ticks[class] = append(ticks[class], n.text)
		case strings.HasPrefix(class, "axis "):
			axes = append(axes, n.text)
		case class == "title":
			titles = append(titles, n.text)
		}
		// Every label inside the canvas, at the width its characters take.
		if n.attrs["transform"] != "" {
			continue // the rotated axis titles: checked by position below
		}
		x, y := num(t, n.attrs["x"]), num(t, n.attrs["y"])
		w := float64(len([]rune(n.text))) * charWidth
		lo, hi := x, x+w
		switch n.attrs["text-anchor"] {
		case "end":
			lo, hi = x-w, x
		case "middle":
			lo, hi = x-w/2, x+w/2
		}
		if lo < 0 || hi > width || y < chartFont || y > height {
			t.Errorf("%q (%s) at x %.0f..%.0f, y %.0f: outside the %.0fx%.0f canvas", n.text, class, lo, hi, y, width, height)
		}
		// Left tick labels must also clear the rotated axis title.
		if class == "tick rows" && lo < 24 {
			t.Errorf("rows tick %q reaches x %.0f, over the axis title", n.text, lo)
		}
	}
	// Two panels: the rows axis to a round top covering 1M rows, in steps.
	want := "0 200k 400k 600k 800k 1M 0 250k 500k 750k 1M 1.25M"
	if got := strings.Join(ticks["tick rows"], " "); got != want {
		t.Errorf("rows ticks %q, want %q", got, want)
	}
	if got := strings.Join(ticks["tick time"], " "); got != "0 0.25 0.5 0.75 1 1.25 1.5 1.75 2 0 5 10 15 20 25 30" {
		t.Errorf("time ticks %q", got)
	}
	// The lag axis only where a lag was measured (live), covering 0.65 s.
	if got := strings.Join(ticks["tick lag"], " "); got != "0 0.2 0.4 0.6 0.8" {
		t.Errorf("lag ticks %q", got)
	}
	if got := strings.Join(axes, "|"); got != "rows|seconds since the phase started|rows|lag (s)|seconds since the phase started" {
		t.Errorf("axis titles %q", got)
	}
	if len(titles) != 2 || titles[0] != "catch-up <all>  1,000,000 rows in 2.0 s, 30.00M rows/min" || !strings.Contains(titles[1], "lag p99 0.65 s") {
		t.Errorf("panel titles %q", titles)
	}
	// The lines: in the live panel, ClickHouse's rows end at 1.2M at 30 s,
	// MySQL's are ahead of them, the lag has a gap at second 7.
	lines := map[string][]string{}
	for _, n := range nodes {
		if n.name == "polyline" {
			lines[n.attrs["class"]] = append(lines[n.attrs["class"]], n.attrs["points"])
		}
	}
	if len(lines["mysql"]) != 2 || len(lines["clickhouse"]) != 2 || len(lines["lag"]) != 2 {
		t.Fatalf("lines: %v", lines)
	}
	point := func(pts string, i int) (x, y float64) {
		p := strings.Fields(pts)
		if i < 0 {
			i += len(p)
		}
		xs, ys, _ := strings.Cut(p[i], ",")
		return num(t, xs), num(t, ys)
	}
	panelTop := chartTop + chartPanelH + 26
	bottom := panelTop + chartPlotH
	x, y := point(lines["clickhouse"][1], -1)
	if math.Abs(x-(chartLeft+chartPlotW)) > 0.1 || math.Abs(y-(bottom-1.2e6/1.25e6*chartPlotH)) > 0.1 {
		t.Errorf("ClickHouse's line ends at %.1f,%.1f, want 1.2M of the axis' 1.25M at the right edge", x, y)
	}
	if _, my := point(lines["mysql"][1], 5); func() bool { _, ch := point(lines["clickhouse"][1], 5); return my >= ch }() {
		t.Errorf("MySQL's rows are not above ClickHouse's at 5 s")
	}
	// Catch-up's MySQL rows were all there at the start: a flat line at 1M.
	if _, y0 := point(lines["mysql"][0], 0); math.Abs(y0-(chartTop+26)) > 0.1 {
		t.Errorf("catch-up's MySQL line starts at y %.1f, want the top (1M)", y0)
	}
	if n := len(strings.Fields(lines["lag"][0])) + len(strings.Fields(lines["lag"][1])); n != 29 {
		t.Errorf("lag points: %d, want 29 (one second without commits)", n)
	}
}

func TestNiceScale(t *testing.T) {
	for _, c := range []struct{ max, top, step float64 }{
		{1, 1, 0.2}, {0.65, 0.8, 0.2}, {1_000_000, 1_000_000, 200_000}, {1_234_567, 1_250_000, 250_000}, {37, 40, 10}, {0, 1, 0.2},
	} {
		if top, step := niceScale(c.max, 5); math.Abs(top-c.top) > 1e-9 || math.Abs(step-c.step) > 1e-9 {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", c.max, top, step, c.top, c.step)
		}
	}
	for v, want := range map[float64]string{0: "0", 750: "750", 1500: "1.5k", 250000: "250k", 1.25e6: "1.25M", 0.3: "0.3"} {
		if got := countLabel(v); got != want {
			t.Errorf("countLabel(%v) = %q, want %q", v, got, want)
		}
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Errorf("thousands: %q", got)
	}
}
