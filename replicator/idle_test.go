package replicator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/metrics"
)

// TestIdleWritersPark: writers that park as soon as they hold nothing (1
// ms), so they park and wake around nearly every event, lose nothing:
// rows, updates, deletes, an ALTER and a RENAME of tables whose writers
// are parked all arrive; once quiet, every writer is parked (no goroutine,
// no batch memory), and the daemon stops cleanly with them parked.
func TestIdleWritersPark(t *testing.T) {
	h := newHarness(t, 1, "batch: {flush_interval: 100ms}\ncheckpoint: {interval: 50ms}\n")
	a := h.dbs[0]
	const tables = 20
	names := make([]string, tables)
	for i := range names {
		names[i] = fmt.Sprintf("t%d", i)
		h.exec(fmt.Sprintf("CREATE TABLE %s.%s (id INT PRIMARY KEY, v VARCHAR(40))", a, names[i]))
	}
	run := h.startWith(testHooks{parkAfter: time.Millisecond})
	m := run.r.m
	for round := 0; round < 4; round++ {
		for i, n := range names {
			h.exec(fmt.Sprintf("INSERT INTO %s.%s (id, v) VALUES (%d, 'r%d'), (%d, 'x')", a, n, 2*round, i, 2*round+1))
			if round > 0 && i%3 == 0 {
				h.exec(fmt.Sprintf("UPDATE %s.%s SET v = 'u%d' WHERE id = %d", a, n, round, 2*round-2),
					fmt.Sprintf("DELETE FROM %s.%s WHERE id = %d", a, n, 2*round-1))
			}
		}
		if round == 1 {
			// The writers are parked or about to be: a quiet table's first
			// rows after a schema change, and after a rename.
			h.waitCaughtUp(run, time.Minute)
			h.waitParked(m, tables)
			h.exec(fmt.Sprintf("ALTER TABLE %s.t1 ADD COLUMN w INT DEFAULT 7", a),
				fmt.Sprintf("RENAME TABLE %s.t2 TO %s.t2b", a, a))
			names[2] = "t2b"
		}
	}
	h.waitCaughtUp(run, time.Minute)
	for _, n := range names {
		h.assertEqual(a, n, []string{"id", "v"})
	}
	h.verifyEqual(names...)
	h.waitParked(m, tables)
	if b := gaugeValue(t, m.BufferBytes); b != 0 {
		t.Errorf("binlog2ch_batch_buffer_bytes is %v with every writer parked, want 0", b)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.logs.String(), "stopped") {
		t.Errorf("no clean stop in the logs:\n%s", run.logs)
	}
}

// waitParked waits until n writers are parked and none runs.
func (h *harness) waitParked(m *metrics.Metrics, n int) {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		parked := gaugeValue(h.t, m.Writers.WithLabelValues(metrics.WriterParked))
		running := gaugeValue(h.t, m.Writers.WithLabelValues(metrics.WriterRunning))
		if parked == float64(n) && running == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("writers: %v parked, %v running; want %d parked, none running", parked, running, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBufferBudget: many tables catching up at once under a 1 MiB buffer
// budget: writers send early (memory grants) and wait for their inserts,
// and every row arrives; the buffer gauge is back at 0 once all is sent.
func TestBufferBudget(t *testing.T) {
	h := newHarness(t, 1, "batch: {max_buffer_bytes: 1048576, max_rows: 100000, flush_interval: 100ms}\n")
	a := h.dbs[0]
	const tables = 8
	names := make([]string, tables)
	for i := range names {
		names[i] = fmt.Sprintf("b%d", i)
		h.exec(fmt.Sprintf("CREATE TABLE %s.%s (id INT PRIMARY KEY, v TEXT)", a, names[i]))
	}
	// Written before the daemon starts: it catches up on every table at
	// once, each with far more than its share of the budget queued.
	for i, n := range names {
		for k := 0; k < 4; k++ {
			var vals []string
			for j := 0; j < 100; j++ {
				vals = append(vals, fmt.Sprintf("(%d, REPEAT('%c', 4000))", k*100+j, 'a'+rune(i)))
			}
			h.exec(fmt.Sprintf("INSERT INTO %s.%s VALUES %s", a, n, strings.Join(vals, ",")))
		}
		h.exec(fmt.Sprintf("UPDATE %s.%s SET v = 'short' WHERE id %% 7 = 0", a, n))
	}
	run := h.start()
	h.waitCaughtUp(run, 2*time.Minute)
	h.verifyEqual(names...)
	m := run.r.m
	if g := counterOf(t, m.BudgetGranted.WithLabelValues("memory")); g == 0 {
		t.Error("no batch went early for memory under a 1 MiB budget with 12 MiB of rows")
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	if b := gaugeValue(t, m.BufferBytes); b != 0 {
		t.Errorf("binlog2ch_batch_buffer_bytes is %v after a clean stop, want 0", b)
	}
}
