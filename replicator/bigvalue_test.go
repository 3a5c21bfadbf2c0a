package replicator

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFaultLargeValueMemory: a row holding a 64 MiB LONGBLOB, inserted and
// then updated in another column (the binlog then carries the value twice,
// before and after), arrives whole, and the daemon's peak RSS (a child
// process, from the kernel) grows by at most three times the value (the
// event's two images and the block's copy) over its peak before, plus
// 16 MiB for the buffers a writer uses to send (encoder, compression).
func TestFaultLargeValueMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 64 MiB value")
	}
	const size = 64 << 20
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("SET GLOBAL max_allowed_packet = 1073741824",
		"CREATE TABLE "+a+".big (id INT PRIMARY KEY, n INT NOT NULL, b LONGBLOB)",
		"INSERT INTO "+a+".big VALUES (1, 1, 'small')")
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, time.Minute)
	before := peakRSSMiB(t, d.cmd.Process.Pid)
	h.session(a, fmt.Sprintf("INSERT INTO %%s.big VALUES (2, 1, REPEAT('v', %d))", size))
	h.waitCaughtUpProcess(d, logPath, 2*time.Minute)
	afterInsert := peakRSSMiB(t, d.cmd.Process.Pid)
	h.session(a, "UPDATE %s.big SET n = n + 1 WHERE id = 2")
	h.waitCaughtUpProcess(d, logPath, 2*time.Minute)
	after := peakRSSMiB(t, d.cmd.Process.Pid)
	var n, l uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT toUInt64(n), length(b) FROM "+a+".big FINAL WHERE id = 2").Scan(&n, &l); err != nil {
		t.Fatal(err)
	}
	if n != 2 || l != size {
		t.Fatalf("ClickHouse holds n=%d and a %d-byte value, want 2 and %d", n, l, size)
	}
	t.Logf("peak RSS: %.0f MiB before, %.0f MiB after the insert, %.0f MiB after the update of a row with a %d MiB value", before, afterInsert, after, size>>20)
	if grow := after - before; grow > 3*size>>20+16 && !raceEnabled {
		t.Errorf("peak RSS grew by %.0f MiB, want at most %d MiB (3 times the value, plus 16)", grow, 3*size>>20+16)
	}
}
