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
