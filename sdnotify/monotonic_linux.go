package sdnotify

import (
	"syscall"
	"unsafe"
)

// monotonicUsec is CLOCK_MONOTONIC in microseconds, the clock systemd
// reads MONOTONIC_USEC on (Go's time package does not expose it).
func monotonicUsec() (uint64, bool) {
	const clockMonotonic = 1 // CLOCK_MONOTONIC, <linux/time.h>
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return uint64(ts.Sec)*1e6 + uint64(ts.Nsec)/1e3, true
}
