package hostcost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"time"
)

// The floor under a catch-up's per-byte cost: what the least a program
// can do with its bytes costs this host's CPU. A catch-up reads the
// binlog's bytes from a socket, copies the values into the memory a batch
// is held in, and writes them to ClickHouse's socket; Floor does exactly
// that and nothing else (no event, no value decoded), on one locked OS
// thread whose CPU it reads, the kernel's share of the sockets and of the
// first touch of the batch memory included. Another goroutine feeds the
// socket it reads and another drains the one it writes, as MariaDB and
// ClickHouse do for the daemon: their CPU is not the floor's.

// FloorOptions are the bytes to move.
type FloorOptions struct {
	Read    int64 // bytes read from the first socket, each copied once
	Written int64 // bytes written to the second, out of the copies
	// Held is the memory the copies go into, in chunks of ChunkBytes, used
	// in turn: each touched fresh the first time round, as a daemon's
	// batches are (at least one chunk).
	Held int64
}

// FloorResult is what moving them cost the thread that did.
type FloorResult struct {
	User, System time.Duration
	Reads        int // read system calls that returned bytes
	Faults       int64
}

// CPU is User + System.
func (r FloorResult) CPU() time.Duration { return r.User + r.System }

const (
	// ChunkBytes is a chunk of the held memory, as a column's arena chunk.
	ChunkBytes = 1 << 20
	// readBytes is the read buffer, and slowRead the read below which the
	// reader waits a millisecond for more bytes to gather: the binlog
	// reader's own sizes and pacing (binlog/wire.go), the cheapest way of
	// reading a stream this code knows.
	readBytes = 256 << 10
	slowRead  = 64 << 10
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// Floor moves o's bytes and reports their cost.
func Floor(ctx context.Context, o FloorOptions) (FloorResult, error) {
	if o.Read <= 0 || o.Written < 0 {
		return FloorResult{}, fmt.Errorf("hostcost: a floor of %d bytes read and %d written", o.Read, o.Written)
	}
	in, inPeer, err := loopbackPair(ctx)
	if err != nil {
		return FloorResult{}, err
	}
	defer in.Close()
	defer inPeer.Close()
	out, outPeer, err := loopbackPair(ctx)
	if err != nil {
		return FloorResult{}, err
	}
	defer out.Close()
	defer outPeer.Close()
	stop := context.AfterFunc(ctx, func() { in.Close(); out.Close() })
	defer stop()

	fed := make(chan error, 1)
	go func() { fed <- feed(inPeer, o.Read) }()
	drained := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, outPeer)
		drained <- n
	}()
	res, err := move(in, out, o)
	out.Close()
	if ferr := <-fed; err == nil && ferr != nil {
		err = fmt.Errorf("hostcost: feeding the floor's socket: %w", ferr)
	}
	if n := <-drained; err == nil && n != o.Written {
		err = fmt.Errorf("hostcost: the floor wrote %d bytes of %d", n, o.Written)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return res, err
}

// move is the floor's work, on a thread of its own.
func move(in, out net.Conn, o FloorOptions) (FloorResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &before); err != nil {
		return FloorResult{}, fmt.Errorf("hostcost: getrusage: %w", err)
	}
	chunks := make([][]byte, max(1, o.Held/ChunkBytes))
	buf := make([]byte, readBytes)
	var res FloorResult
	var read, written int64
	c, at := 0, 0 // the chunk being filled and its length
	for read < o.Read {
		n, err := in.Read(buf[:min(int64(len(buf)), o.Read-read)])
		if n > 0 {
			res.Reads++
		}
		for p := buf[:n]; len(p) > 0; {
			if chunks[c] == nil {
				chunks[c] = make([]byte, ChunkBytes)
			}
			k := copy(chunks[c][at:], p)
			p, at = p[k:], at+k
			if copied := read + int64(n-len(p)); at == ChunkBytes || copied == o.Read {
				// A full chunk goes out in the share of the bytes written
				// to those read.
				due := o.Written
				if copied < o.Read {
					due = int64(float64(o.Written) * float64(copied) / float64(o.Read))
				}
				for due > written {
					w := min(due-written, int64(at))
					if _, err := out.Write(chunks[c][:w]); err != nil {
						return res, fmt.Errorf("hostcost: the floor's write: %w", err)
					}
					written += w
				}
				c, at = (c+1)%len(chunks), 0
			}
		}
		read += int64(n)
		if err != nil {
			if read < o.Read {
				return res, fmt.Errorf("hostcost: the floor's read after %d bytes: %w", read, err)
			}
			break
		}
		if n < slowRead {
			time.Sleep(time.Millisecond)
		}
	}
	if err := syscall.Getrusage(rusageThread, &after); err != nil {
		return res, fmt.Errorf("hostcost: getrusage: %w", err)
	}
	res.User = time.Duration(after.Utime.Nano() - before.Utime.Nano())
	res.System = time.Duration(after.Stime.Nano() - before.Stime.Nano())
	res.Faults = after.Minflt - before.Minflt
	return res, nil
}

// feed writes n bytes of varied values to w.
func feed(w io.Writer, n int64) error {
	src := make([]byte, readBytes)
	for i := range src {
		src[i] = byte(i*7 + i>>9)
	}
	for n > 0 {
		k, err := w.Write(src[:min(int64(len(src)), n)])
		n -= int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}

// loopbackPair is the two ends of a TCP connection over 127.0.0.1.
func loopbackPair(ctx context.Context) (net.Conn, net.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("hostcost: %w", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, fmt.Errorf("hostcost: %w", err)
	}
	peer := <-accepted
	if peer == nil {
		c.Close()
		return nil, nil, errors.New("hostcost: the loopback listener accepted nothing")
	}
	return c, peer, nil
}

// Workload is what a run of rows cost a process, and what it moved, per
// row: its CPU per million rows, the bytes it read and wrote through
// system calls (IO), its peak RSS.
type Workload struct {
	Rows                                float64
	CPUPerMRows                         float64
	ReadBytesPerRow, WrittenBytesPerRow float64
	PeakRSSMiB                          float64
}

// PerByteFloor is a workload's per-byte floor against a base workload of
// the same rows with fewer bytes: the base's cost (what a row costs
// beyond its bytes, and the base's own bytes) plus the least that moving
// the further bytes costs this host (Floor: read from a socket, copied
// once into memory as large as the further memory the workload held,
// written to a socket).
type PerByteFloor struct {
	ExtraReadBytesPerRow    float64 `json:"extra_read_bytes_per_row"`
	ExtraWrittenBytesPerRow float64 `json:"extra_written_bytes_per_row"`
	ExtraHeldMiB            float64 `json:"extra_held_mib"`
	// MoveCPUSeconds is what Floor spent on the further bytes of all the
	// workload's rows, CPUPerMRows the floor per million rows, and Ratio
	// the workload's CPU over it.
	MoveCPUSeconds float64 `json:"move_cpu_seconds"`
	CPUPerMRows    float64 `json:"cpu_seconds_per_million_rows"`
	Ratio          float64 `json:"ratio"`
}

// MeasurePerByte measures w's PerByteFloor against base (nil when w read
// no more bytes a row: too few rows to tell).
func MeasurePerByte(ctx context.Context, base, w Workload) (*PerByteFloor, error) {
	f := &PerByteFloor{ExtraReadBytesPerRow: max(w.ReadBytesPerRow-base.ReadBytesPerRow, 0),
		ExtraWrittenBytesPerRow: max(w.WrittenBytesPerRow-base.WrittenBytesPerRow, 0),
		ExtraHeldMiB:            max(w.PeakRSSMiB-base.PeakRSSMiB, 0)}
	if f.ExtraReadBytesPerRow*w.Rows < 1 {
		return nil, nil
	}
	res, err := Floor(ctx, FloorOptions{Read: int64(f.ExtraReadBytesPerRow * w.Rows),
		Written: int64(f.ExtraWrittenBytesPerRow * w.Rows), Held: int64(f.ExtraHeldMiB * (1 << 20))})
	if err != nil {
		return nil, err
	}
	f.MoveCPUSeconds = res.CPU().Seconds()
	f.CPUPerMRows = base.CPUPerMRows + f.MoveCPUSeconds/(w.Rows/1e6)
	f.Ratio = w.CPUPerMRows / f.CPUPerMRows
	return f, nil
}
