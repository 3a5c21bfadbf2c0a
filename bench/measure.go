package bench

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
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
	pid    int
	cpu    time.Duration
	sys    time.Duration
	faults uint64
}

func (r *run) newMeter() *meter {
	m := &meter{pid: r.daemon.Process.Pid}
	user, sys := procCPUSplit(m.pid)
	m.cpu, m.sys = user+sys, sys
	m.faults = procFaults(m.pid)
	// Resets the peak RSS so each phase reports its own (Linux 4.0+).
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", m.pid), []byte("5"), 0)
	return m
}

// read returns CPU seconds per million rows and the peak RSS in MiB.
func (m *meter) read(rows uint64) (float64, float64) {
	cpu := procCPU(m.pid) - m.cpu
	var perM float64
	if rows > 0 {
		perM = cpu.Seconds() / (float64(rows) / 1e6)
	}
	return perM, peakRSS(m.pid)
}

// memory returns the system CPU seconds and the minor page faults since
// the meter began: the first touch of fresh memory, which on some VMs
// costs microseconds a page and is a fifth of a short catch-up's CPU.
func (m *meter) memory() (float64, uint64) {
	_, sys := procCPUSplit(m.pid)
	return (sys - m.sys).Seconds(), procFaults(m.pid) - m.faults
}

// procFaults is a process's minor page faults so far.
func procFaults(pid int) uint64 {
	fields := procStat(pid)
	if fields == nil {
		return 0
	}
	n, _ := strconv.ParseUint(fields[7], 10, 64)
	return n
}

// procCPU is a process's user+system CPU time so far.
func procCPU(pid int) time.Duration {
	user, sys := procCPUSplit(pid)
	return user + sys
}

// procCPUSplit is a process's user and system CPU time so far.
func procCPUSplit(pid int) (user, sys time.Duration) {
	fields := procStat(pid)
	if fields == nil {
		return 0, 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime) * time.Second / 100, time.Duration(stime) * time.Second / 100 // USER_HZ
}

// procStat is /proc/PID/stat's fields after the command's name (state
// first), or nil.
func procStat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return nil
	}
	return fields
}

// peakRSS is VmHWM in MiB.
func peakRSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// hostDescription names the hardware: CPU model, cores, memory.
func hostDescription() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
				mem = fmt.Sprintf(", %.0f GiB", kb/1024/1024)
			}
		}
	}
	return fmt.Sprintf("%s, %d cores%s", model, runtime.NumCPU(), mem)
}
