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
	place := w.placeColumns()
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
		if err := r.Need(w.keyColumns(), true, "telling whether the UPDATE changed the row's key"); err != nil {
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

// placeColumns are the MySQL columns a tombstone needs: the key binlog2ch
// compares, the sorting key ReplacingMergeTree replaces by, the columns of
// the partition expression (a row replaces only rows of its partition).
// A changelog table keeps every event's whole row, and a cluster's
// Distributed table shards by its own expression, which binlog2ch does not
// read for this: every column then.
func (w *Writer) placeColumns() []int {
	t := w.target
	if t.Mode == schema.ModeChangelog || t.Options.Cluster != nil {
		return w.mappedColumns()
	}
	cols := slices.Clone(w.keyColumns())
	add := func(name string) {
		for i, c := range t.Source.Columns {
			if strings.EqualFold(c.Name, name) && t.SourceToTarget[i] >= 0 && !slices.Contains(cols, i) {
				cols = append(cols, i)
			}
		}
	}
	for _, name := range t.OrderBy {
		add(name)
	}
	for _, name := range schema.ExprIdents(t.PartitionBy) {
		add(name)
	}
	return cols
}

// placeWhy says what placeColumns holds, for errors.
func (w *Writer) placeWhy() string {
	t := w.target
	switch {
	case t.Mode == schema.ModeChangelog:
		return "a changelog table keeps every column of a deleted row"
	case t.Options.Cluster != nil:
		return "on a cluster the Distributed table's sharding key places the row, and binlog2ch needs the whole row for it"
	case t.PartitionBy != "":
		return "its sorting key (" + strings.Join(t.OrderBy, ", ") + ") and the columns of its partition expression (" + t.PartitionBy + ")"
	}
	return "its sorting key (" + strings.Join(t.OrderBy, ", ") + ")"
}
