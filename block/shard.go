package block

import (
	"fmt"
	"strings"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/schema"
)

// KeyHasher computes what ClickHouse's cityHash64(k1, k2, ...) returns for
// each row of a block: the Distributed table's sharding key, so that rows
// sent straight to the shards land where the Distributed table would put
// them. ClickHouse hashes a fixed-width value (up to 8 bytes) as
// intHash64 of its bytes zero-extended to 64 bits, a string as CityHash64
// (v1.0.2) of its bytes, and folds each further argument in with
// Hash128to64. KeyHashProbe checks a server agrees before the hasher is
// trusted with its rows.
type KeyHasher struct {
	cols []int  // target column indexes, in the hash's argument order
	raw  []bool // per argument: reinterpretAsString(column)
	t    *schema.Target
}

// KeyArg is one argument of the sharding key's cityHash64: a column, or
// reinterpretAsString of a Decimal column (the stored integer's
// little-endian bytes without trailing zero bytes), which is how a server
// whose cityHash64 refuses Decimal shards by one.
type KeyArg struct {
	Column      string
	Reinterpret bool
}

// NewKeyHasher returns the hasher of cityHash64 over the given arguments,
// or an error naming a column it cannot hash as ClickHouse does.
func NewKeyHasher(t *schema.Target, args []KeyArg) (*KeyHasher, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: no sharding key columns", t.FullName())
	}
	k := &KeyHasher{t: t}
	for _, a := range args {
		i := t.ColumnIndex(a.Column)
		if i < 0 {
			return nil, fmt.Errorf("%s: sharding key column %q is not one of the table's columns", t.FullName(), a.Column)
		}
		typ := t.Columns[i].Type
		if !hashable(typ) || a.Reinterpret && typ.Kind != schema.CHDecimal {
			what := typ.String()
			if a.Reinterpret {
				what = "reinterpretAsString of " + what
			}
			return nil, fmt.Errorf("%s: sharding key column %s is %s, which binlog2ch does not hash", t.FullName(), a.Column, what)
		}
		k.cols = append(k.cols, i)
		k.raw = append(k.raw, a.Reinterpret)
	}
	return k, nil
}

// hashable reports whether the hasher knows ClickHouse's hash of type t. A
// NULL hashes to NULL, which the Distributed table places by rules of its
// own: Nullable columns are left to it.
func hashable(t schema.CHType) bool {
	if t.Nullable {
		return false
	}
	switch t.Kind {
	case schema.CHLowCardinalityString, schema.CHArrayString:
		return false
	case schema.CHDecimal:
		return column.DecimalWidth(t.Precision) > 0
	}
	return true
}

// Hashes appends each row's hash to dst[:0] and returns it.
func (k *KeyHasher) Hashes(b *Block, dst []uint64) ([]uint64, error) {
	if b.target != k.t {
		return nil, fmt.Errorf("%s: block and key hasher are for different schemas", k.t.FullName())
	}
	n := b.Rows()
	if cap(dst) < n {
		dst = make([]uint64, n)
	}
	dst = dst[:n]
	for j, ci := range k.cols {
		if err := column.HashArg(b.cols[ci], k.t.Columns[ci].Type, k.raw[j], j == 0, dst); err != nil {
			return nil, fmt.Errorf("%s: sharding key column %s: %w", k.t.FullName(), k.t.Columns[ci].Name, err)
		}
	}
	return dst, nil
}

// KeyHashProbe is a query that has the server compute cityHash64 over a
// few values of each key column's type, with the hashes the hasher gives
// for the same values. Equal results mean the server hashes these types as
// the hasher does; a server that cannot hash one of them fails the query.
func (k *KeyHasher) KeyHashProbe() (query string, want []uint64, err error) {
	const rows = 4
	lits := make([][]string, rows)
	want = make([]uint64, rows)
	for j, ci := range k.cols {
		c := k.t.Columns[ci]
		buf := NewBlock(k.t).cols[ci] // one per argument: a column may repeat
		vals, err := column.Probe(buf, c.Type, rows)
		if err != nil {
			return "", nil, fmt.Errorf("%s: sharding key column %s: %w", k.t.FullName(), c.Name, err)
		}
		for r := range rows {
			if k.raw[j] {
				vals[r] = "reinterpretAsString(" + vals[r] + ")"
			}
			lits[r] = append(lits[r], vals[r])
		}
		if err := column.HashArg(buf, c.Type, k.raw[j], j == 0, want); err != nil {
			return "", nil, err
		}
	}
	// One SELECT per row, in order: UNION ALL would not keep it.
	var q strings.Builder
	q.WriteString("SELECT [")
	for r := range rows {
		if r > 0 {
			q.WriteString(", ")
		}
		q.WriteString("cityHash64(")
		q.WriteString(strings.Join(lits[r], ", "))
		q.WriteString(")")
	}
	q.WriteString("]")
	return q.String(), want, nil
}

// Scatter appends row i of b to parts[to[i]], for every row: a block split
// by shard. The parts must be blocks of b's target.
func (b *Block) Scatter(to []uint32, parts []*Block) error {
	if len(to) != b.Rows() {
		return fmt.Errorf("%s: %d shard assignments for %d rows", b.target.FullName(), len(to), b.Rows())
	}
	dst := make([]column.Buf, len(parts))
	for c, src := range b.cols {
		for p, part := range parts {
			if part.target != b.target {
				return fmt.Errorf("%s: scatter into a block of another schema", b.target.FullName())
			}
			dst[p] = part.cols[c]
		}
		src.Scatter(to, dst)
	}
	return nil
}

// Subset returns a new block of the rows sel of b, in b's order.
func (b *Block) Subset(sel []uint32) (*Block, error) {
	// Scatter the selected rows to part 0 and the others to a scratch
	// block: a rare path (a shard whose table differs from the mapping).
	to := make([]uint32, b.Rows())
	for i := range to {
		to[i] = 1
	}
	for _, r := range sel {
		if int(r) >= len(to) {
			return nil, fmt.Errorf("%s: row %d of %d", b.target.FullName(), r, len(to))
		}
		to[r] = 0
	}
	parts := []*Block{NewBlock(b.target), NewBlock(b.target)}
	if err := b.Scatter(to, parts); err != nil {
		return nil, err
	}
	return parts[0], nil
}
