package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Partial row images: a session with binlog_row_image NOBLOB or MINIMAL
// writes only some columns (MariaDB's TABLE::mark_columns_per_binlog_row_image,
// MySQL's binlog_prepare_row_images). A table without a primary key (or a
// NOT NULL unique key standing in for one) is always written whole. With
// one, a before image holds the key (MINIMAL) or every column but the
// BLOB and TEXT ones outside the key (NOBLOB); an after image holds the
// columns the statement wrote (assigned, defaulted by an expression,
// auto-increment, ON UPDATE, generated columns depending on them) and, under
// NOBLOB, every non-BLOB column too. So an UPDATE's column absent from its
// after image was not written: its before value, when the before image has
// it, is its value after. Which columns a row needs depends on what reads
// it (the ClickHouse table, cascades): the stream hands the rows on with
// what they hold, and each reader checks with Need.

// Images says which columns a rows event's images hold, for an event
// whose images are partial.
type Images struct {
	// Before and After are columns-present bitmaps (bit i: column i),
	// nil for the image an event has not (an INSERT's before image, a
	// DELETE's after image). An UPDATE's After holds the columns of its
	// before image too: the stream completed the after images with them.
	Before, After []byte
	Columns       int
}

// Has reports whether an image (before or after) holds column i.
func (im *Images) Has(before bool, i int) bool {
	bm := im.After
	if before {
		bm = im.Before
	}
	return i >= 0 && i/8 < len(bm) && bm[i/8]&(1<<(i%8)) != 0
}

// Full reports whether an image holds every column.
func (im *Images) Full(before bool) bool {
	for i := range im.Columns {
		if !im.Has(before, i) {
			return false
		}
	}
	return true
}

// Need returns nil when the event's images are full or hold every column
// of cols (MySQL column indexes) in the before image (before) or the after
// image; else a *PartialImageError naming the columns missing and why they
// are needed.
func (r *Rows) Need(cols []int, before bool, why string) error {
	im := r.Partial
	if im == nil {
		return nil
	}
	var missing []string
	for _, i := range cols {
		if im.Has(before, i) {
			continue
		}
		name := "#" + strconv.Itoa(i+1)
		if r.Schema != nil && i < len(r.Schema.Columns) {
			name = r.Schema.Columns[i].Name
		}
		if !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	image := "after"
	if before {
		image = "before"
	}
	return &PartialImageError{At: r.At, Table: r.Table, Op: r.Op, Image: image, Missing: strings.Join(missing, ", "), Why: why}
}

// PartialImageError: a rows event whose images lack columns that what
// reads them needs, written by a session with binlog_row_image NOBLOB or
// MINIMAL. Those values are in neither image: binlog2ch would have to read
// them back from ClickHouse, which it does not do.
type PartialImageError struct {
	At      Position
	Table   schema.TableName
	Op      Op
	Image   string // "before" or "after"
	Missing string // the columns missing, comma-separated
	Why     string // what needs them
}

func (e *PartialImageError) Error() string {
	return fmt.Sprintf("binlog %s: %s: %s whose row image lacks columns binlog2ch needs (missing %s in the %s image; needed for %s): the session that wrote it had binlog_row_image NOBLOB or MINIMAL, and binlog2ch applies such images only where they hold every value the row in ClickHouse needs. Set binlog_row_image = FULL globally and make sure no session sets it otherwise; the rows of this event cannot be completed from the binlog, so then re-copy: stop binlog2ch, run `binlog2ch fullsync -recreate -checkpoint` (it copies every table into emptied tables and moves the checkpoint past this event), and start binlog2ch again",
		e.At, e.Table, opName(e.Op), e.Missing, e.Image, e.Why)
}

func opName(op Op) string {
	switch op {
	case OpInsert:
		return "an INSERT"
	case OpUpdate:
		return "an UPDATE"
	case OpDelete:
		return "a DELETE"
	}
	return "a rows event"
}

// partialImages describes a rows event's images when they are not full
// (nil when they are), and completes an UPDATE's after images with the
// before images' values of the columns the statement did not write.
func partialImages(st *tableState, e *replication.RowsEvent, op Op) *Images {
	n := st.event.ColumnCount
	switch op {
	case OpUpdate:
		if binlog.FullImage(e.ColumnBitmap1, n) && binlog.FullImage(e.ColumnBitmap2, n) {
			return nil
		}
	default:
		if binlog.FullImage(e.ColumnBitmap1, n) {
			return nil
		}
	}
	im := &Images{Columns: int(n)}
	switch op {
	case OpInsert:
		im.After = e.ColumnBitmap1
	case OpDelete:
		im.Before = e.ColumnBitmap1
	case OpUpdate:
		im.Before = e.ColumnBitmap1
		im.After = make([]byte, (n+7)/8)
		for i := range im.After {
			if i < len(e.ColumnBitmap2) {
				im.After[i] = e.ColumnBitmap2[i]
			}
			if i < len(e.ColumnBitmap1) {
				im.After[i] |= e.ColumnBitmap1[i]
			}
		}
		written := &Images{After: e.ColumnBitmap2}
		for r := 0; r+1 < len(e.Rows); r += 2 {
			before, after := e.Rows[r], e.Rows[r+1]
			for i := 0; i < int(n) && i < len(before) && i < len(after); i++ {
				if !written.Has(false, i) && im.Has(true, i) {
					after[i] = before[i] // not written: unchanged
				}
			}
		}
	}
	return im
}
