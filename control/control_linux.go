package control

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// peerUID is the uid of the process at the other end of c, as the kernel
// recorded it when it connected (SO_PEERCRED).
func peerUID(c *net.UnixConn) (uid int, checked bool, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, false, err
	}
	if credErr != nil {
		return 0, false, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return int(cred.Uid), true, nil
}

// maxSocketPath is the longest path a sockaddr_un holds (108 bytes with
// the terminating NUL).
const maxSocketPath = 107

// withSocketPath calls f with an address for the socket at path. A path
// too long for a sockaddr_un (a deep state_dir) is reached through the
// directory's descriptor: /proc/self/fd/N/name.
func withSocketPath(path string, f func(addr string) error) error {
	if len(path) <= maxSocketPath {
		return f(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return f(fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
}
