package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/jsondiff"
	"github.com/binlog2ch/binlog2ch/schema"
)

// A session with binlog_row_value_options=PARTIAL_JSON writes every UPDATE
// as a PARTIAL_UPDATE_ROWS_EVENT, whatever the table
// (Update_rows_log_event::get_update_rows_event_type in MySQL's
// sql/log_event.cc). The after image of each row then starts with
// value_options, a length-encoded integer, and when its PARTIAL_JSON bit is
// set, with partial_bits: one bit for each JSON column of the table, in the
// image or not (pack_row in sql/rpl_record.cc). A non-NULL JSON column whose
// bit is set holds, after its 4-byte length, a diff vector instead of the
// document (jsondiff.go). The before image is a plain one: with
// binlog_row_image=FULL, which binlog2ch requires, it has every column.
//
// go-mysql v1.16 reads that layout but keeps only the first diff of a
// vector (RowsEvent.decodeJSONPartialBinary, replication/json_binary.go),
// takes an empty vector for the empty document, and prints its decoding
// errors to stdout. So the images are read here: the after images are
// rewritten without their value_options (for rows decoded later from the
// bytes, RawRows) or with none set and a JSON null in place of each diff
// vector (for go-mysql), go-mysql decodes that, and each vector is then
// applied to the document of its before image. A vector that cannot be
// applied leaves a block.BadValue in the row, which stops the table's
// writer with the table, the column, the binlog position and the remedy.

// partialJSONBit is value_options' PARTIAL_JSON_UPDATES.
const partialJSONBit = 1

// jsonNullValue is a JSON column's value holding the JSON null literal: a
// 4-byte length, then the binary JSON literal.
var jsonNullValue = []byte{2, 0, 0, 0, replication.JSONB_LITERAL, replication.JSONB_NULL_LITERAL}

// partialValue is a JSON column of an after image that holds a diff vector.
type partialValue struct {
	row    int // the row's index in the event (its images are Rows[2*row] and Rows[2*row+1])
	col    int
	vector []byte // the diffs, after the vector's 4-byte length
}

// isPartialUpdate reports whether e, its header decoded, is a
// PARTIAL_UPDATE_ROWS_EVENT: the only rows event with an after image to
// which go-mysql gives no type (RowsEvent.Type).
func isPartialUpdate(e *replication.RowsEvent) bool {
	return e.Type() == replication.EnumRowsEventTypeUnknown && e.ColumnBitmap2 != nil
}

// decodePartial decodes the rows of a PARTIAL_UPDATE_ROWS_EVENT, whose
// header is decoded and whose rows start at data[pos:].
func (d *RowsDecoder) decodePartial(e *replication.RowsEvent, pos int, data []byte, td tableDecoding) error {
	t := td.orig
	raw := td.raw && FullImage(e.ColumnBitmap1, t.ColumnCount) && FullImage(e.ColumnBitmap2, t.ColumnCount)
	images, rows, partials, err := splitPartialImages(e, t, data[pos:], raw)
	if err != nil {
		return fmt.Errorf("%s: a PARTIAL_UPDATE_ROWS_EVENT binlog2ch cannot read: %w", tableOf(t), err)
	}
	if raw {
		e.Rows = [][]any{{RawRows(images)}}
		return nil
	}
	e.Table = td.unsigned
	err = e.DecodeData(0, images)
	e.Table = t
	if err != nil {
		return err
	}
	if len(e.Rows) != 2*rows {
		return fmt.Errorf("%s: go-mysql decoded %d row images of a PARTIAL_UPDATE_ROWS_EVENT of %d rows", tableOf(t), len(e.Rows), rows)
	}
	applyPartials(e, t, partials)
	return nil
}

// splitPartialImages rewrites the row images of a PARTIAL_UPDATE_ROWS_EVENT
// as those of an UPDATE_ROWS_EVENT (raw) or as a PARTIAL_UPDATE_ROWS_EVENT
// without partial values, and returns the number of rows and the diff
// vectors it took out.
func splitPartialImages(e *replication.RowsEvent, t *replication.TableMapEvent, p []byte, raw bool) (images []byte, rows int, partials []partialValue, err error) {
	cols := int(e.ColumnCount)
	if cols > len(t.ColumnType) || cols > len(t.ColumnMeta) {
		return nil, 0, nil, fmt.Errorf("%d columns but a table map of %d", cols, len(t.ColumnType))
	}
	jsonCols := 0
	for _, typ := range t.ColumnType {
		if typ == mysql.MYSQL_TYPE_JSON {
			jsonCols++
		}
	}
	offs, lens := make([]int, cols), make([]int, cols)
	out := make([]byte, 0, len(p))
	for ; len(p) > 0; rows++ {
		row := rows
		n, err := measureImage(t, cols, e.ColumnBitmap1, p, offs, lens)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("row %d, before image: %w", row+1, err)
		}
		out, p = append(out, p[:n]...), p[n:]

		options, k, ok := jsondiff.LengthEncoded(p)
		if !ok || options > partialJSONBit {
			return nil, 0, nil, fmt.Errorf("row %d: an after image without binlog_row_value_options MySQL writes", row+1)
		}
		p = p[k:]
		var partialBits []byte
		if options&partialJSONBit != 0 {
			nb := (jsonCols + 7) / 8
			if len(p) < nb {
				return nil, 0, nil, fmt.Errorf("row %d: the after image ends in its partial_bits", row+1)
			}
			partialBits, p = p[:nb], p[nb:]
		}
		if n, err = measureImage(t, cols, e.ColumnBitmap2, p, offs, lens); err != nil {
			return nil, 0, nil, fmt.Errorf("row %d, after image: %w", row+1, err)
		}
		if !raw {
			out = append(out, 0) // value_options: none
		}
		copied, jsonIdx := 0, 0
		for col := 0; col < cols; col++ {
			if t.ColumnType[col] != mysql.MYSQL_TYPE_JSON {
				continue
			}
			partial := bitSet(partialBits, jsonIdx)
			jsonIdx++
			if !partial || lens[col] < 0 {
				continue // a full value, or NULL, or not in the image
			}
			if t.ColumnMeta[col] != 4 || lens[col] < 4 {
				return nil, 0, nil, fmt.Errorf("row %d: JSON column %d holds a diff vector without its 4-byte length", row+1, col+1)
			}
			partials = append(partials, partialValue{row: row, col: col, vector: p[offs[col]+4 : offs[col]+lens[col]]})
			out = append(out, p[copied:offs[col]]...)
			out = append(out, jsonNullValue...)
			copied = offs[col] + lens[col]
		}
		out, p = append(out, p[copied:n]...), p[n:]
	}
	if raw && len(partials) > 0 {
		return nil, 0, nil, errors.New("diff vectors in a table without JSON columns")
	}
	return out, rows, partials, nil
}

// measureImage measures the row image at the start of p of the columns set
// in bitmap: a NULL bitmap of one bit per column in the image, then each
// non-NULL value. offs[i] and lens[i] are column i's value offset and size,
// -1 for a NULL or a column not in the image.
func measureImage(t *replication.TableMapEvent, cols int, bitmap, p []byte, offs, lens []int) (int, error) {
	present := 0
	for col := 0; col < cols; col++ {
		if bitSet(bitmap, col) {
			present++
		}
	}
	pos := (present + 7) / 8
	if len(p) < pos {
		return 0, errors.New("it ends in its NULL bitmap")
	}
	nullIdx := 0
	for col := 0; col < cols; col++ {
		offs[col], lens[col] = -1, -1
		if !bitSet(bitmap, col) {
			continue
		}
		null := bitSet(p, nullIdx)
		nullIdx++
		if null {
			continue
		}
		n, err := block.BinlogValueSize(t.ColumnType[col], t.ColumnMeta[col], p[pos:])
		if err != nil {
			return 0, fmt.Errorf("column %d: %w", col+1, err)
		}
		offs[col], lens[col] = pos, n
		pos += n
	}
	return pos, nil
}

func bitSet(bitmap []byte, i int) bool {
	return i/8 < len(bitmap) && bitmap[i/8]&(1<<(i%8)) != 0
}

// applyPartials puts in the after images of e's rows (decoded by go-mysql,
// a JSON null in each partial column) the documents their diff vectors
// make of the before images' documents, or a block.BadValue saying why
// not.
func applyPartials(e *replication.RowsEvent, t *replication.TableMapEvent, partials []partialValue) {
	if len(partials) == 0 {
		return
	}
	// go-mysql renders every value the diffs put, and every member name
	// of their paths as a JSON string: a key renders as that string does.
	type job struct {
		diffs  []jsondiff.Diff
		values []int // index in bins of each diff's value (-1: a removal)
		err    error
	}
	jobs := make([]job, len(partials))
	bins := [][]byte{keyOrderProbe}
	keyIdx := map[string]int{}
	for i, pv := range partials {
		j := &jobs[i]
		if j.diffs, j.err = jsondiff.ParseVector(pv.vector); j.err != nil {
			continue
		}
		for _, d := range j.diffs {
			vi := -1
			if d.Value != nil {
				vi = len(bins)
				bins = append(bins, d.Value)
			}
			j.values = append(j.values, vi)
			for _, leg := range d.Legs {
				if _, ok := keyIdx[leg.Name]; leg.Member && !ok {
					keyIdx[leg.Name] = len(bins)
					bins = append(bins, jsonStringBinary(leg.Name))
				}
			}
		}
	}
	texts, errs := renderJSON(e, bins)
	for i, pv := range partials {
		var v any
		if jobs[i].err == nil && len(jobs[i].diffs) > 0 && (errs[0] != nil || texts[0] != keyOrderProbeText) {
			v = partialError(t, pv.row, "go-mysql renders the JSON object %s as %q, not in the key order binlog2ch reproduces (%v)", keyOrderProbeText, texts[0], errs[0])
		} else if jobs[i].err != nil {
			v = partialError(t, pv.row, "%v", jobs[i].err)
		} else {
			v = applyVector(e, t, pv, jobs[i].diffs, jobs[i].values, keyIdx, texts, errs)
		}
		e.Rows[2*pv.row+1][pv.col] = v
	}
}

// applyVector applies one column's diffs to its before image's document.
func applyVector(e *replication.RowsEvent, t *replication.TableMapEvent, pv partialValue, diffs []jsondiff.Diff, values []int, keyIdx map[string]int, texts []string, errs []error) any {
	before := e.Rows[2*pv.row][pv.col]
	var text string
	switch b := before.(type) {
	case string:
		text = b
	case []byte:
		if len(diffs) == 0 {
			return b
		}
		return partialError(t, pv.row, "the before image holds an empty document, which has nothing the diffs could change")
	case nil:
		if !bitSet(e.ColumnBitmap1, pv.col) {
			return partialError(t, pv.row, "the before image lacks the column (binlog_row_image is not FULL), so there is no document to apply the diffs to")
		}
		return partialError(t, pv.row, "the column is NULL before the update, so there is no document to apply the diffs to")
	default:
		return partialError(t, pv.row, "go-mysql decoded the before image's document as %T", before)
	}
	if len(diffs) == 0 {
		return text // an empty vector: the document is unchanged
	}
	doc, err := jsondiff.ParseRendered(text)
	if err != nil {
		return partialError(t, pv.row, "the before image's document: %v", err)
	}
	key := func(name string) string { return texts[keyIdx[name]] }
	for i, d := range diffs {
		for _, leg := range d.Legs {
			if k := keyIdx[leg.Name]; leg.Member && errs[k] != nil {
				return partialError(t, pv.row, "diff %d of %d (%s %s): member name %q: go-mysql: %v", i+1, len(diffs), d.Op, d.Path, leg.Name, errs[k])
			}
		}
		var value *jsondiff.Node
		if vi := values[i]; vi >= 0 {
			if errs[vi] != nil {
				return partialError(t, pv.row, "diff %d of %d (%s %s): its value is not valid binary JSON: %v", i+1, len(diffs), d.Op, d.Path, errs[vi])
			}
			if value, err = jsondiff.ParseRendered(texts[vi]); err != nil {
				return partialError(t, pv.row, "diff %d of %d (%s %s): its value: %v", i+1, len(diffs), d.Op, d.Path, err)
			}
		}
		if doc, err = jsondiff.Apply(doc, &d, value, key); err != nil {
			return partialError(t, pv.row, "diff %d of %d (%s %s) cannot be applied: %v", i+1, len(diffs), d.Op, d.Path, err)
		}
	}
	return string(doc.AppendText(nil))
}

func partialError(t *replication.TableMapEvent, row int, format string, args ...any) *block.BadValue {
	return &block.BadValue{Msg: fmt.Sprintf("a partial JSON update (binlog_row_value_options=PARTIAL_JSON) binlog2ch cannot apply, row %d of the event: %s. binlog2ch writes no guessed value. Stop binlog2ch; on the source, SET PERSIST binlog_row_value_options = '' (updates then log whole documents; sessions opened before keep their setting); run `binlog2ch fullsync -recreate -checkpoint` (it copies every table into emptied tables and moves the checkpoint past this event: copying %s alone with -tables leaves the checkpoint before it), and start binlog2ch again",
		row+1, fmt.Sprintf(format, args...), tableOf(t))}
}

// keyOrderProbe is the binary JSON object {"b": 1, "aa": 2} (keys in
// MySQL's order), which go-mysql renders as keyOrderProbeText when it
// orders keys as jsondiff.Node keeps them; not so with RenderJSONAsMySQLText.
var keyOrderProbe = []byte{
	replication.JSONB_SMALL_OBJECT,
	2, 0, 21, 0, // 2 members, 21 bytes
	18, 0, 1, 0, 19, 0, 2, 0, // keys at 18 ("b") and 19 ("aa")
	replication.JSONB_INT16, 1, 0, replication.JSONB_INT16, 2, 0,
	'b', 'a', 'a',
}

const keyOrderProbeText = `{"aa":2,"b":1}`

// jsonStringBinary is s as a MySQL binary JSON string: its type, its
// length in 7-bit groups, low first, then its bytes.
func jsonStringBinary(s string) []byte {
	b := []byte{replication.JSONB_STRING}
	n := len(s)
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(append(b, byte(n)), s...)
}

// renderJSON renders MySQL binary JSON values as go-mysql renders a JSON
// column's values for e, with its parser's settings: it decodes them
// through e itself, as the rows of an update of a table of one JSON
// column, and then restores e. A value go-mysql cannot decode has its
// error in errs.
func renderJSON(e *replication.RowsEvent, values [][]byte) (texts []string, errs []error) {
	texts, errs = make([]string, len(values)), make([]error, len(values))
	if len(values) == 0 {
		return texts, errs
	}
	if err := renderJSONBatch(e, values, texts); err != nil {
		// Which one? One at a time.
		for i := range values {
			errs[i] = renderJSONBatch(e, values[i:i+1], texts[i:i+1])
		}
	}
	return texts, errs
}

func renderJSONBatch(e *replication.RowsEvent, values [][]byte, texts []string) error {
	saved := *e
	defer func() { *e = saved }()
	e.Table = &replication.TableMapEvent{
		TableID: e.TableID, Schema: saved.Table.Schema, Table: saved.Table.Table,
		ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_JSON}, ColumnMeta: []uint16{4}, NullBitmap: []byte{1},
	}
	e.ColumnCount = 1
	e.ColumnBitmap1, e.ColumnBitmap2 = []byte{1}, []byte{1}
	size := 0
	for _, v := range values {
		size += len(v) + 7
	}
	data := make([]byte, 0, size)
	for _, v := range values {
		data = append(data, 0) // before image: NULL bitmap, then the value
		data = binary.LittleEndian.AppendUint32(data, uint32(len(v)))
		data = append(data, v...)
		data = append(data, 0, 1) // after image: no value_options; NULL
	}
	if err := e.DecodeData(0, data); err != nil {
		return err
	}
	if len(e.Rows) != 2*len(values) {
		return fmt.Errorf("go-mysql decoded %d rows of %d", len(e.Rows)/2, len(values))
	}
	for i := range values {
		s, ok := e.Rows[2*i][0].(string)
		if !ok {
			return fmt.Errorf("go-mysql decoded %T", e.Rows[2*i][0])
		}
		texts[i] = s
	}
	return nil
}

func tableOf(t *replication.TableMapEvent) schema.TableName {
	return schema.TableName{Database: string(t.Schema), Table: string(t.Table)}
}
