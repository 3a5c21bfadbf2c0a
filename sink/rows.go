package sink

import (
	"fmt"

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
