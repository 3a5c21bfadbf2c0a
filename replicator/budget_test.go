package replicator

import (
	"fmt"
	"testing"
	"time"
)

// TestInsertBudget: many tables trickling single rows, under a small
// insert budget and a long flush interval: every row arrives, each table's
// batch through the budget (interval or live grants), none lost or
// doubled.
func TestInsertBudget(t *testing.T) {
	h := newHarness(t, 1, "batch: {flush_interval: 2s, live_flush_interval: 50ms, max_inserts_per_second: 5}\ncheckpoint: {interval: 100ms}\n")
	a := h.dbs[0]
	const tables = 12
	for i := 0; i < tables; i++ {
		h.exec(fmt.Sprintf("CREATE TABLE %s.t%d (id INT PRIMARY KEY, v INT)", a, i))
	}
	run := h.start()
	for round := 0; round < 3; round++ {
		for i := 0; i < tables; i++ {
			h.exec(fmt.Sprintf("INSERT INTO %s.t%d VALUES (%d, %d)", a, i, round, round*i))
		}
	}
	h.exec(fmt.Sprintf("UPDATE %s.t0 SET v = 99 WHERE id = 1", a), fmt.Sprintf("DELETE FROM %s.t1 WHERE id = 2", a))
	h.waitCaughtUp(run, 90*time.Second)
	names := make([]string, tables)
	for i := range names {
		names[i] = fmt.Sprintf("t%d", i)
		h.assertEqual(a, names[i], []string{"id", "v"})
	}
	h.verifyEqual(names...)
	m := run.r.m
	waited := counterOf(t, m.BudgetGranted.WithLabelValues("interval")) + counterOf(t, m.BudgetGranted.WithLabelValues("live"))
	if waited < tables {
		t.Errorf("%v batches went through the budget, want at least one per table (%d)", waited, tables)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
}
