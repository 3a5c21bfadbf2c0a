package bench

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/binlog2ch/binlog2ch/hostcost"
)

// lagSample is the lag of the rows committed at time t.
type lagSample struct {
	t   time.Duration
	lag time.Duration
}

// lagSamples matches each MySQL sample (rows committed by t) with the
// first ClickHouse sample holding as many rows.
func lagSamples(mysqlSide, chSide []sample) []lagSample {
	var out []lagSample
	j := 0
	var last uint64
	for _, m := range mysqlSide {
		if m.n == last {
			continue // nothing new committed
		}
		last = m.n
		for j < len(chSide) && chSide[j].n < m.n {
			j++
		}
		if j == len(chSide) {
			break
		}
		lag := chSide[j].t - m.t
		if lag < 0 {
			lag = 0
		}
		out = append(out, lagSample{m.t, lag})
	}
	return out
}

func summarize(lags []lagSample) *Lag {
	if len(lags) == 0 {
		return &Lag{}
	}
	d := make([]float64, len(lags))
	for i, l := range lags {
		d[i] = l.lag.Seconds()
	}
	sort.Float64s(d)
	pct := func(p float64) float64 { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return &Lag{P50: pct(0.50), P99: pct(0.99), Max: d[len(d)-1], Samples: len(d)}
}

// series bins a phase into seconds: rows replicated in each, and the
// largest lag of the rows committed in it.
func series(lags []lagSample, chSide []sample) []Point {
	if len(chSide) == 0 {
		return nil
	}
	secs := int(chSide[len(chSide)-1].t/time.Second) + 1
	pts := make([]Point, secs)
	for i := range pts {
		pts[i] = Point{T: float64(i), LagSeconds: -1}
	}
	var prev uint64
	for _, c := range chSide {
		i := int(c.t / time.Second)
		pts[i].RowsPerSec += float64(c.n - prev)
		prev = c.n
	}
	for _, l := range lags {
		i := int(l.t / time.Second)
		if i < len(pts) && l.lag.Seconds() > pts[i].LagSeconds {
			pts[i].LagSeconds = l.lag.Seconds()
		}
	}
	return pts
}

// meter reads the daemon's CPU time and peak RSS from /proc.
type meter struct {
	pid           int
	cpu           time.Duration
	sys           time.Duration
	faults        uint64
	read0, wrote0 uint64 // rchar, wchar
}

func (r *run) newMeter() *meter {
	m := &meter{pid: r.daemon.Process.Pid}
	user, sys := hostcost.CPUSplit(m.pid)
	m.cpu, m.sys = user+sys, sys
	m.faults = hostcost.Faults(m.pid)
	m.read0, m.wrote0 = hostcost.IO(m.pid)
	// Resets the peak RSS so each phase reports its own (Linux 4.0+).
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", m.pid), []byte("5"), 0)
	return m
}

// read returns CPU seconds per million rows and the peak RSS in MiB.
func (m *meter) read(rows uint64) (float64, float64) {
	cpu := hostcost.CPU(m.pid) - m.cpu
	var perM float64
	if rows > 0 {
		perM = cpu.Seconds() / (float64(rows) / 1e6)
	}
	return perM, hostcost.PeakRSS(m.pid)
}

// memory returns the system CPU seconds and the minor page faults since
// the meter began: the first touch of fresh memory, which on some VMs
// costs microseconds a page and is a fifth of a short catch-up's CPU.
func (m *meter) memory() (float64, uint64) {
	_, sys := hostcost.CPUSplit(m.pid)
	return (sys - m.sys).Seconds(), hostcost.Faults(m.pid) - m.faults
}

// bytes returns the bytes read and written since the meter began, per
// row: the sockets' mostly (the binlog in, the inserts out).
func (m *meter) bytes(rows uint64) (read, written float64) {
	r, w := hostcost.IO(m.pid)
	return float64(r-m.read0) / float64(max(rows, 1)), float64(w-m.wrote0) / float64(max(rows, 1))
}
