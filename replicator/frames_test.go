package replicator

import (
	"fmt"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/metrics"
)

// TestVariedRowsFrames replicates loadgen's varied rows (long text and
// random blobs: frames LZ4 cannot shrink) with clickhouse.compression lz4
// and lz4-adaptive: the NONE frames that carry them must land every row
// as MySQL holds it, and the metric count them by reason.
func TestVariedRowsFrames(t *testing.T) {
	for _, comp := range []string{"lz4", "lz4-adaptive"} {
		t.Run(comp, func(t *testing.T) {
			srv := servertest.Need(t)
			h := newHarnessOn(t, srv, fmt.Sprintf(`mysql: {addr: %q, user: %q, password: %q, server_id: 4242}
clickhouse: {addr: [%q], user: %q, password: %q, compression: %s}
`, srv.MySQL.Addr(), srv.MySQL.User, srv.MySQL.Password, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password, comp), 1, "")
			run := h.start()
			h.fillFieldTest(h.dbs[0], 8000, 0) // loadgen's defaults: ~1 KB of binlog a row
			h.waitCaughtUp(run, 3*time.Minute)
			h.verifyEqual("binlog_field_test_1")
			m := run.r.m
			plain := counterOf(t, m.UncompressedFrames.WithLabelValues(metrics.FramesIncompressible))
			probe := counterOf(t, m.UncompressedFrames.WithLabelValues(metrics.FramesProbe))
			if comp == "lz4" && (plain < 1 || probe != 0) || comp == "lz4-adaptive" && probe < 1 {
				t.Errorf("uncompressed frames: %v incompressible, %v probe", plain, probe)
			}
			if err := run.stop(t); err != nil {
				t.Fatal(err)
			}
		})
	}
}
