package snapshot

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/charset"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// openSnapshotDB opens the pool table copies read through. Statements are
// prepared, so rows come in MySQL's binary protocol: FLOAT and DOUBLE
// arrive as their exact bits (the text protocol prints FLOAT with six
// digits), integers as integers. TIMESTAMPs print in UTC.
func openSnapshotDB(ctx context.Context, cfg *config.Config, log *slog.Logger, conns int) (*sql.DB, error) {
	c := source.DriverConfig(cfg, log)
	c.InterpolateParams = false
	c.MaxAllowedPacket = 0 // the server's: a row may hold a LONGBLOB
	// A reader waits while its table's writer is blocked on ClickHouse; the
	// server must not drop the half-sent result meanwhile.
	c.Params["net_write_timeout"] = "3600"
	db, err := source.OpenPool(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// valueFn turns one binary-protocol value into what go-mysql hands the
// writers for that column type (see block.Block.Append), copying bytes
// into a, since the driver reuses its buffer for the next row.
type valueFn func(v driver.Value, a *arena) (any, error)

// tableReader is how one table is read: the SELECT list and a converter per
// column, chosen once per table.
type tableReader struct {
	table  *schema.Table
	quoted string // db.table, quoted
	list   string // the SELECT list
	conv   []valueFn
	// key are the column indexes ranges are in; nil when the table is
	// copied by one scan.
	key     []int
	keyCols string // quoted key columns, comma-separated
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
		q := quoteMy(c.Name)
		if skip(i) {
			list = append(list, "NULL")
			tr.conv = append(tr.conv, func(driver.Value, *arena) (any, error) { return nil, nil })
			continue
		}
		fn, expr, err := columnValueFn(c)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.FullName(), c.Name, err)
		}
		if expr != "" {
			q = fmt.Sprintf(expr, q)
		}
		list = append(list, q)
		tr.conv = append(tr.conv, fn)
	}
	tr.list = strings.Join(list, ", ")
	var kc []string
	for _, i := range key {
		kc = append(kc, quoteMy(t.Columns[i].Name))
	}
	tr.keyCols = strings.Join(kc, ", ")
	return tr, nil
}

// columnValueFn returns a column's converter and, when the column is read
// through an expression, the expression (%s is the column).
func columnValueFn(c *schema.Column) (valueFn, string, error) {
	name := c.Name
	switch c.Kind {
	case schema.KindTinyInt, schema.KindSmallInt, schema.KindMediumInt, schema.KindInt, schema.KindYear:
		return func(v driver.Value, _ *arena) (any, error) {
			if _, ok := v.(int64); !ok && v != nil {
				return nil, fmt.Errorf("column %s: got %T, want an integer", name, v)
			}
			return v, nil
		}, "", nil
	case schema.KindBigInt, schema.KindBit, schema.KindEnum, schema.KindSet:
		// BIT, ENUM and SET are read as numbers (col+0): BIT's bits, ENUM's
		// index and SET's bitmask, as the binlog carries them; no label
		// parsing, and an ENUM's invalid '' (index 0) stays distinct from a
		// '' label. BIGINT UNSIGNED above 2^63 arrives as text.
		expr := ""
		if c.Kind != schema.KindBigInt {
			expr = "%s+0"
		}
		unsigned := c.Unsigned && c.Kind == schema.KindBigInt
		return func(v driver.Value, _ *arena) (any, error) {
			switch x := v.(type) {
			case nil, int64:
				return v, nil
			case []byte:
				u, err := strconv.ParseUint(string(x), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("column %s: %q is not an unsigned integer", name, x)
				}
				if unsigned {
					return u, nil
				}
				return int64(u), nil // the bits, as go-mysql hands BIT/SET
			case float64:
				return int64(x), nil
			}
			return nil, fmt.Errorf("column %s: got %T, want an integer", name, v)
		}, expr, nil
	case schema.KindFloat, schema.KindDouble:
		return func(v driver.Value, _ *arena) (any, error) { return v, nil }, "", nil
	case schema.KindDecimal, schema.KindDate, schema.KindDateTime, schema.KindTimestamp, schema.KindTime:
		// Text, as go-mysql hands these (DATETIME/TIMESTAMP also as text:
		// the block's converters parse both, and text keeps zero dates).
		return func(v driver.Value, a *arena) (any, error) {
			switch x := v.(type) {
			case nil:
				return nil, nil
			case []byte:
				return a.str(x), nil
			}
			return nil, fmt.Errorf("column %s: got %T, want text", name, v)
		}, "", nil
	case schema.KindChar, schema.KindBinary, schema.KindBlob, schema.KindJSON, schema.KindGeometry:
		expr := ""
		if c.Kind == schema.KindChar && !charset.Passthrough(c.Charset) {
			// Its bytes as stored, which the block converts to UTF-8 as it
			// does the binlog's: one conversion for both paths.
			expr = "CAST(%s AS BINARY)"
		}
		return func(v driver.Value, a *arena) (any, error) {
			switch x := v.(type) {
			case nil:
				return nil, nil
			case []byte:
				return a.bytes(x), nil
			case string:
				return x, nil
			}
			return nil, fmt.Errorf("column %s: got %T, want bytes", name, v)
		}, expr, nil
	}
	return nil, "", fmt.Errorf("MySQL type %s cannot be copied", c.Type)
}

// arena holds the bytes of a batch of rows: one allocation for many values.
type arena struct {
	buf []byte
}

const arenaSize = 256 << 10

func (a *arena) bytes(p []byte) []byte {
	if len(a.buf)+len(p) > cap(a.buf) {
		a.buf = make([]byte, 0, max(arenaSize, len(p)))
	}
	n := len(a.buf)
	a.buf = append(a.buf, p...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

// str returns p's copy as a string without a second copy: the arena's
// bytes are never written again.
func (a *arena) str(p []byte) string {
	b := a.bytes(p)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
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
// Only key columns are read, and never with OFFSET.
func (tr *tableReader) nextBoundary(ctx context.Context, db *sql.DB, r keyRange, n int) ([][]byte, int, error) {
	where, args, err := tr.where(r)
	if err != nil {
		return nil, 0, err
	}
	q := "SELECT " + tr.keyCols + " FROM " + tr.quoted + where + " ORDER BY " + tr.keyCols + " LIMIT " + strconv.Itoa(n)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	raw := make([]sql.RawBytes, len(tr.key))
	dest := make([]any, len(raw))
	for i := range raw {
		dest[i] = &raw[i]
	}
	// Copied row by row: RawBytes point into the driver's buffer, which the
	// connection reuses once the rows are done.
	last := make([][]byte, len(raw))
	count := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		for i, b := range raw {
			last[i] = append(last[i][:0], b...)
		}
		count++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if count == 0 {
		return nil, 0, nil
	}
	for i := range last {
		if last[i] == nil {
			last[i] = []byte{} // an empty key value, not an open bound
		}
	}
	return last, count, nil
}

// read streams the rows of range r (the whole table for a scan) to emit in
// batches of up to batchRows rows. emit owns each batch.
func (tr *tableReader) read(ctx context.Context, db *sql.DB, r keyRange, batchRows int, emit func([][]any) error) (int, error) {
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
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	total := 0
	err = conn.Raw(func(dc any) error {
		prep, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("the MySQL driver cannot prepare statements")
		}
		stmt, err := prep.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer stmt.Close()
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rs, err := stmt.(driver.StmtQueryContext).QueryContext(ctx, named)
		if err != nil {
			return err
		}
		defer rs.Close()
		ncol := len(tr.conv)
		dest := make([]driver.Value, ncol)
		var a arena
		var vals []any
		var batch [][]any
		for {
			if err := rs.Next(dest); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return err
			}
			if batch == nil {
				vals = make([]any, batchRows*ncol)
				batch = make([][]any, 0, batchRows)
			}
			row := vals[len(batch)*ncol : (len(batch)+1)*ncol : (len(batch)+1)*ncol]
			for i, v := range dest {
				if v == nil {
					continue
				}
				x, err := tr.conv[i](v, &a)
				if err != nil {
					return err
				}
				row[i] = x
			}
			batch = append(batch, row)
			total++
			if len(batch) == batchRows {
				if err := emit(batch); err != nil {
					return err
				}
				batch = nil
			}
		}
		if len(batch) > 0 {
			return emit(batch)
		}
		return nil
	})
	return total, err
}

// quoteMy quotes a MySQL identifier.
func quoteMy(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// mysqlTransient reports whether retrying a failed read may help: lost
// connections and lock or resource waits do; an error about the statement
// or the table (missing, no privilege) does not.
func mysqlTransient(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1040, 1053, 1077, 1158, 1159, 1160, 1161, 1205, 1213, 1317, 2006, 2013, 1927, 3024:
			return true
		}
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
