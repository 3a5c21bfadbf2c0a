package replicator

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/state"
)

// BenchmarkCascade measures foreign-key cascades on a large child table:
// BINLOG2CH_BENCH_CHILDREN child rows (default 1M), ten per parent, copied
// by the initial snapshot; then single-parent DELETEs (each cascading to
// ten children) from one connection, timed until the checkpoint passes
// them, against the same DELETEs of parents whose child table has no key
// (nothing to derive); then 100 single-parent key UPDATEs (ON UPDATE
// CASCADE, derived one event at a time); then one DELETE of 1000 parents.
// It reports the parent deletes per second each way and the mean time the
// reader waits per cascade (binlog2ch_cascade_duration_seconds). Run it
// with -benchtime 1x.
func BenchmarkCascade(b *testing.B) {
	children := 1_000_000
	if v := os.Getenv("BINLOG2CH_BENCH_CHILDREN"); v != "" {
		children, _ = strconv.Atoi(v)
	}
	deletes := 300
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := newHarness(b, 1, "")
		db := h.dbs[0]
		parents := children / 10
		h.exec(
			"CREATE TABLE "+db+".parent (id INT PRIMARY KEY, name VARCHAR(20))",
			"CREATE TABLE "+db+".child (id INT PRIMARY KEY, parent_id INT, note VARCHAR(40), KEY (parent_id), FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE)",
			"CREATE TABLE "+db+".plain_parent (id INT PRIMARY KEY, name VARCHAR(20))",
			"CREATE TABLE "+db+".plain_child (id INT PRIMARY KEY, parent_id INT, note VARCHAR(40), KEY (parent_id))",
			fmt.Sprintf("INSERT INTO %s.parent SELECT seq, CONCAT('p', seq) FROM %s.seq_1_to_%d", db, db, parents),
			fmt.Sprintf("INSERT INTO %s.child SELECT seq, seq DIV 10 + 1, CONCAT('child note ', seq) FROM %s.seq_0_to_%d", db, db, children-1),
			fmt.Sprintf("INSERT INTO %s.plain_parent SELECT seq, CONCAT('p', seq) FROM %s.seq_1_to_%d", db, db, deletes),
			fmt.Sprintf("INSERT INTO %s.plain_child SELECT seq, seq DIV 10 + 1, CONCAT('child note ', seq) FROM %s.seq_0_to_%d", db, db, deletes*10-1),
		)
		if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
			b.Fatal(err)
		}
		copyStart := time.Now()
		run := h.start()
		h.waitCaughtUp(run, 10*time.Minute)
		b.Logf("initial snapshot of %d children and %d parents: %s", children, parents, time.Since(copyStart).Round(time.Millisecond))

		b.StartTimer()
		timed := func(what string, table string) float64 {
			start := time.Now()
			for p := 1; p <= deletes; p++ {
				h.exec(fmt.Sprintf("DELETE FROM %s.%s WHERE id = %d", db, table, p))
			}
			sent := time.Since(start)
			h.waitCaughtUp(run, 10*time.Minute)
			took := time.Since(start)
			rate := float64(deletes) / took.Seconds()
			b.Logf("%s: %d single-parent DELETEs in %s (MySQL took %s): %.0f parent deletes/s", what, deletes, took.Round(time.Millisecond), sent.Round(time.Millisecond), rate)
			return rate
		}
		plain := timed("no foreign key", "plain_parent")
		n0, sum0 := histogram(b, run)
		cascading := timed("ON DELETE CASCADE, 10 children each", "parent")
		n1, sum1 := histogram(b, run)
		b.Logf("the reader waited %.1f ms per cascade on average (%d cascades: runs of deletes)", (sum1-sum0)/float64(n1-n0)*1000, n1-n0)

		// Updates of the key are derived one event at a time.
		updates := 100
		start := time.Now()
		for p := deletes + 1; p <= deletes+updates; p++ {
			h.exec(fmt.Sprintf("UPDATE %s.parent SET id = %d WHERE id = %d", db, p+10_000_000, p))
		}
		h.waitCaughtUp(run, 10*time.Minute)
		nu, sumu := histogram(b, run)
		b.Logf("ON UPDATE CASCADE: %d single-parent key UPDATEs in %s: %.0f/s, %.1f ms each", updates, time.Since(start).Round(time.Millisecond),
			float64(updates)/time.Since(start).Seconds(), (sumu-sum1)/float64(nu-n1)*1000)
		n1, sum1 = nu, sumu

		start = time.Now()
		h.exec(fmt.Sprintf("DELETE FROM %s.parent WHERE id BETWEEN %d AND %d", db, deletes+updates+1, deletes+updates+1000))
		h.waitCaughtUp(run, 10*time.Minute)
		n2, sum2 := histogram(b, run)
		b.Logf("one DELETE of 1000 parents (10000 children): %s, %d cascades, %.1f ms each", time.Since(start).Round(time.Millisecond), n2-n1, (sum2-sum1)/float64(n2-n1)*1000)
		b.StopTimer()
		h.assertEqual(db, "child", []string{"id", "parent_id", "note"})
		b.ReportMetric(plain, "plain_deletes/s")
		b.ReportMetric(cascading, "cascading_deletes/s")
		b.ReportMetric((sum1-sum0)/float64(n1-n0)*1000, "ms/cascade")
		if err := run.stop(b); err != nil {
			b.Fatal(err)
		}
	}
}

// histogram reads binlog2ch_cascade_duration_seconds' count and sum.
func histogram(b *testing.B, run *running) (uint64, float64) {
	var m dto.Metric
	if err := run.r.m.CascadeDuration.Write(&m); err != nil {
		b.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
