package sink

import (
	"slices"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Partial row images (binlog_row_image NOBLOB or MINIMAL; source/images.go)
// are applied where they hold every value ClickHouse needs: an inserted or
// updated row whole (an UPDATE's columns it did not write completed from its
// before image by the stream); a tombstone (a DELETE, or the old key of an
// UPDATE that changed it) with every column that says which row it
// replaces and where that row is. Its other columns are placeholders:
// readers skip tombstones (FINAL, _is_deleted = 0), and so do verify and
// the cascades' as-of reads. Anything else stops, naming the columns.

// appendPartial converts one rows event whose images are partial, with
// appendRows' semantics.
func (w *Writer) appendPartial(m Message) error {
	im := m.Partial
	whole := w.mappedColumns()
	// A tombstone goes where the row is: in its partition too, or only
	// FINAL would find it (background merges stay within a partition).
	place := w.target.ExprColumns(slices.Clone(w.place), w.target.PartitionBy)
	if w.target.Mode == schema.ModeChangelog {
		place = whole // a changelog table keeps every event's whole row
	}
	r := source.Rows{Table: w.name, Schema: m.Schema, Op: m.Op, At: m.At, Partial: im}
	b := w.block
	switch m.Op {
	case source.OpInsert:
		if err := r.Need(whole, false, "the row ClickHouse stores: a column the INSERT did not name has the table's default, which the binlog does not hold"); err != nil {
			return err
		}
		for i, row := range m.Rows {
			if err := b.Append(row, m.version(i), schema.OpInsert); err != nil {
				return err
			}
		}
	case source.OpDelete:
		if err := r.Need(place, true, "the tombstone that deletes the row in ClickHouse: "+w.placeWhy()); err != nil {
			return err
		}
		has := func(i int) bool { return im.Has(true, i) }
		for i, row := range m.Rows {
			if err := b.AppendPartial(row, has, m.version(i), schema.OpDelete); err != nil {
				return err
			}
		}
	case source.OpUpdate:
		if err := r.Need(whole, false, "the row ClickHouse stores: a column the UPDATE did not assign is in neither image, and its value is only in ClickHouse"); err != nil {
			return err
		}
		if err := r.Need(place, true, "telling whether the UPDATE moved the row in ClickHouse: "+w.placeWhy()); err != nil {
			return err
		}
		has := func(i int) bool { return im.Has(true, i) }
		for i := 0; i+1 < len(m.Rows); i += 2 {
			before, after := m.Rows[i], m.Rows[i+1]
			v := m.version(i / 2)
			if !w.sameKey(before, after) {
				if err := r.Need(place, true, "the tombstone of the row's old key: "+w.placeWhy()); err != nil {
					return err
				}
				if err := b.AppendPartial(before, has, v, schema.OpDelete); err != nil {
					return err
				}
			}
			if err := b.Append(after, v, schema.OpUpdate); err != nil {
				return err
			}
		}
	}
	return nil
}

// mappedColumns are the MySQL columns the ClickHouse table has.
func (w *Writer) mappedColumns() []int {
	var cols []int
	for i, tc := range w.target.SourceToTarget {
		if tc >= 0 {
			cols = append(cols, i)
		}
	}
	return cols
}

// placeWhy says what the placement columns (rows.go) are, for errors.
func (w *Writer) placeWhy() string {
	t := w.target
	switch {
	case t.Mode == schema.ModeChangelog:
		return "a changelog table keeps every column of a deleted row"
	case t.Options.Cluster != nil:
		return "its sorting key, partition expression and the Distributed table's sharding key (every column when binlog2ch could not read that key)"
	case t.PartitionBy != "":
		return "its sorting key (" + strings.Join(t.OrderBy, ", ") + ") and the columns of its partition expression (" + t.PartitionBy + ")"
	}
	return "its sorting key (" + strings.Join(t.OrderBy, ", ") + ")"
}
