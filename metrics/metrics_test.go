package metrics

import (
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/schema"
)

// family is a metric's family in a scrape; nil when it has no series.
func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// gauge is the value of an unlabelled gauge as a scrape sees it.
func gauge(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	f := family(t, m, name)
	if f == nil {
		t.Fatalf("%s is not registered", name)
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}

// series counts a metric's series in a scrape.
func series(t *testing.T, m *Metrics, name string) int {
	t.Helper()
	return len(family(t, m, name).GetMetric())
}

// TestLagGrowsWhileNothingGetsThrough: the lag is read from the clock at
// scrape time, so it grows during a stall instead of freezing.
func TestLagGrowsWhileNothingGetsThrough(t *testing.T) {
	m := New()
	if got := gauge(t, m, "binlog2ch_lag_seconds"); got != 0 {
		t.Fatalf("lag before anything was read: %v, want 0", got)
	}
	m.Durable.Store(time.Now().Add(-90 * time.Second).UnixNano())
	m.Read.Store(time.Now().Add(-30 * time.Second).UnixNano())
	if got := gauge(t, m, "binlog2ch_lag_seconds"); got < 90 || got > 3600 {
		t.Errorf("lag %v s, want at least the 90 s since the newest durable event", got)
	}
	if got := gauge(t, m, "binlog2ch_source_lag_seconds"); got < 30 || got > 90 {
		t.Errorf("source lag %v s, want at least the 30 s since the newest event read", got)
	}
	if got := gauge(t, m, "binlog2ch_ready"); got != 0 {
		t.Errorf("ready %v without a readiness function", got)
	}
	m.Ready = func() bool { return true }
	if got := gauge(t, m, "binlog2ch_ready"); got != 1 {
		t.Errorf("ready %v, want 1", got)
	}
}

func TestAdvanceToNeverGoesBack(t *testing.T) {
	var a atomic.Int64
	AdvanceTo(&a, 10)
	AdvanceTo(&a, 5)
	if a.Load() != 10 {
		t.Errorf("moved back to %d", a.Load())
	}
	AdvanceTo(&a, 11)
	if a.Load() != 11 {
		t.Errorf("did not move forward: %d", a.Load())
	}
}

// TestEveryStageFromZero: each error stage and DDL result exists at 0
// before the first failure, so rate() and increase() see it.
func TestEveryStageFromZero(t *testing.T) {
	m := New()
	if n := series(t, m, "binlog2ch_errors_total"); n != 6 {
		t.Errorf("%d error stages, want 6", n)
	}
	if n := series(t, m, "binlog2ch_ddl_total"); n != 4 {
		t.Errorf("%d DDL results, want 4", n)
	}
}

// TestForgetDropsTableSeries: a dropped or renamed table's series go, the
// others' stay.
func TestForgetDropsTableSeries(t *testing.T) {
	m := New()
	a, b := schema.TableName{Database: "d", Table: "a"}, schema.TableName{Database: "d", Table: "b"}
	for _, name := range []schema.TableName{a, b} {
		tm := m.ForTable(name)
		tm.Rows[schema.OpInsert].Add(3)
		tm.QueueRows.Set(1)
		tm.BatchRows.Observe(3)
		m.SnapshotCopied.WithLabelValues(name.Database, name.Table).Set(3)
	}
	m.Forget(a)
	// b's insert, update and delete series are left.
	if n := series(t, m, "binlog2ch_rows_total"); n != 3 {
		t.Errorf("%d rows series left, want b's 3", n)
	}
	for _, name := range []string{"binlog2ch_queue_rows", "binlog2ch_batch_rows", "binlog2ch_snapshot_rows_copied"} {
		if n := series(t, m, name); n != 1 {
			t.Errorf("%s: %d series left, want b's", name, n)
		}
	}
	m.Forget(b)
	if n := series(t, m, "binlog2ch_rows_total"); n != 0 {
		t.Errorf("%d rows series left after both tables went", n)
	}
}

// TestLagAtEnd: the lags read 0 until the wait at the server's end stops
// counting as caught up, then count from their timestamps again.
func TestLagAtEnd(t *testing.T) {
	m := New()
	past := time.Now().Add(-3 * time.Second).UnixNano()
	m.Durable.Store(past)
	m.Read.Store(past)
	if lag := m.Lag(); lag < 2.9 {
		t.Errorf("reading events: lag %.3f, want about 3", lag)
	}
	m.AtEnd.Store(time.Now().Add(time.Hour).UnixNano())
	if m.SourceLag() != 0 || m.Lag() < 2.9 {
		t.Errorf("at the end with rows pending: source lag %.3f (want 0), lag %.3f (want about 3)", m.SourceLag(), m.Lag())
	}
	m.DurableAtEnd.Store(m.AtEnd.Load())
	if m.Lag() != 0 {
		t.Errorf("at the end, nothing pending: lag %.3f, want 0", m.Lag())
	}
	m.AtEnd.Store(time.Now().Add(-time.Millisecond).UnixNano())
	m.DurableAtEnd.Store(m.AtEnd.Load())
	if m.Lag() < 2.9 || m.SourceLag() < 2.9 {
		t.Errorf("the heartbeat overdue: lag %.3f, source lag %.3f, want about 3 each", m.Lag(), m.SourceLag())
	}
}
