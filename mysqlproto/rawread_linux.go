//go:build linux

package mysqlproto

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// rawReader reads a TCP connection with raw read system calls: the
// socket is non-blocking (Go's poller waits for it), so a read never
// blocks the thread, and it skips the runtime's system-call bookkeeping,
// which wakes the runtime's monitor thread after each idle spell.
//
// Rows are read in batches (ReadBatch): a server writes a result set in
// pieces of its network buffer (16 KiB), and a reader that keeps up with
// it woke for each one; those wake-ups were most of a table copy's
// context switches. A batch read waits until batchLowat bytes are there
// (SO_RCVLOWAT) or wait has passed, whichever comes first.
type rawReader struct {
	rc       syscall.RawConn
	tc       *net.TCPConn
	lowat    int           // the socket's SO_RCVLOWAT (0: the default, 1)
	wait     time.Duration // how long a batch read waits for batchLowat bytes
	deadline bool          // a read deadline of ReadBatch's is set
	canceled *atomic.Bool  // the caller's context ended (Conn.watch)
}

// batchLowat is the bytes a batch read waits for; minWait and maxWait
// bound how long it waits for them: at the end of a result set fewer
// come, and a server that sends nothing for a while (a query still
// looking for its first rows) makes the wait grow, so an idle reader
// wakes rarely.
const (
	batchLowat = 64 << 10
	minWait    = 4 * time.Millisecond
	maxWait    = 128 * time.Millisecond
)

func newRawReader(nc net.Conn, canceled *atomic.Bool) *rawReader {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil // TLS: its own reads
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawReader{rc: rc, tc: tc, wait: minWait, canceled: canceled}
}

// Read reads what the socket has, waiting for its first byte.
func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := r.setLowat(1); err != nil {
		return 0, err
	}
	if r.deadline {
		r.deadline = false
		if err := r.tc.SetReadDeadline(time.Time{}); err != nil {
			return 0, err
		}
		if r.canceled.Load() {
			return 0, os.ErrDeadlineExceeded
		}
	}
	return r.read(p, true)
}

// ReadBatch reads rows into p, waiting until batchLowat bytes are there or
// r.wait has passed. (The mark stays set until a control packet is read:
// each change is a system call, which also wakes the runtime's monitor.)
func (r *rawReader) ReadBatch(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := r.setLowat(batchLowat); err != nil {
		return 0, err
	}
	for {
		if r.canceled.Load() {
			return 0, os.ErrDeadlineExceeded
		}
		// A cancellation between the check and this deadline is seen when
		// it passes (Conn.watch sets canceled first).
		r.deadline = true
		if err := r.tc.SetReadDeadline(time.Now().Add(r.wait)); err != nil {
			return 0, err
		}
		n, err := r.read(p, true)
		if err == nil {
			if n >= batchLowat {
				r.wait = minWait
			}
			return n, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || r.canceled.Load() {
			return n, err
		}
		// Fewer bytes than batchLowat came: take those, if any (the
		// expired deadline would refuse the read).
		r.deadline = false
		if err := r.tc.SetReadDeadline(time.Time{}); err != nil {
			return 0, err
		}
		if r.canceled.Load() {
			return 0, os.ErrDeadlineExceeded
		}
		if n, err = r.read(p, false); n > 0 || err != nil {
			return n, err
		}
		r.wait = min(2*r.wait, maxWait)
	}
}

// setLowat sets SO_RCVLOWAT when it changes.
func (r *rawReader) setLowat(n int) error {
	if r.lowat == n || r.lowat == 0 && n == 1 {
		return nil
	}
	var serr error
	if err := r.rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("setsockopt SO_RCVLOWAT", serr)
	}
	r.lowat = n
	return nil
}

// read reads once; with wait, the poller waits until the socket is
// readable, else an empty socket reads 0 bytes.
func (r *rawReader) read(p []byte, wait bool) (int, error) {
	var n int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		k, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		for errno == syscall.EINTR {
			k, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		}
		switch {
		case errno == syscall.EAGAIN:
			return !wait
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
