// Package hostcost reads what this host charges for work: a process's CPU
// time, minor page faults, peak RSS and bytes read and written, from
// /proc (Linux), and the least CPU that moving bytes through loopback
// sockets and fresh memory costs here (floor.go), the yardstick bench
// holds a catch-up's per-byte cost against. It measures; it never starts
// or stops a process, and it knows nothing of MySQL, ClickHouse or
// binlog2ch's data path.
package hostcost

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CPU is a process's user+system CPU time so far.
func CPU(pid int) time.Duration {
	user, sys := CPUSplit(pid)
	return user + sys
}

// CPUSplit is a process's user and system CPU time so far.
func CPUSplit(pid int) (user, sys time.Duration) {
	fields := stat(pid)
	if fields == nil {
		return 0, 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime) * time.Second / 100, time.Duration(stime) * time.Second / 100 // USER_HZ
}

// Faults is a process's minor page faults so far.
func Faults(pid int) uint64 {
	fields := stat(pid)
	if fields == nil {
		return 0
	}
	n, _ := strconv.ParseUint(fields[7], 10, 64)
	return n
}

// stat is /proc/PID/stat's fields after the command's name (state
// first), or nil.
func stat(pid int) []string {
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

// PeakRSS is a process's VmHWM in MiB.
func PeakRSS(pid int) float64 {
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

// IO is the bytes a process has read and written through system calls
// so far, sockets included (/proc/PID/io's rchar and wchar; 0, 0 when
// unreadable).
func IO(pid int) (read, written uint64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			read = n
		case "wchar":
			written = n
		}
	}
	return read, written
}

// Description names the hardware: CPU model, cores, memory.
func Description() string {
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
