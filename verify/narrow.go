package verify

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/binlog2ch/binlog2ch/schema"
)

// narrow finds the differing keys of a mismatched chunk by comparing per-row
// hashes: MySQL's (key, hash) pairs of the chunk are held in memory (a chunk
// is Chunk rows, more only when many rows share a key prefix) and
// ClickHouse's are streamed against them.
func (v *verifier) narrow(ctx context.Context, p *plan, b bound, tr *TableReport) error {
	myWhere, chWhere, err := p.where(b)
	if err != nil {
		return err
	}
	rows, err := v.my.QueryContext(ctx, "SELECT "+p.myKey+", "+p.myHash+" FROM "+p.myFrom+" WHERE "+myWhere+" ORDER BY "+p.order)
	if err != nil {
		return fmt.Errorf("MySQL %s: row hashes: %w", p.src.FullName(), err)
	}
	myHash := map[string]uint64{}
	var myOrder []string
	for rows.Next() {
		var k string
		var h uint64
		if err := rows.Scan(&k, &h); err != nil {
			rows.Close()
			return fmt.Errorf("MySQL %s: row hashes: %w", p.src.FullName(), err)
		}
		myHash[k] = h
		myOrder = append(myOrder, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("MySQL %s: row hashes: %w", p.src.FullName(), err)
	}

	chRows, err := v.ch.Query(ctx, "SELECT "+p.chKey+", "+p.chHash+" FROM "+p.chRows(chWhere))
	if err != nil {
		return fmt.Errorf("ClickHouse %s: row hashes: %w", p.target.FullName(), err)
	}
	different := map[string]bool{}
	seen := map[string]bool{}
	var extra []string
	for chRows.Next() {
		var k string
		var h uint64
		if err := chRows.Scan(&k, &h); err != nil {
			chRows.Close()
			return fmt.Errorf("ClickHouse %s: row hashes: %w", p.target.FullName(), err)
		}
		mh, ok := myHash[k]
		switch {
		case !ok || seen[k]:
			extra = append(extra, k)
		case mh != h:
			different[k] = true
		}
		seen[k] = true
	}
	chRows.Close()
	if err := chRows.Err(); err != nil {
		return fmt.Errorf("ClickHouse %s: row hashes: %w", p.target.FullName(), err)
	}

	var diffs []RowDiff
	var details []string
	for _, k := range myOrder {
		switch {
		case !seen[k]:
			diffs = append(diffs, RowDiff{Key: p.showKey(k), Problem: MissingInClickHouse})
		case different[k]:
			diffs = append(diffs, RowDiff{Key: p.showKey(k), Problem: DifferentValues})
			details = append(details, k)
		}
	}
	for _, k := range extra {
		diffs = append(diffs, RowDiff{Key: p.showKey(k), Problem: ExtraInClickHouse})
	}
	room := v.opts.MaxDiffs - len(tr.Diffs)
	if len(diffs) > room {
		diffs, tr.MoreDiffs = diffs[:room], true
	}
	if len(details) > room {
		details = details[:room]
	}
	if err := v.columnDiffs(ctx, p, myWhere, chWhere, details, diffs); err != nil {
		return err
	}
	tr.Diffs = append(tr.Diffs, diffs...)
	return nil
}

// columnDiffs names the differing columns of the rows with keys `keys`,
// with both sides' canonical values.
func (v *verifier) columnDiffs(ctx context.Context, p *plan, myWhere, chWhere string, keys []string, diffs []RowDiff) error {
	if len(keys) == 0 {
		return nil
	}
	var myCols, chCols []string
	for _, c := range p.cols {
		myCols, chCols = append(myCols, c.mysql), append(chCols, c.ch)
	}
	var lits []string
	for _, k := range keys {
		lits = append(lits, schema.QuoteString(k))
	}
	in := strings.Join(lits, ", ")
	myVals := map[string][]string{}
	rows, err := v.my.QueryContext(ctx, "SELECT "+p.myKey+", "+strings.Join(myCols, ", ")+" FROM "+p.myFrom+" WHERE ("+myWhere+") AND "+p.myKey+" IN ("+in+")")
	if err != nil {
		return fmt.Errorf("MySQL %s: differing rows: %w", p.src.FullName(), err)
	}
	for rows.Next() {
		vals := make([]string, len(p.cols)+1)
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return fmt.Errorf("MySQL %s: differing rows: %w", p.src.FullName(), err)
		}
		myVals[vals[0]] = vals[1:]
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("MySQL %s: differing rows: %w", p.src.FullName(), err)
	}
	chRows, err := v.ch.Query(ctx, "SELECT "+p.chKey+", "+strings.Join(chCols, ", ")+" FROM "+p.chRows(chWhere)+" AND "+p.chKey+" IN ("+in+")")
	if err != nil {
		return fmt.Errorf("ClickHouse %s: differing rows: %w", p.target.FullName(), err)
	}
	chVals := map[string][]string{}
	for chRows.Next() {
		vals := make([]string, len(p.cols)+1)
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := chRows.Scan(dest...); err != nil {
			chRows.Close()
			return fmt.Errorf("ClickHouse %s: differing rows: %w", p.target.FullName(), err)
		}
		chVals[vals[0]] = vals[1:]
	}
	chRows.Close()
	if err := chRows.Err(); err != nil {
		return fmt.Errorf("ClickHouse %s: differing rows: %w", p.target.FullName(), err)
	}
	policy := v.cfg.SchemaOptions().InvalidDates
	for _, k := range keys {
		m, c := myVals[k], chVals[k]
		if m == nil || c == nil {
			continue // changed meanwhile
		}
		for i := range diffs {
			if diffs[i].Key != p.showKey(k) {
				continue
			}
			for j, col := range p.cols {
				if m[j] == c[j] {
					continue
				}
				d := ColumnDiff{Column: col.name, MySQL: showValue(m[j], col.form), ClickHouse: showValue(c[j], col.form)}
				if col.temporal && policy != schema.InvalidError {
					d.Note = "schema.invalid_dates is " + policy + ": a zero, invalid or out-of-range date is stored changed"
				}
				diffs[i].Columns = append(diffs[i].Columns, d)
			}
		}
	}
	return nil
}

// showKey renders a key text as col=value, ...
func (p *plan) showKey(k string) string {
	parts := strings.Split(k, ",")
	if len(parts) != len(p.key) {
		return k
	}
	var b strings.Builder
	for i, c := range p.key {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.name)
		b.WriteByte('=')
		b.WriteString(showValue(parts[i], c.form))
	}
	return b.String()
}

// showValue makes a canonical text readable: hex back to (quoted) text,
// MD5s marked as such.
func showValue(s string, f form) string {
	if s == nullMark {
		return "NULL"
	}
	switch f {
	case formHex:
		b, err := hex.DecodeString(s)
		if err == nil && utf8.Valid(b) {
			return strconv.Quote(string(b))
		}
		return "0x" + s
	case formMD5:
		return "md5:" + s
	case formRaw:
		return "decimal128:" + s
	case formFloat:
		return "float:" + s
	}
	return s
}
