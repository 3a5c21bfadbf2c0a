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
// hashes: MySQL's (key, hash) pairs are held in memory and ClickHouse's are
// streamed against them. A chunk larger than Chunk rows (a key whose
// leading column is text is one chunk; many rows may share a key prefix) is
// first split into buckets by a hash of the key, which both servers compute
// alike whatever their orders, and only differing buckets are compared row
// by row, so memory stays near Chunk rows.
func (v *verifier) narrow(ctx context.Context, p *plan, b bound, rows uint64, tr *TableReport) error {
	myWhere, chWhere, err := p.where(b)
	if err != nil {
		return err
	}
	if rows <= uint64(v.opts.Chunk) {
		return v.narrowRows(ctx, p, myWhere, chWhere, tr)
	}
	buckets := (rows + uint64(v.opts.Chunk) - 1) / uint64(v.opts.Chunk)
	myBucket := fmt.Sprintf("CAST(CONV(LEFT(MD5(%s), 8), 16, 10) AS UNSIGNED) %% %d", p.myKey, buckets)
	chBucket := fmt.Sprintf("reinterpretAsUInt32(reverse(substring(MD5(%s), 1, 4))) %% %d", p.chKey, buckets)
	my := map[uint64]aggregate{}
	q := "SELECT " + myBucket + " AS bucket, COUNT(*), CAST(MOD(SUM(" + p.myHash + "), 18446744073709551616) AS CHAR) FROM " + p.myFrom + " WHERE " + myWhere + " GROUP BY bucket"
	myRows, err := v.my.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("MySQL %s: bucket checksums: %w", p.src.FullName(), err)
	}
	for myRows.Next() {
		var bucket uint64
		var a aggregate
		var sum string
		if err := myRows.Scan(&bucket, &a.rows, &sum); err != nil {
			myRows.Close()
			return fmt.Errorf("MySQL %s: bucket checksums: %w", p.src.FullName(), err)
		}
		if a.sum, err = parseSum(sum); err != nil {
			myRows.Close()
			return fmt.Errorf("MySQL %s: bucket checksums: %w", p.src.FullName(), err)
		}
		my[bucket] = a
	}
	myRows.Close()
	if err := myRows.Err(); err != nil {
		return fmt.Errorf("MySQL %s: bucket checksums: %w", p.src.FullName(), err)
	}
	ch := map[uint64]aggregate{}
	chRows, err := v.ch.Query(ctx, "SELECT toUInt64("+chBucket+") AS bucket, count(), sum("+p.chHash+") FROM "+p.chRows(chWhere)+" GROUP BY bucket")
	if err != nil {
		return fmt.Errorf("ClickHouse %s: bucket checksums: %w", p.target.FullName(), err)
	}
	for chRows.Next() {
		var bucket uint64
		var a aggregate
		if err := chRows.Scan(&bucket, &a.rows, &a.sum); err != nil {
			chRows.Close()
			return fmt.Errorf("ClickHouse %s: bucket checksums: %w", p.target.FullName(), err)
		}
		ch[bucket] = a
	}
	chRows.Close()
	if err := chRows.Err(); err != nil {
		return fmt.Errorf("ClickHouse %s: bucket checksums: %w", p.target.FullName(), err)
	}
	v.log.Debug("chunk split into key hash buckets", "table", p.src.FullName(), "rows", rows, "buckets", buckets)
	for bucket := uint64(0); bucket < buckets && len(tr.Diffs) < v.opts.MaxDiffs; bucket++ {
		if my[bucket] == ch[bucket] {
			continue
		}
		n := strconv.FormatUint(bucket, 10)
		if err := v.narrowRows(ctx, p, "("+myWhere+") AND "+myBucket+" = "+n, "("+chWhere+") AND "+chBucket+" = "+n, tr); err != nil {
			return err
		}
	}
	return nil
}

// narrowRows compares the rows matching the conditions one by one.
func (v *verifier) narrowRows(ctx context.Context, p *plan, myWhere, chWhere string, tr *TableReport) error {
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
