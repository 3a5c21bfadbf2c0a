//go:build !linux

package control

import "net"

// peerUID: only Linux is checked (SO_PEERCRED); elsewhere the socket's
// mode (0600, in the daemon's state_dir) is the only guard.
func peerUID(*net.UnixConn) (uid int, checked bool, err error) { return 0, false, nil }

// withSocketPath calls f with path itself.
func withSocketPath(path string, f func(addr string) error) error { return f(path) }
