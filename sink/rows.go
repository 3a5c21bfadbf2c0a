package sink

import (
	"fmt"
	"slices"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// appendRows converts one rows event. An UPDATE writes the after image; one
// that changes the key also deletes the old key. A DELETE writes the before
// image with _is_deleted = 1.
func (w *Writer) appendRows(m Message) error {
	if m.Raw != nil {
		return w.appendImages(m)
	}
	if m.Partial != nil {
		return w.appendPartial(m) // partial.go
	}
	if m.ResultCols != nil {
		if m.Op != source.OpInsert {
			return fmt.Errorf("%s: result rows for a %v", w.name, m.Op)
		}
		_, err := w.block.AppendResultRows(m.ResultCols, m.Result, m.version(0), schema.OpInsert)
		return err
	}
	b := w.block
	switch m.Op {
	case source.OpInsert:
		for i, row := range m.Rows {
			if err := b.Append(row, m.version(i), schema.OpInsert); err != nil {
				return err
			}
		}
	case source.OpDelete:
		for i, row := range m.Rows {
			if err := b.Append(row, m.version(i), schema.OpDelete); err != nil {
				return err
			}
		}
	case source.OpUpdate:
		for i := 0; i+1 < len(m.Rows); i += 2 {
			before, after := m.Rows[i], m.Rows[i+1]
			v := m.version(i / 2)
			if !w.sameKey(before, after) {
				if err := b.Append(before, v, schema.OpDelete); err != nil {
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

// appendImages decodes the row images of one rows event straight from the
// binlog bytes, with appendRows' semantics.
func (w *Writer) appendImages(m Message) error {
	b := w.block
	if !b.RawOK() {
		return fmt.Errorf("%s: rows left undecoded for a table binlog2ch cannot decode", w.name)
	}
	data := []byte(m.Raw)
	for i := 0; len(data) > 0; i++ {
		v := m.version(i)
		switch m.Op {
		case source.OpInsert, source.OpDelete:
			op := schema.OpInsert
			if m.Op == source.OpDelete {
				op = schema.OpDelete
			}
			n, err := b.AppendImage(data, v, op)
			if err != nil {
				return err
			}
			data = data[n:]
		case source.OpUpdate:
			nb, err := b.ImageSize(data)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			before, after := data[:nb], data[nb:]
			same, err := b.SameKey(before, after, w.place)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			if !same {
				if _, err := b.AppendImage(before, v, schema.OpDelete); err != nil {
					return err
				}
			}
			na, err := b.AppendImage(after, v, schema.OpUpdate)
			if err != nil {
				return err
			}
			data = data[nb+na:]
		}
	}
	return nil
}

// version is the _version of the message's i-th row.
func (m *Message) version(i int) uint64 {
	return m.Version + uint64(max(0, min(i, m.Versions-1)))
}

// sameKey reports whether two row images have the same sorting key.
func (w *Writer) sameKey(a, b []any) bool {
	for _, i := range w.place {
		if !source.SameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// keyColumns are the MySQL column indexes of the ClickHouse sorting key.
func (w *Writer) keyColumns() []int {
	key := w.target.Source.PrimaryKey
	if len(key) == 0 {
		key = w.target.Source.UniqueKey
	}
	return key
}

// placement are the MySQL columns that say which row a row replaces in
// ClickHouse: the key binlog2ch compares, the columns of the sorting key
// ReplacingMergeTree replaces by and, in a cluster, of the Distributed
// table's sharding key (sharding "" when it cannot be read: every column
// then). An UPDATE that changes one of them moves the row, and its old
// place gets a tombstone, as a key change does; else FINAL keeps the old
// row beside the new. The partition expression is not among them: FINAL
// merges a sorting key's rows across partitions (18.16 and current
// servers by default), where a tombstone of the same version as the row
// it moved would tie with it.
func placement(t *schema.Target, sharding string) []int {
	key := t.Source.PrimaryKey
	if len(key) == 0 {
		key = t.Source.UniqueKey
	}
	cols := slices.Clone(key)
	for _, e := range t.OrderBy {
		cols = addColumns(cols, t, e)
	}
	if t.Options.Cluster != nil {
		if sharding == "" {
			for i, j := range t.SourceToTarget {
				if j >= 0 && !slices.Contains(cols, i) {
					cols = append(cols, i)
				}
			}
		}
		cols = addColumns(cols, t, sharding)
	}
	return cols
}

// addColumns adds to cols the replicated MySQL columns expr names.
func addColumns(cols []int, t *schema.Target, expr string) []int {
	for _, name := range schema.ExprIdents(expr) {
		for i, c := range t.Source.Columns {
			if strings.EqualFold(c.Name, name) && t.SourceToTarget[i] >= 0 && !slices.Contains(cols, i) {
				cols = append(cols, i)
			}
		}
	}
	return cols
}
