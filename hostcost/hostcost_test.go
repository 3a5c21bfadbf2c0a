package hostcost

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestProc reads this test's own process: its CPU, faults and peak RSS
// are there, and reading a file of 3 MiB adds at least as much to rchar.
func TestProc(t *testing.T) {
	pid := os.Getpid()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r0, w0 := IO(pid)
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	r1, w1 := IO(pid)
	if r1-r0 < 3<<20 || w1 < w0 {
		t.Errorf("rchar %d -> %d, wchar %d -> %d over a read of 3 MiB", r0, r1, w0, w1)
	}
	if PeakRSS(pid) <= 0 || Faults(pid) == 0 {
		t.Errorf("peak RSS %.1f MiB, %d minor faults", PeakRSS(pid), Faults(pid))
	}
	if user, sys := CPUSplit(pid); user+sys != CPU(pid) && CPU(pid) < user+sys {
		t.Errorf("CPU %v, split %v + %v", CPU(pid), user, sys)
	}
	if r, w := IO(1 << 30); r != 0 || w != 0 || CPU(1<<30) != 0 || PeakRSS(1<<30) != 0 {
		t.Error("a process that does not exist reads as more than nothing")
	}
}

// TestFloor moves bytes through the floor's sockets and memory: every
// byte asked for is read and written (Floor fails otherwise, the drained
// bytes counted on the far side), fewer written than read, more, or none.
func TestFloor(t *testing.T) {
	for _, o := range []FloorOptions{
		{Read: 8 << 20, Written: 3 << 20, Held: 4 << 20},
		{Read: 3<<20 + 12345, Written: 7<<20 + 1, Held: 2 << 20},
		{Read: 1 << 20, Written: 0, Held: 0},
	} {
		res, err := Floor(context.Background(), o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if res.Reads == 0 || res.CPU() <= 0 {
			t.Errorf("%+v: %d reads, %v of CPU", o, res.Reads, res.CPU())
		}
	}
	if _, err := Floor(context.Background(), FloorOptions{}); err == nil {
		t.Error("a floor of no bytes measured")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Floor(ctx, FloorOptions{Read: 1 << 30, Written: 1 << 30}); err == nil {
		t.Error("a cancelled floor ran")
	}
}

// TestMeasurePerByte: the floor is the base's cost plus moving the
// further bytes, and a workload that read no more bytes has none.
func TestMeasurePerByte(t *testing.T) {
	base := Workload{Rows: 20000, CPUPerMRows: 1, ReadBytesPerRow: 100, WrittenBytesPerRow: 100, PeakRSSMiB: 100}
	w := Workload{Rows: 10000, CPUPerMRows: 3, ReadBytesPerRow: 1100, WrittenBytesPerRow: 600, PeakRSSMiB: 104}
	f, err := MeasurePerByte(context.Background(), base, w)
	if err != nil {
		t.Fatal(err)
	}
	if f.ExtraReadBytesPerRow != 1000 || f.ExtraWrittenBytesPerRow != 500 || f.ExtraHeldMiB != 4 {
		t.Errorf("further bytes %+v", f)
	}
	if f.MoveCPUSeconds <= 0 || f.CPUPerMRows != 1+f.MoveCPUSeconds/0.01 || f.Ratio != 3/f.CPUPerMRows {
		t.Errorf("floor %+v", f)
	}
	if f, err := MeasurePerByte(context.Background(), base, base); f != nil || err != nil {
		t.Errorf("a workload of no further bytes: %+v, %v", f, err)
	}
}
