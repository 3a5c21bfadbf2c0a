package replicator

import (
	"context"
	"io"
	"log/slog"
	"strings"
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

// TestFullSyncRefusesInexactValue: with the default invalid_dates (error),
// a zero date stops the table's copy with an error naming the table, the
// column, the value and the key range it was read in; the rows are not
// written with a NULL or a guess.
func TestFullSyncRefusesInexactValue(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	conn, err := h.my.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"SET SESSION sql_mode = ''",
		"CREATE TABLE " + a + ".bad (id INT PRIMARY KEY, d DATE)",
		"INSERT INTO " + a + ".bad VALUES (1, '2000-01-01'), (2, '2000-01-02'), (3, '2000-01-03'), (4, '0000-00-00'), (5, '2000-01-05')",
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
	if err == nil {
		t.Fatal("a zero date was copied under invalid_dates: error")
	}
	t.Log(err)
	for _, want := range []string{a + ".bad.d (date): zero date", `"0000-00-00"`, `key range after ("2") up to ("4")`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	var n uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count() FROM "+a+".bad WHERE d = toDate(0) OR isNull(d)").Scan(&n); err == nil && n != 0 {
		t.Errorf("%d rows written with a replaced date", n)
	}
}
