package replicator

import (
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestStreamedCatchUp catches up on inserts, updates and deletes written
// while the daemon was stopped, in batches of 500 rows that may go several
// to an INSERT (sink's streams): verify finds both sides equal, and the
// table holds each version once (a raw count without FINAL: no batch was
// stored twice). Whether batches streamed depends on how far the reader
// ran ahead of the writer; the sink's TestStreamedBatches makes them.
func TestStreamedCatchUp(t *testing.T) {
	h := newHarness(t, 1, "batch: {max_rows: 500, max_inflight: 1, max_insert_rows: 1048576}\n")
	db := h.dbs[0]
	h.exec(fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY, v VARCHAR(40))", db))
	run := h.start()
	h.waitCaughtUp(run, time.Minute)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	h.fill(db, "t", 20000)
	h.exec(fmt.Sprintf("UPDATE `%s`.t SET v = CONCAT(v, '-u') WHERE id <= 5000", db),
		fmt.Sprintf("DELETE FROM `%s`.t WHERE id > 19000", db))
	run = h.start()
	h.waitCaughtUp(run, 2*time.Minute)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	var streams, batches dto.Metric
	if err := run.r.m.InsertStreams.Write(&streams); err != nil {
		t.Fatal(err)
	}
	if err := run.r.m.StreamedBatches.Write(&batches); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v streams of %v batches", streams.GetCounter().GetValue(), batches.GetCounter().GetValue())
	if raw, final := h.chCounts(db, "t"); raw != 20000+5000+1000 || final != 19000 {
		t.Fatalf("ClickHouse holds %d versions (%d current rows), want 26000 (19000)", raw, final)
	}
	h.verifyEqual("t")
}
