package chtables

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestSwapIn: a shadow swapped in carries the live table's newer rows and
// replaces it, and the registry lists the table with the shadow's columns
// and no longer the shadow (nor the swap's mark). Then the state a daemon
// stopped between the swap's RENAME and its registry save leaves (the
// mark recorded and the RENAME run by hand): SwapIn again finds no
// shadow, drops the table left aside and brings the registry up to the
// swap (it kept the shadow listed and the table's columns of before the
// copy). Last, a shadow dropped outside binlog2ch before its swap (no
// mark), or with the table after it: SwapIn stops with an error naming
// it and the MySQL table, rather than take the table, which lacks the
// copy's rows, for swapped (or let the writer create it empty).
func TestSwapIn(t *testing.T) {
	ctx := context.Background()
	reg, err := LoadRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, conn := newTestManager(t, reg)
	exec := func(q string) {
		t.Helper()
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	const engine = " ENGINE = ReplacingMergeTree(_version) ORDER BY id"
	create := func(table, cols string) {
		t.Helper()
		exec("CREATE TABLE d." + table + " (" + cols + ")" + engine)
		if err := reg.Record("d", table, columnNames(mustColumns(t, m, table)), nil, true); err != nil {
			t.Fatal(err)
		}
	}
	wantRegistry := func(table string, cols ...string) {
		t.Helper()
		got, ok := reg.columns("d", table)
		if !ok || !slices.Equal(got, cols) {
			t.Errorf("registry lists d.%s with %v (%v); want %v", table, got, ok, cols)
		}
		for _, gone := range []string{table + "__b2c_shadow", table + OldSuffix} {
			if _, ok := reg.columns("d", gone); ok {
				t.Errorf("registry still lists d.%s", gone)
			}
		}
	}
	exec("CREATE DATABASE d")

	create("t", "id Int32, v String, _version UInt64")
	create("t__b2c_shadow", "id Int32, v String, w Int32, _version UInt64")
	// 18.16 takes an INSERT's data only in the native protocol's blocks: a
	// SELECT gives the rows.
	exec("INSERT INTO d.t SELECT 1, 'old', 5 UNION ALL SELECT 2, 'streamed', 20")
	exec("INSERT INTO d.t__b2c_shadow SELECT 1, 'copied', 7, 10 UNION ALL SELECT 2, 'copied', 8, 10")
	swapped, err := m.SwapIn(ctx, slog.Default(), "d", "t", "t__b2c_shadow", 10, "my.t")
	if err != nil || !swapped {
		t.Fatalf("SwapIn: %v, %v", swapped, err)
	}
	var got []string
	rows, err := conn.Query(ctx, "SELECT concat(toString(id), ':', v, ':', toString(w)) FROM d.t FINAL ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if want := []string{"1:copied:7", "2:streamed:0"}; !slices.Equal(got, want) {
		t.Errorf("d.t after the swap: %v; want %v", got, want)
	}
	for _, gone := range []string{"t__b2c_shadow", "t__b2c_old"} {
		if ok, err := m.TableExists(ctx, "d", gone); ok || err != nil {
			t.Errorf("d.%s after the swap: %v, %v", gone, ok, err)
		}
	}
	wantRegistry("t", "_version", "id", "v", "w")

	// Stopped after the RENAME, before the registry's save.
	create("u", "id Int32, v String, _version UInt64")
	create("u__b2c_shadow", "id Int32, v String, w Int32, _version UInt64")
	if err := reg.Record("d", "u"+OldSuffix, []string{"_version", "id", "v"}, nil, true); err != nil {
		t.Fatal(err)
	}
	exec("RENAME TABLE d.u TO d.u__b2c_old, d.u__b2c_shadow TO d.u")
	swapped, err = m.SwapIn(ctx, slog.Default(), "d", "u", "u__b2c_shadow", 10, "my.u")
	if err != nil || swapped {
		t.Fatalf("SwapIn after a swap's RENAME: %v, %v; want false, nil", swapped, err)
	}
	if ok, err := m.TableExists(ctx, "d", "u__b2c_old"); ok || err != nil {
		t.Errorf("d.u__b2c_old after the swap: %v, %v", ok, err)
	}
	wantRegistry("u", "_version", "id", "v", "w")
	again, err := LoadRegistry(reg.dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.columns("d", "u__b2c_shadow"); ok {
		t.Error("the saved registry still lists d.u__b2c_shadow")
	}

	// The shadow dropped by hand before its swap.
	create("w", "id Int32, v String, _version UInt64")
	create("w__b2c_shadow", "id Int32, v String, _version UInt64")
	exec("DROP TABLE d.w__b2c_shadow")
	swapped, err = m.SwapIn(ctx, slog.Default(), "d", "w", "w__b2c_shadow", 10, "my.w")
	var changed *TargetChangedError
	if swapped || !errors.As(err, &changed) || changed.Table != "d.w__b2c_shadow" || !strings.Contains(err.Error(), "fullsync -recreate -tables my.w") {
		t.Fatalf("SwapIn with the shadow dropped by hand: %v, %v; want a TargetChangedError naming d.w__b2c_shadow and my.w", swapped, err)
	}
	if ok, err := m.TableExists(ctx, "d", "w"); !ok || err != nil {
		t.Errorf("d.w after the refused swap: %v, %v", ok, err)
	}

	// The swap marked, then the shadow and the table both dropped by hand.
	create("x", "id Int32, v String, _version UInt64")
	create("x__b2c_shadow", "id Int32, v String, _version UInt64")
	if err := reg.Record("d", "x"+OldSuffix, []string{"_version", "id", "v"}, nil, true); err != nil {
		t.Fatal(err)
	}
	exec("DROP TABLE d.x__b2c_shadow")
	exec("DROP TABLE d.x")
	swapped, err = m.SwapIn(ctx, slog.Default(), "d", "x", "x__b2c_shadow", 10, "my.x")
	if swapped || !errors.As(err, &changed) || changed.Table != "d.x__b2c_shadow" {
		t.Fatalf("SwapIn with the shadow and the table dropped by hand: %v, %v; want a TargetChangedError naming d.x__b2c_shadow", swapped, err)
	}
}

func mustColumns(t *testing.T, m *Manager, table string) []chColumn {
	t.Helper()
	cols, err := m.columns(context.Background(), "d", table)
	if err != nil || len(cols) == 0 {
		t.Fatalf("columns of d.%s: %v, %v", table, cols, err)
	}
	return cols
}
