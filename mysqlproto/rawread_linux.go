//go:build linux

package mysqlproto

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawReader reads a TCP connection with raw read system calls: the
// socket is non-blocking (Go's poller waits for it), so a read never
// blocks the thread, and it skips the runtime's system-call bookkeeping,
// which wakes the runtime's monitor thread after each idle spell: with a
// table copy's readers often waiting for the server, those wake-ups were
// most of the process's context switches.
type rawReader struct {
	rc syscall.RawConn
}

func newRawReader(nc net.Conn) *rawReader {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawReader{rc: rc}
}

func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		k, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		for errno == syscall.EINTR {
			k, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		}
		switch {
		case errno == syscall.EAGAIN:
			return false // the poller waits until it is readable
		case errno != 0:
			rerr = errno
		case k == 0:
			rerr = io.EOF
		default:
			n = int(k)
		}
		return true
	})
	if err != nil {
		return n, err
	}
	return n, rerr
}
