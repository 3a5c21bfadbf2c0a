package schema

import (
	"slices"
	"strings"
)

// Placement are the MySQL columns that say which row a row replaces in
// ClickHouse: the key binlog2ch compares, the columns of the sorting key
// ReplacingMergeTree replaces by and, in a cluster, of the Distributed
// table's sharding key (sharding "" when it cannot be read: every column
// then). An UPDATE that changes one of them moves the row, and its old
// place gets a tombstone, as a key change does; else FINAL keeps the old
// row beside the new. The partition expression is not among them: FINAL
// merges a sorting key's rows across partitions (18.16 and current
// servers by default), where a tombstone of the same version as the row
// it moved would tie with it.
func (t *Target) Placement(sharding string) []int {
	key := t.Source.PrimaryKey
	if len(key) == 0 {
		key = t.Source.UniqueKey
	}
	cols := slices.Clone(key)
	for _, e := range t.OrderBy {
		cols = t.ExprColumns(cols, e)
	}
	if t.Options.Cluster != nil {
		if sharding == "" {
			for i, j := range t.SourceToTarget {
				if j >= 0 && !slices.Contains(cols, i) {
					cols = append(cols, i)
				}
			}
		}
		cols = t.ExprColumns(cols, sharding)
	}
	return cols
}

// ExprColumns adds to cols the replicated MySQL columns expr names.
func (t *Target) ExprColumns(cols []int, expr string) []int {
	for _, name := range ExprIdents(expr) {
		for i, c := range t.Source.Columns {
			if strings.EqualFold(c.Name, name) && t.SourceToTarget[i] >= 0 && !slices.Contains(cols, i) {
				cols = append(cols, i)
			}
		}
	}
	return cols
}
