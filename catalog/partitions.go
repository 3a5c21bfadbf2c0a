package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Partitions are a partitioned table's partitions as information_schema
// describes them, in order: what a TRUNCATE or DROP PARTITION removed is
// read from them, since the binlog names only the partition.
type Partitions struct {
	Method string // RANGE, RANGE COLUMNS, LIST, LIST COLUMNS, HASH, KEY...
	Expr   string // PARTITION_EXPRESSION, e.g. `id`, to_days(`d`)
	Parts  []Partition
}

// Partition is one partition and its VALUES LESS THAN / VALUES IN text.
type Partition struct{ Name, Desc string }

// LoadPartitions reads a table's partitions; nil when it has none.
func LoadPartitions(ctx context.Context, db *sql.DB, t schema.TableName) (*Partitions, error) {
	all, err := loadPartitions(ctx, db, "TABLE_SCHEMA = ? AND TABLE_NAME = ?", t.Database, t.Table)
	if err != nil {
		return nil, fmt.Errorf("read the partitions of %s: %w", t, err)
	}
	return all[t], nil
}

// LoadAllPartitions reads every partitioned table's partitions (the
// system databases' aside), in one query.
func LoadAllPartitions(ctx context.Context, db *sql.DB) (map[schema.TableName]*Partitions, error) {
	all, err := loadPartitions(ctx, db, "TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')")
	if err != nil {
		return nil, fmt.Errorf("read the tables' partitions: %w", err)
	}
	return all, nil
}

func loadPartitions(ctx context.Context, db *sql.DB, where string, args ...any) (map[schema.TableName]*Partitions, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, PARTITION_NAME, IFNULL(PARTITION_METHOD, ''), IFNULL(PARTITION_EXPRESSION, ''), IFNULL(PARTITION_DESCRIPTION, '')
		FROM information_schema.PARTITIONS WHERE `+where+` AND PARTITION_NAME IS NOT NULL
		ORDER BY TABLE_SCHEMA, TABLE_NAME, PARTITION_ORDINAL_POSITION, SUBPARTITION_ORDINAL_POSITION`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	all := map[schema.TableName]*Partitions{}
	for rows.Next() {
		var t schema.TableName
		var name, method, expr, desc string
		if err := rows.Scan(&t.Database, &t.Table, &name, &method, &expr, &desc); err != nil {
			return nil, err
		}
		p := all[t]
		if p == nil {
			p = &Partitions{Method: method, Expr: expr}
			all[t] = p
		}
		if n := len(p.Parts); n == 0 || p.Parts[n-1].Name != name { // subpartitions repeat it
			p.Parts = append(p.Parts, Partition{Name: name, Desc: desc})
		}
	}
	return all, rows.Err()
}

// Clone returns a copy the caller may change.
func (p *Partitions) Clone() *Partitions {
	if p == nil {
		return nil
	}
	c := *p
	c.Parts = slices.Clone(p.Parts)
	return &c
}

// Equal reports whether two layouts are the same (nil: not partitioned).
func (p *Partitions) Equal(o *Partitions) bool {
	if p == nil || o == nil {
		return p == o
	}
	return strings.EqualFold(p.Method, o.Method) && strings.EqualFold(p.Expr, o.Expr) && slices.Equal(p.Parts, o.Parts)
}

// Has reports whether every named partition is known.
func (p *Partitions) Has(names []string) bool {
	for _, n := range names {
		found := false
		for _, part := range p.Parts {
			found = found || strings.EqualFold(part.Name, n)
		}
		if !found {
			return false
		}
	}
	return true
}

// Drop forgets partitions a DROP PARTITION removed: the next partition of
// a RANGE then starts where the dropped one did.
func (p *Partitions) Drop(names []string) {
	var keep []Partition
	for _, part := range p.Parts {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, part.Name) }) {
			keep = append(keep, part)
		}
	}
	p.Parts = keep
}

// KeepsRows returns why after, p's layout once a REORGANIZE PARTITION of
// names (none: HASH or KEY partitions rebuilt) or a COALESCE PARTITION
// (HASH, KEY) changed it, may have no partition for a row of p's ("":
// every row has one). MariaDB's partition copy deletes such a row without
// row events (ha_partition::copy_partitions counts it deleted): it refuses
// a RANGE reorganization that changes the total range but its end
// (ER_REORG_OUTSIDE_RANGE), not a LIST one whose new lists leave out a
// value, so the layouts are what shows it.
func (p *Partitions) KeepsRows(names []string, after *Partitions) string {
	method := strings.ToUpper(p.Method)
	if strings.Contains(method, "HASH") || strings.Contains(method, "KEY") {
		return "" // every row has a partition, however many there are
	}
	if after == nil || len(names) == 0 {
		return "a change of a " + method + " table's partitions binlog2ch does not follow"
	}
	// The new partitions stand where the first reorganized one stood.
	first, kept := -1, 0
	var old []string
	for _, part := range p.Parts {
		named := false
		for _, n := range names {
			named = named || strings.EqualFold(n, part.Name)
		}
		switch {
		case named:
			if first < 0 {
				first = kept
			}
			old = append(old, part.Desc)
		default:
			kept++
		}
	}
	added := len(after.Parts) - kept
	if first < 0 || len(old) != len(names) || added < 1 || first+added > len(after.Parts) {
		return "REORGANIZE PARTITION of partitions binlog2ch does not know"
	}
	var next []string
	for _, part := range after.Parts[first : first+added] {
		next = append(next, part.Desc)
	}
	switch {
	case strings.HasPrefix(method, "RANGE"):
		// Bounds ascend: the new partitions cover the old ones' values when
		// their last bound is at or above the old last one.
		if !boundAtLeast(next[len(next)-1], old[len(old)-1]) {
			return fmt.Sprintf("the new partitions end at VALUES LESS THAN (%s), the old ones at (%s), and binlog2ch cannot show that the new cover the old", next[len(next)-1], old[len(old)-1])
		}
		return ""
	case strings.HasPrefix(method, "LIST"):
		have := map[string]bool{}
		for _, d := range next {
			for _, v := range listValues(d) {
				have[v] = true // as written: 'A' and 'a' may be two values
			}
		}
		for _, d := range old {
			for _, v := range listValues(d) {
				if !have[v] {
					return "the new partitions' lists leave out " + v + ", which the old ones held"
				}
			}
		}
		return ""
	}
	return "partitioning by " + method + ", which binlog2ch does not follow"
}

// boundAtLeast reports whether RANGE bound a is certainly at or above b:
// the same text, MAXVALUE, or integers compared.
func boundAtLeast(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b || strings.EqualFold(a, "MAXVALUE") {
		return true
	}
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	return errA == nil && errB == nil && x >= y
}

// listValues splits a LIST partition's VALUES IN text at its top-level
// commas (a LIST COLUMNS tuple, a quoted string stay whole).
func listValues(desc string) []string {
	var out []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(desc); i++ {
		c := desc[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(desc[start:i]))
			start = i + 1
		}
	}
	if v := strings.TrimSpace(desc[start:]); v != "" {
		out = append(out, v)
	}
	return out
}
