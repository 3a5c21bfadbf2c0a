package replicator

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestAddColumnShowsWhenRead: ALTER TABLE ... ADD COLUMN on a replicated
// table that then gets no rows shows in ClickHouse when the ALTER is read,
// with MySQL's constant DEFAULT in the existing rows; also right after a
// restart, before the table's writer has seen any rows. The sides end
// equal.
func TestAddColumnShowsWhenRead(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 2)")
	h.waitCaughtUp(run, 30*time.Second)
	chColumns := func() []string {
		rows, err := h.ch.Query(context.Background(), "SELECT name FROM system.columns WHERE database = ? AND table = 't'", a)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	h.exec("ALTER TABLE " + a + ".t ADD COLUMN c INT NOT NULL DEFAULT 7, ADD COLUMN s VARCHAR(10) AFTER id")
	h.waitCaughtUp(run, 30*time.Second)
	if cols := chColumns(); !slices.Contains(cols, "c") || !slices.Contains(cols, "s") {
		t.Fatalf("ClickHouse columns after the ALTER was read: %v; want c and s", cols)
	}
	h.assertEqual(a, "t", []string{"id", "v", "c", "s"})

	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	run = h.start()
	h.exec("ALTER TABLE " + a + ".t ADD COLUMN d VARCHAR(5) DEFAULT 'x'")
	h.waitCaughtUp(run, 30*time.Second)
	if cols := chColumns(); !slices.Contains(cols, "d") {
		t.Fatalf("ClickHouse columns after the ALTER was read by a restarted daemon: %v; want d", cols)
	}
	h.assertEqual(a, "t", []string{"id", "v", "c", "s", "d"})
	h.exec("INSERT INTO " + a + ".t (id, v, s) VALUES (3, 3, 'three')")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("t")
}
