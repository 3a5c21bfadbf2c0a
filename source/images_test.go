package source

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
	"github.com/go-mysql-org/go-mysql/replication"
)

// partialRecorder keeps the rows events handed on.
type partialRecorder struct {
	recorder
	rows []Rows
}

func (h *partialRecorder) Rows(_ context.Context, r Rows) error {
	h.rows = append(h.rows, r)
	return nil
}

// TestPartialImages: rows events with partial images (binlog_row_image
// NOBLOB, MINIMAL) are handed on with the columns they hold; an UPDATE's
// after image gets the before image's values of the columns the statement
// did not write, and Need names what is in neither. Full images carry no
// Partial.
func TestPartialImages(t *testing.T) {
	handle := func(e *replication.RowsEvent, typ replication.EventType) Rows {
		t.Helper()
		s := testStream(t)
		s.tables = map[uint64]*tableState{}
		s.pos = Position{File: "binlog.000003", Pos: 4}
		h := &partialRecorder{}
		if err := s.handle(context.Background(), ev(replication.TABLE_MAP_EVENT, 4, 1, binlogtest.MariaDBTableMap()), h); err != nil {
			t.Fatal(err)
		}
		if err := s.handle(context.Background(), ev(typ, 200, 1, e), h); err != nil {
			t.Fatal(err)
		}
		if len(h.rows) != 1 {
			t.Fatalf("%d rows events handed on, want 1", len(h.rows))
		}
		return h.rows[0]
	}
	// MINIMAL: the before image has the key (a, b), the after image the
	// columns assigned (c, bl).
	r := handle(&replication.RowsEvent{TableID: 18, ColumnBitmap1: []byte{0x03}, ColumnBitmap2: []byte{0x44},
		Rows: [][]any{{int32(1), "k", nil, nil, nil, nil, nil}, {nil, nil, "c2", nil, nil, nil, []byte("b2")}}}, replication.UPDATE_ROWS_EVENTv1)
	if r.Partial == nil {
		t.Fatal("a partial UPDATE handed on without Partial")
	}
	if got := fmt.Sprint(r.Rows[1]); got != "[1 k c2 <nil> <nil> <nil> [98 50]]" {
		t.Errorf("after image %s, want the key from the before image", got)
	}
	if err := r.Need([]int{0, 1, 2, 6}, false, "x"); err != nil {
		t.Errorf("Need of the key and the assigned columns: %v", err)
	}
	err := r.Need([]int{0, 3, 4}, false, "the row ClickHouse stores")
	for _, want := range []string{"binlog.000003:4: d.t: an UPDATE", "missing e, dd in the after image", "needed for the row ClickHouse stores", "binlog_row_image NOBLOB or MINIMAL", "fullsync -recreate -checkpoint"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Need of unassigned columns: %v, want %q", err, want)
		}
	}
	if _, ok := err.(*PartialImageError); !ok {
		t.Errorf("Need returned %T, want *PartialImageError", err)
	}
	// NOBLOB DELETE: every column but the BLOB.
	r = handle(&replication.RowsEvent{TableID: 18, ColumnBitmap1: []byte{0x3f}, Rows: [][]any{{int32(1), "k", nil, nil, nil, nil, nil}}}, replication.DELETE_ROWS_EVENTv1)
	if r.Partial == nil || r.Need([]int{0, 1, 5}, true, "x") != nil || r.Need([]int{6}, true, "x") == nil {
		t.Errorf("NOBLOB DELETE: Partial %+v, want a before image without bl", r.Partial)
	}
	// Full images: no Partial, Need always nil.
	r = handle(&replication.RowsEvent{TableID: 18, ColumnBitmap1: []byte{0x7f}, Rows: [][]any{{int32(1), "k", nil, nil, nil, nil, nil}}}, replication.WRITE_ROWS_EVENTv1)
	if r.Partial != nil || r.Need([]int{6}, false, "x") != nil {
		t.Errorf("full INSERT: Partial %+v", r.Partial)
	}
}
