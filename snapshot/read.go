package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/schema"
)

// tableReader is how one table is read: the SELECT list (block.SelectExpr
// per column), chosen once per table, and the result's columns.
type tableReader struct {
	table  *schema.Table
	quoted string // db.table, quoted
	list   string // the SELECT list
	// key are the column indexes ranges are in; nil when the table is
	// copied by one scan.
	key     []int
	keyCols string // quoted key columns, comma-separated

	mu   sync.Mutex
	cols []mysqlproto.Column // the result's columns, the same slice for every range alike
}

// keyable reports whether ranges can be taken on a column of this kind:
// MySQL must order it and compare it with a parameter the same way.
// ENUM and SET sort by index but compare with strings as labels; FLOAT,
// BIT, JSON and GEOMETRY keys are rare enough to take the one-scan path.
func keyable(k schema.MySQLKind) bool {
	switch k {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt, schema.KindYear,
		schema.KindDecimal, schema.KindDate, schema.KindDateTime, schema.KindTimestamp, schema.KindTime,
		schema.KindChar, schema.KindBinary, schema.KindBlob:
		return true
	}
	return false
}

// newTableReader plans how to read t. key is the ranges' key (nil: scan);
// skip marks columns the target leaves out (read as NULL, not transferred).
func newTableReader(t *schema.Table, key []int, skip func(i int) bool) (*tableReader, error) {
	tr := &tableReader{table: t, quoted: quoteMy(t.Database) + "." + quoteMy(t.Name), key: key}
	var list []string
	for i := range t.Columns {
		c := &t.Columns[i]
		if skip(i) {
			list = append(list, "NULL")
			continue
		}
		if c.Kind == schema.KindUnknown {
			return nil, fmt.Errorf("%s.%s: MySQL type %s cannot be copied", t.FullName(), c.Name, c.Type)
		}
		list = append(list, block.SelectExpr(c, quoteMy(c.Name)))
	}
	tr.list = strings.Join(list, ", ")
	var kc []string
	for _, i := range key {
		kc = append(kc, quoteMy(t.Columns[i].Name))
	}
	tr.keyCols = strings.Join(kc, ", ")
	return tr, nil
}

// columns returns the table's result columns: cols, or the equal slice an
// earlier range got, so the writer's blocks build their decoders once.
func (tr *tableReader) columns(cols []mysqlproto.Column) []mysqlproto.Column {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !slices.Equal(tr.cols, cols) {
		tr.cols = cols
	}
	return tr.cols
}

// keyArg is a key value as a statement parameter of the column's type, so
// MySQL compares it as the column (a string in the column's collation, a
// number as a number).
func keyArg(c *schema.Column, b []byte) (any, error) {
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindBigInt, schema.KindYear:
		if c.Unsigned {
			return strconv.ParseUint(string(b), 10, 64)
		}
		return strconv.ParseInt(string(b), 10, 64)
	case schema.KindBinary, schema.KindBlob:
		return b, nil
	}
	return string(b), nil
}

// keyParam is the placeholder for a key value: temporal and decimal
// values are cast, so MySQL compares them as such and not as strings.
func keyParam(c *schema.Column) string {
	switch c.Kind {
	case schema.KindDecimal:
		return fmt.Sprintf("CAST(? AS DECIMAL(%d,%d))", c.Precision, c.Scale)
	case schema.KindDate:
		return "CAST(? AS DATE)"
	case schema.KindDateTime, schema.KindTimestamp:
		return "CAST(? AS DATETIME(6))"
	case schema.KindTime:
		return "CAST(? AS TIME(6))"
	}
	return "?"
}

// after is the condition key > k; atMost is key <= k. Row comparisons are
// spelled out (k1 > a OR k1 = a AND ...), with a leading k1 >= a so the
// optimizer takes a range on the key even where it does not for row
// constructors.
func (tr *tableReader) bound(k [][]byte, greater bool) (string, []any, error) {
	var args []any
	arg := func(j int) (string, error) {
		c := &tr.table.Columns[tr.key[j]]
		v, err := keyArg(c, k[j])
		if err != nil {
			return "", fmt.Errorf("key column %s: value %q: %w", c.Name, k[j], err)
		}
		args = append(args, v)
		return keyParam(c), nil
	}
	col := func(j int) string { return quoteMy(tr.table.Columns[tr.key[j]].Name) }
	first, err := arg(0)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	if greater {
		b.WriteString(col(0) + " >= " + first + " AND (")
	} else {
		b.WriteString(col(0) + " <= " + first + " AND (")
	}
	closing := 1
	for j := range tr.key {
		p, err := arg(j)
		if err != nil {
			return "", nil, err
		}
		last := j == len(tr.key)-1
		switch {
		case greater:
			b.WriteString(col(j) + " > " + p)
		case last:
			b.WriteString(col(j) + " <= " + p)
		default:
			b.WriteString(col(j) + " < " + p)
		}
		if last {
			break
		}
		p, err = arg(j)
		if err != nil {
			return "", nil, err
		}
		b.WriteString(" OR " + col(j) + " = " + p + " AND (")
		closing++
	}
	b.WriteString(strings.Repeat(")", closing))
	return b.String(), args, nil
}

// where is the condition for the range (lo, hi].
func (tr *tableReader) where(r keyRange) (string, []any, error) {
	var conds []string
	var args []any
	if r.Lo != nil {
		c, a, err := tr.bound(r.Lo, true)
		if err != nil {
			return "", nil, err
		}
		conds, args = append(conds, c), append(args, a...)
	}
	if r.Hi != nil {
		c, a, err := tr.bound(r.Hi, false)
		if err != nil {
			return "", nil, err
		}
		conds, args = append(conds, c), append(args, a...)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE (" + strings.Join(conds, ") AND (") + ")", args, nil
}

// nextBoundary returns the last key of the next n rows after r.Lo within
// r, and how many rows there were (fewer than n: the range's end is near).
// Only key columns are read, and never with OFFSET; the rows are counted
// in their frames, and only the last one's key is decoded (keyText).
func (tr *tableReader) nextBoundary(ctx context.Context, pool *readPool, r keyRange, n int) ([][]byte, int, error) {
	where, args, err := tr.where(r)
	if err != nil {
		return nil, 0, err
	}
	q := "SELECT " + tr.keyCols + " FROM " + tr.quoted + where + " ORDER BY " + tr.keyCols + " LIMIT " + strconv.Itoa(n)
	conn, err := pool.conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer pool.release(conn)
	stmt, err := conn.Prepare(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	defer stmt.Close()
	res, err := stmt.Query(ctx, args...)
	if err != nil {
		return nil, 0, err
	}
	buf := pool.buf()
	defer func() { pool.recycle(buf) }()
	var lastRow []byte // copied: buf is read into again
	count := 0
	for !res.Done() {
		var k int
		if buf, k, err = res.ReadRows(ctx, buf[:0], batchBytes); err != nil {
			return nil, 0, err
		}
		count += k
		for rows := buf; len(rows) > 0; {
			row, rest, ok := mysqlproto.NextRow(rows)
			if !ok {
				return nil, 0, errors.New("key rows cut short")
			}
			if len(rest) == 0 {
				lastRow = append(lastRow[:0], row...)
			}
			rows = rest
		}
	}
	if count == 0 {
		return nil, 0, nil
	}
	vals, err := mysqlproto.BinaryValues(res.Columns, lastRow, nil)
	if err != nil {
		return nil, 0, err
	}
	last := make([][]byte, len(vals))
	for i, v := range vals {
		c := &tr.table.Columns[tr.key[i]]
		if last[i], err = keyText(res.Columns[i], v); err != nil {
			return nil, 0, fmt.Errorf("key column %s: %w", c.Name, err)
		}
	}
	return last, count, nil
}

// rowBatch is rows of a range in MySQL's binary protocol, framed by
// mysqlproto, as they go to the writer; buf is the pool's.
type rowBatch struct {
	data []byte
	cols []mysqlproto.Column
	rows int
}

// read streams the rows of range r (the whole table for a scan) to emit
// in batches of about batchBytes, undecoded: the writer decodes them into
// its block. emit owns each batch's bytes (pool.recycle takes them back).
func (tr *tableReader) read(ctx context.Context, pool *readPool, r keyRange, emit func(rowBatch) error) (int, error) {
	q := "SELECT " + tr.list + " FROM " + tr.quoted
	var args []any
	if tr.key != nil {
		where, a, err := tr.where(r)
		if err != nil {
			return 0, err
		}
		q += where + " ORDER BY " + tr.keyCols
		args = a
	}
	conn, err := pool.conn(ctx)
	if err != nil {
		return 0, err
	}
	// Back to the pool if the result was read to its end; closed otherwise.
	defer pool.release(conn)
	stmt, err := conn.Prepare(ctx, q)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	res, err := stmt.Query(ctx, args...)
	if err != nil {
		return 0, err
	}
	cols := tr.columns(res.Columns)
	total := 0
	for !res.Done() {
		data, n, err := res.ReadRows(ctx, pool.buf(), batchBytes)
		if err != nil {
			pool.recycle(data)
			return total, err
		}
		if n == 0 {
			pool.recycle(data)
			continue
		}
		total += n
		if err := emit(rowBatch{data: data, cols: cols, rows: n}); err != nil {
			return total, err
		}
	}
	return total, nil
}

// quoteMy quotes a MySQL identifier.
func quoteMy(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// mysqlTransient reports whether retrying a failed read may help: lost
// connections and lock or resource waits do; an error about the statement
// or the table (missing, no privilege) does not.
func mysqlTransient(err error) bool {
	if transient, ok := mysqlProtoTransient(err); ok {
		return transient
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// transientCode reports whether a MySQL error code is worth a retry: too
// many connections, shutdown, interrupted queries, lock waits, deadlocks,
// lost connections, the query timeout.
func transientCode(code uint16) bool {
	switch code {
	case 1040, 1053, 1077, 1158, 1159, 1160, 1161, 1205, 1213, 1317, 2006, 2013, 1927, 3024:
		return true
	}
	return false
}
