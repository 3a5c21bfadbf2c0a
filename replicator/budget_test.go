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

// TestLightLoadGoesAtOnce: with the reader live, a quiet table's rows go
// out without waiting out any interval (both an hour here): only the
// insert stands between a light load's commit and ClickHouse.
func TestLightLoadGoesAtOnce(t *testing.T) {
	h := newHarness(t, 1, "batch: {flush_interval: 1h, live_flush_interval: 1h}\ncheckpoint: {interval: 100ms}\n")
	a := h.dbs[0]
	const tables = 3
	names := make([]string, tables)
	for i := range names {
		names[i] = fmt.Sprintf("q%d", i)
		h.exec(fmt.Sprintf("CREATE TABLE %s.%s (id INT PRIMARY KEY, v INT)", a, names[i]))
	}
	run := h.start()
	h.waitCaughtUp(run, time.Minute) // live: the reader has read the newest events
	for i, n := range names {
		h.exec(fmt.Sprintf("INSERT INTO %s.%s VALUES (1, %d), (2, %d)", a, n, i, 2*i))
	}
	h.waitCaughtUp(run, time.Minute)
	h.verifyEqual(names...)
	if g := counterOf(t, run.r.m.BudgetGranted.WithLabelValues("live")); g < tables {
		t.Errorf("%v batches went live, want one per table (%d)", g, tables)
	}
}
