package replicator

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/metrics"
)

// TestRetentionHeadroomLive runs the daemon on a private MariaDB with a
// binlog expiry below metrics.binlog_retention_margin: the headroom of
// the checkpoint's file (the active one: the whole expiry) is the gauge's,
// the status's, and one WARN however many checks find it below the
// margin; unlimited retention reads +Inf and an INFO, and falling below
// again is a second WARN.
func TestRetentionHeadroomLive(t *testing.T) {
	h, _ := newPrivateHarness(t)
	h.exec("SET GLOBAL binlog_expire_logs_seconds = 7200")
	h.cfg.Metrics.BinlogRetentionMargin = 3 * time.Hour
	var checks atomic.Int64
	run := h.startWith(testHooks{retentionEvery: 20 * time.Millisecond, retentionChecked: func() { checks.Add(1) }})
	// waitChecks waits for n more checks after the current one.
	waitChecks := func(n int64) {
		t.Helper()
		want := checks.Load() + n
		deadline := time.Now().Add(time.Minute)
		for checks.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d retention checks, want %d; logs:\n%s", checks.Load(), want, tail(run.logs.String(), 4000))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	warns := func() int {
		return strings.Count(run.logs.String(), "below metrics.binlog_retention_margin: once it is gone")
	}
	waitChecks(5)
	now := time.Now()
	h0 := metrics.RetentionHeadroom(run.r.m.RetentionAt.Load(), now)
	// Estimated at a check at most a few checks ago: the whole expiry
	// from then.
	if h0 > 7200 || h0 < 7200-30 {
		t.Fatalf("headroom %v, want the 7200 s expiry of the active file; logs:\n%s", h0, tail(run.logs.String(), 4000))
	}
	if got := gaugeValue(t, run.r.m.RetentionMargin); got != 3*3600 {
		t.Fatalf("margin gauge %v, want %d", got, 3*3600)
	}
	in := run.r.statusInfo()
	if in.Retention == nil || in.Retention.HeadroomSeconds == nil || *in.Retention.HeadroomSeconds > 7200 || in.Retention.Setting != "binlog_expire_logs_seconds" {
		t.Fatalf("status: %+v", in.Retention)
	}
	if n := warns(); n != 1 {
		t.Fatalf("%d WARNs below the margin after several checks, want 1; logs:\n%s", n, tail(run.logs.String(), 4000))
	}

	h.exec("SET GLOBAL binlog_expire_logs_seconds = 0")
	waitChecks(2)
	if got := metrics.RetentionHeadroom(run.r.m.RetentionAt.Load(), time.Now()); !math.IsInf(got, 1) {
		t.Fatalf("unlimited retention: headroom %v, want +Inf", got)
	}
	if !strings.Contains(run.logs.String(), "above metrics.binlog_retention_margin again") {
		t.Fatalf("no INFO once above the margin; logs:\n%s", tail(run.logs.String(), 4000))
	}
	h.exec("SET GLOBAL binlog_expire_logs_seconds = 600")
	waitChecks(3)
	if n := warns(); n != 2 {
		t.Fatalf("%d WARNs after falling below the margin twice, want 2; logs:\n%s", n, tail(run.logs.String(), 4000))
	}
}
