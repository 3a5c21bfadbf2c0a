package replicator

import (
	"context"
	"io"
	"log/slog"
	"testing"
)

// TestFullSyncZeroDateKey: a DATE primary key holding MySQL's zero date
// (allowed without NO_ZERO_DATE) is copied in ranges with every row, or
// refused loudly; never a silent skip.
func TestFullSyncZeroDateKey(t *testing.T) {
	h := newHarness(t, 1, "schema: {invalid_dates: clamp}\n")
	a := h.dbs[0]
	conn, err := h.my.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"SET SESSION sql_mode = ''",
		"CREATE TABLE " + a + ".zd (d DATE NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO " + a + ".zd VALUES ('0000-00-00', 0), ('2000-01-01', 1), ('2000-01-02', 2), ('2001-05-05', 3), ('2020-02-29', 4), ('2024-12-31', 5)",
	} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg := h.fullSyncConfig("fullsync: {chunk_rows: 2, workers: 1}\n", "")
	r, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.FullSync(context.Background(), FullSyncOptions{})
	var n uint64
	if qerr := h.ch.QueryRow(context.Background(), "SELECT count() FROM "+a+".zd FINAL").Scan(&n); qerr != nil && err == nil {
		t.Fatal(qerr)
	}
	t.Logf("fullsync: err=%v, rows in ClickHouse %d of 6", err, n)
	if err == nil && n != 6 {
		t.Fatalf("copied %d of 6 rows without an error", n)
	}
}
