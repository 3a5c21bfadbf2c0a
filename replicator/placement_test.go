package replicator

import (
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
)

// TestUpdateMovesRowInClickHouse: with an order_by or partition_by that
// takes columns outside the primary key, an UPDATE of those columns puts
// the row elsewhere in ClickHouse. ReplacingMergeTree replaces a row by
// its sorting key: a new sorting key gets the old place a tombstone, as a
// key change does (without one, FINAL kept the old row beside the new).
// Another partition with the same sorting key needs none: FINAL merges
// across partitions, where a tombstone of the row's own version would tie
// with it (and did hide the row).
func TestUpdateMovesRowInClickHouse(t *testing.T) {
	for _, c := range []struct {
		name     string
		override config.TableOverride
	}{
		{"order_by", config.TableOverride{OrderBy: []string{"d", "id"}}},
		{"partition_by", config.TableOverride{PartitionBy: "toYYYYMM(d)"}},
		{"both", config.TableOverride{OrderBy: []string{"grp", "id"}, PartitionBy: "toYear(d)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 1, "")
			a := h.dbs[0]
			h.cfg.Tables.Overrides = map[string]config.TableOverride{a + ".t": c.override}
			run := h.start()
			h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, d DATE NOT NULL, grp INT NOT NULL, v VARCHAR(20))",
				"INSERT INTO "+a+".t VALUES (1, '2024-01-05', 1, 'a'), (2, '2024-01-06', 1, 'b'), (3, '2024-02-07', 2, 'c'), (4, '2023-12-31', 2, 'd')")
			h.waitCaughtUp(run, 30*time.Second)
			h.exec("UPDATE "+a+".t SET d = '2024-03-01' WHERE id = 1", // another month and sort key
				"UPDATE "+a+".t SET d = '2025-01-02', grp = 3 WHERE id = 2", // another year, group
				"UPDATE "+a+".t SET v = 'c2' WHERE id = 3",                  // in place
				"UPDATE "+a+".t SET grp = 1, v = 'd2' WHERE id = 4",
				"UPDATE "+a+".t SET d = '2024-01-05' WHERE id = 1", // back again
				"DELETE FROM "+a+".t WHERE id = 3")
			h.waitCaughtUp(run, 30*time.Second)
			h.assertEqual(a, "t", []string{"id", "d", "grp", "v"})
			h.verifyEqual("t")
		})
	}
}
