package cascade

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The statements' reads: a table's rows as of before the event, and the
// conditions that say which of them a node reaches.

// chTable is a ClickHouse table as the cascade's statements need it.
type chTable struct {
	name schema.TableName
	ref  string   // `db`.`table`
	cols []chCol  // the MySQL columns replicated, in order
	key  []string // the sorting key's MySQL columns
	// del is the meta column that says deleted: _is_deleted, or _op for
	// a changelog table (typ is its type).
	del, delType string
}

type chCol struct {
	name, typ string // typ: the ClickHouse type, Nullable included
	key       bool
}

func (t *chTable) col(name string) (chCol, bool) {
	for _, c := range t.cols {
		if strings.EqualFold(c.name, name) {
			return c, true
		}
	}
	return chCol{}, false
}

// baseType is a ClickHouse type without its Nullable.
func baseType(typ string) string {
	if inner, ok := strings.CutPrefix(typ, "Nullable("); ok {
		return strings.TrimSuffix(inner, ")")
	}
	return typ
}

// builder builds one cascade's statements.
type builder struct {
	p      *Plan
	tables map[schema.TableName]*chTable
	first  string // Vs
	last   string // Ve
	// replay: leave out keys with rows at or above Vs, and match the
	// tombstones an earlier attempt wrote (see doc.go).
	replay bool
	// live are the nodes kept (a repeat node whose parent has no rows is
	// not).
	live map[int]bool
}

func newBuilder(p *Plan, tables map[schema.TableName]*chTable, replay bool) *builder {
	b := &builder{p: p, tables: tables, first: strconv.FormatUint(p.ev.First, 10), last: strconv.FormatUint(p.ev.Last, 10), replay: replay, live: map[int]bool{}}
	for _, n := range p.nodes {
		b.live[n.id] = tables[n.table] != nil && (n.parent == nil || b.live[n.parent.id])
	}
	return b
}

func identList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = schema.QuoteIdent(c)
	}
	return strings.Join(q, ", ")
}

// tuple is "a" for one expression, "(a, b)" for more.
func tuple(exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	return "(" + strings.Join(exprs, ", ") + ")"
}

// deleted is the expression that says a row of t is deleted.
func (t *chTable) deleted() string {
	if t.del == schema.OpColumn {
		return schema.QuoteIdent(t.del) + " = 'delete'"
	}
	return schema.QuoteIdent(t.del)
}

// asOf reads t's rows as they were before the event, for the keys with a
// row matching filter (over the table's columns, any version): the key
// columns, every other column under its own name, and _b2c_del.
func (b *builder) asOf(t *chTable, filter string) string {
	key := identList(t.key)
	keyTuple := key
	if len(t.key) > 1 {
		keyTuple = "(" + key + ")"
	}
	var vals, outs []string
	for _, c := range t.cols {
		if c.key {
			outs = append(outs, schema.QuoteIdent(c.name))
			continue
		}
		vals = append(vals, schema.QuoteIdent(c.name))
		// The values travel in one tuple: argMax of a Nullable column alone
		// would skip NULLs and return an older value.
		outs = append(outs, "_b2c_s."+strconv.Itoa(len(vals))+" AS "+schema.QuoteIdent(c.name))
	}
	vals = append(vals, "toUInt8("+t.deleted()+")")
	outs = append(outs, "_b2c_s."+strconv.Itoa(len(vals))+" AS _b2c_del")
	where := "_version < " + b.first + " AND " + keyTuple + " IN (SELECT " + key + " FROM " + t.ref + " WHERE " + filter + ")"
	if b.replay {
		where += " AND " + keyTuple + " NOT IN (SELECT " + key + " FROM " + t.ref + " WHERE _version >= " + b.first + ")"
	}
	return "SELECT " + strings.Join(outs, ", ") + " FROM (SELECT " + key + ", argMax(tuple(" + strings.Join(vals, ", ") + "), _version) AS _b2c_s FROM " +
		t.ref + " WHERE " + where + " GROUP BY " + key + ")"
}

// literal renders a root key value as a literal of a column's type.
func (b *builder) literal(v any, src *schema.Column, dst chCol) (string, error) {
	lit, err := block.Literal(v, src)
	if err != nil {
		return "", fmt.Errorf("column %s: %w", src.Name, err)
	}
	return "CAST(" + lit + " AS " + baseType(dst.typ) + ")", nil
}

// nodeColumns are the ClickHouse columns of node n's key.
func (b *builder) nodeColumns(n *node) ([]chCol, error) {
	t := b.tables[n.table]
	cols := make([]chCol, len(n.fk.Columns))
	for i, name := range n.fk.Columns {
		c, ok := t.col(name)
		if !ok {
			return nil, fmt.Errorf("key %s: column %s is not replicated (excluded?); cascades through the key need it in ClickHouse: replicate the column", n.fk, name)
		}
		cols[i] = c
	}
	return cols, nil
}

// match is the condition, over t's columns, that a row is reached by
// node n: its key's columns hold values the parent deleted or changed.
func (b *builder) match(n *node) (string, error) {
	cols, err := b.nodeColumns(n)
	if err != nil {
		return "", err
	}
	if n.trace != nil {
		return b.rootMatch(n, cols)
	}
	// The parent node's deleted rows.
	sub, err := b.deletedRows(n.parent, n.fk.RefColumns)
	if err != nil {
		return "", err
	}
	return tuple(quoteCols(cols)) + " IN (" + sub + ")", nil
}

// prefilter is match's condition loosened so that it reads no as-of
// state: over the rows of every version, the key's values among those of
// the parent table's rows that pass the parent's prefilter. It narrows an
// as-of read to the keys that may match, in a statement whose size grows
// with the depth, not exponentially.
func (b *builder) prefilter(n *node) (string, error) {
	cols, err := b.nodeColumns(n)
	if err != nil {
		return "", err
	}
	if n.trace != nil {
		return b.rootMatch(n, cols)
	}
	pt := b.tables[n.parent.table]
	refs := make([]string, len(n.fk.RefColumns))
	for i, name := range n.fk.RefColumns {
		c, ok := pt.col(name)
		if !ok {
			return "", fmt.Errorf("column %s of %s is referenced by a foreign key but not replicated (excluded?); cascades through it need it in ClickHouse: replicate the column", name, n.parent.table)
		}
		refs[i] = schema.QuoteIdent(c.name)
	}
	up, err := b.prefilter(n.parent)
	if err != nil {
		return "", err
	}
	return tuple(quoteCols(cols)) + " IN (SELECT " + strings.Join(refs, ", ") + " FROM " + pt.ref + " WHERE " + up + ")", nil
}

func quoteCols(cols []chCol) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = schema.QuoteIdent(c.name)
	}
	return out
}

// rootMatch matches the root's old values through the columns that carry
// them; the key's other columns must not be NULL (a key with a NULL
// references nothing).
func (b *builder) rootMatch(n *node, cols []chCol) (string, error) {
	var traced, notNull []string
	var tcols []chCol
	var comps []int
	for i, c := range cols {
		if n.trace[i] < 0 {
			notNull = append(notNull, "isNotNull("+schema.QuoteIdent(c.name)+")")
			continue
		}
		traced = append(traced, schema.QuoteIdent(c.name))
		tcols = append(tcols, c)
		comps = append(comps, n.trace[i])
	}
	set, err := b.keySet(n.root, comps, tcols)
	if err != nil {
		return "", err
	}
	cond := tuple(traced) + " IN (" + strings.Join(set, ", ") + ")"
	if len(notNull) > 0 {
		cond = "(" + cond + " AND " + strings.Join(notNull, " AND ") + ")"
	}
	return cond, nil
}

// keySet renders the root's old values, components comps, as literals
// of the columns' types: one per old value, tuples for several columns.
func (b *builder) keySet(rk *rootKeys, comps []int, cols []chCol) ([]string, error) {
	out := make([]string, 0, len(rk.olds))
	for _, old := range rk.olds {
		lits := make([]string, len(comps))
		for i, j := range comps {
			lit, err := b.literal(old[j], rk.cols[j], cols[i])
			if err != nil {
				return nil, err
			}
			lits[i] = lit
		}
		if len(lits) == 1 {
			out = append(out, lits[0])
		} else {
			out = append(out, "tuple("+strings.Join(lits, ", ")+")")
		}
	}
	return out, nil
}

// deletedRows selects columns cols of the rows node n deletes: its as-of
// rows that match, and on a replay the tombstones an earlier attempt
// wrote at Ve.
func (b *builder) deletedRows(n *node, cols []string) (string, error) {
	t := b.tables[n.table]
	m, err := b.match(n)
	if err != nil {
		return "", err
	}
	pre, err := b.prefilter(n)
	if err != nil {
		return "", err
	}
	names := make([]string, len(cols))
	for i, name := range cols {
		c, ok := t.col(name)
		if !ok {
			return "", fmt.Errorf("column %s of %s is referenced by a foreign key but not replicated (excluded?); cascades through it need it in ClickHouse: replicate the column", name, n.table)
		}
		names[i] = schema.QuoteIdent(c.name)
	}
	sel := "SELECT " + strings.Join(names, ", ") + " FROM (" + b.asOf(t, pre) + ") WHERE _b2c_del = 0 AND " + m
	if b.replay {
		// Tombstones at or above the event: an earlier attempt's (written
		// at the last version of the run it was part of, which may have
		// ended elsewhere), or later events' (their consequences, written
		// here below their own, change no final state).
		sel += " UNION ALL SELECT " + strings.Join(names, ", ") + " FROM " + t.ref + " WHERE _version >= " + b.first + " AND " + t.deleted()
	}
	return sel, nil
}

// tableNodes are the live nodes of a table, in plan order.
func (b *builder) tableNodes(table schema.TableName) []*node {
	var out []*node
	for _, n := range b.p.nodes {
		if n.table == table && b.live[n.id] {
			out = append(out, n)
		}
	}
	return out
}
