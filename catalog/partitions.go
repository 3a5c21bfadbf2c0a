package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
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
	rows, err := db.QueryContext(ctx, `SELECT PARTITION_NAME, IFNULL(PARTITION_METHOD, ''), IFNULL(PARTITION_EXPRESSION, ''), IFNULL(PARTITION_DESCRIPTION, '')
		FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND PARTITION_NAME IS NOT NULL
		ORDER BY PARTITION_ORDINAL_POSITION, SUBPARTITION_ORDINAL_POSITION`, t.Database, t.Table)
	if err != nil {
		return nil, fmt.Errorf("read the partitions of %s: %w", t, err)
	}
	defer rows.Close()
	var p *Partitions
	for rows.Next() {
		var name, method, expr, desc string
		if err := rows.Scan(&name, &method, &expr, &desc); err != nil {
			return nil, fmt.Errorf("read the partitions of %s: %w", t, err)
		}
		if p == nil {
			p = &Partitions{Method: method, Expr: expr}
		}
		if n := len(p.Parts); n == 0 || p.Parts[n-1].Name != name { // subpartitions repeat it
			p.Parts = append(p.Parts, Partition{Name: name, Desc: desc})
		}
	}
	return p, rows.Err()
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
