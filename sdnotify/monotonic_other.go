//go:build !linux

package sdnotify

// monotonicUsec: systemd runs on Linux only; elsewhere no MONOTONIC_USEC
// is sent.
func monotonicUsec() (uint64, bool) { return 0, false }
