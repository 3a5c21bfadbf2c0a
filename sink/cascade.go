package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Foreign-key cascades (docs/replication.md, "Foreign-key cascades").
//
// InnoDB deletes, updates and nulls child rows for ON DELETE/UPDATE
// CASCADE and SET NULL inside the engine, and writes no row events for
// them. For a parent rows event that cascades, binlog2ch derives the
// children's rows in ClickHouse itself: each child table gets one
// INSERT ... SELECT that reads the child's rows as they were before the
// event (for each key, the row with the highest _version below the event's
// first version Vs: every earlier change, and nothing the event or later
// ones wrote) and writes the changed rows at the event's last version Ve:
// above every earlier change, below every later one. Deleted children are
// written as tombstones with their values; SET NULL writes the row with
// the key's columns NULL; ON UPDATE CASCADE writes it with the new key
// values (and a tombstone for the old sorting key when those columns are
// in it). Grandchildren follow: a deleted row's children match the deleted
// rows' referenced columns (a subquery over the same as-of read); an
// updated row's children match the parent event's old key values through
// the columns that carry them.
//
// The parent's old and new key values come from the event, as literals of
// the children's column types. Everything else stays in ClickHouse.
//
// A replay (after a crash, or from an older checkpoint) reads the same
// as-of state and writes the same rows with the same versions. Merges can
// hide the as-of state of a key that has a row at or above Vs (merged with
// it, the older rows are gone, an even older part may remain), so when
// ClickHouse may hold such rows (a table's newest version at start reaches
// Vs, or the cascade reads a table it has written), the reads leave out
// the keys that have rows at or above Vs (written by an earlier attempt of
// this event, or by later events: their rows outrank what this event
// would write), and a deleted row's children also match the tombstones at
// or above Vs (an earlier attempt's, wherever the run of events it derived
// together ended; or later events', whose consequences written here, below
// their own, change no final state).

// CascadeEvent is a parent rows event whose cascades are derived.
type CascadeEvent struct {
	Table  schema.TableName
	Schema *schema.Table // the parent's, from the event's table map
	Delete bool          // a DELETE; else an UPDATE
	// Rows are the event's rows as go-mysql decodes them: a DELETE's
	// before images, an UPDATE's before and after images alternating.
	Rows [][]any
	// First and Last are the event's first and last versions (Vs, Ve):
	// every row of the event has a version in between, no other row does.
	First, Last uint64
	At          source.Position
}

// Cascade actions, as the metric labels them.
const (
	CascadeDelete  = "delete"
	CascadeSetNull = "set_null"
	CascadeUpdate  = "update"
)

type nodeKind uint8

const (
	nodeDelete nodeKind = iota + 1
	nodeSetNull
	nodeUpdate
)

// rootKeys are the parent's key values one of its keys cascades from:
// distinct old values and, for an UPDATE, each one's new value.
type rootKeys struct {
	fk   *ddl.ForeignKey
	cols []*schema.Column // the parent's referenced columns
	olds [][]any
	news [][]any
}

// cascadeNode is one table reached by the cascade, through one key.
type cascadeNode struct {
	table  schema.TableName
	kind   nodeKind
	fk     *ddl.ForeignKey // the table's key referencing the parent node's table
	parent *cascadeNode    // nil: the event's table
	root   *rootKeys       // the key values matched (from the event, or carried down updates)
	// trace: fk.Columns[i] carries root component trace[i] (-1: none).
	// Set when the node matches the root's values (not a parent's
	// deleted rows).
	trace []int
	depth int
	// repeat: the table is on the path already (a self-reference, a
	// cycle): expanded only while the parent node has rows.
	repeat bool
	id     int
}

// maxCascadeDepth is InnoDB's: a deeper cascade fails the statement.
const maxCascadeDepth = 15

// maxCascadeNodes bounds the expansion of keys that reference their own
// table (or a cycle of tables) several times.
const maxCascadeNodes = 256

// CascadePlan is what one parent event cascades to.
type CascadePlan struct {
	ev    CascadeEvent
	nodes []*cascadeNode // in expansion order: a node after its parent
	// Tables are the tables rows may be derived for, sorted: the caller
	// has each one's pending rows flushed first.
	Tables []schema.TableName
	// Unreplicated are tables the cascade reaches that are not
	// replicated: nothing is derived for them, nor through them.
	Unreplicated []schema.TableName
	// Replay says the event is older than rows already written (an XA
	// transaction's rows, applied at its XA COMMIT): the reads must leave
	// out the keys those rows may have merged with.
	Replay bool
}

// CascadeError: a cascade binlog2ch cannot derive exactly. It stops
// replication at the event rather than leave ClickHouse silently wrong.
type CascadeError struct {
	At    source.Position
	Table schema.TableName // the parent
	Msg   string
}

func (e *CascadeError) Error() string {
	return fmt.Sprintf("binlog %s: %s: foreign-key cascade: %s", e.At, e.Table, e.Msg)
}

// PlanCascade works out which tables a parent event cascades to: nil when
// it cascades to none (no key with CASCADE or SET NULL for the event's
// kind, no referenced value changed, or no replicated child).
func PlanCascade(keys *source.ForeignKeys, ev CascadeEvent, replicated func(schema.TableName) bool) (*CascadePlan, error) {
	p := &CascadePlan{ev: ev}
	fail := func(format string, args ...any) (*CascadePlan, error) {
		return nil, &CascadeError{At: ev.At, Table: ev.Table, Msg: fmt.Sprintf(format, args...)}
	}
	var frontier []*cascadeNode
	for _, fk := range keys.Referencing(ev.Table) {
		act := fk.Action(ev.Delete)
		switch act {
		case ddl.FKRestrict:
			continue
		case ddl.FKSetDefault:
			return fail("key %s says SET DEFAULT, which InnoDB refuses; binlog2ch cannot derive it", fk)
		}
		rk, err := rootKeysOf(fk, ev)
		if err != nil {
			return fail("%v", err)
		}
		if rk == nil {
			continue // no referenced value deleted or changed
		}
		n := &cascadeNode{table: fk.Child, fk: fk, root: rk, depth: 1, repeat: fk.Child == ev.Table}
		n.trace = make([]int, len(fk.Columns))
		for i := range n.trace {
			n.trace[i] = i
		}
		switch {
		case ev.Delete && act == ddl.FKCascade:
			n.kind = nodeDelete
		case act == ddl.FKSetNull:
			n.kind = nodeSetNull
		default:
			n.kind = nodeUpdate
		}
		frontier = append(frontier, n)
	}
	unreplicated := map[schema.TableName]bool{}
	for len(frontier) > 0 {
		n := frontier[0]
		frontier = frontier[1:]
		if !replicated(n.table) {
			unreplicated[n.table] = true
			continue // its rows are not in ClickHouse: nothing to derive, nor to read
		}
		if len(p.nodes) >= maxCascadeNodes {
			return fail("the keys reach more than %d tables and levels (keys referencing their own tables several times); binlog2ch does not derive such cascades", maxCascadeNodes)
		}
		n.id = len(p.nodes)
		p.nodes = append(p.nodes, n)
		if n.depth >= maxCascadeDepth {
			continue // InnoDB refuses deeper cascades: the statement succeeded, so none reached further
		}
		for _, g := range keys.Referencing(n.table) {
			act := g.Action(n.kind == nodeDelete)
			if n.kind != nodeDelete {
				// An update of n's rows: only keys referencing changed columns act.
				changed := n.fk.Columns
				overlap := 0
				for _, c := range g.RefColumns {
					if containsFold(changed, c) {
						overlap++
					}
				}
				if overlap == 0 || act == ddl.FKRestrict {
					continue
				}
				if n.kind == nodeSetNull || overlap < len(changed) {
					return fail("key %s references columns that key %s changes (%s), but not all of them, or nulls them; binlog2ch derives a cascade through an updated row only when the next key references every column that carries the parent's values",
						g, n.fk, strings.Join(changed, ", "))
				}
			}
			switch act {
			case ddl.FKRestrict:
				continue
			case ddl.FKSetDefault:
				return fail("key %s says SET DEFAULT, which InnoDB refuses; binlog2ch cannot derive it", g)
			}
			c := &cascadeNode{table: g.Child, fk: g, parent: n, depth: n.depth + 1}
			for a := n; a != nil; a = a.parent {
				c.repeat = c.repeat || a.table == g.Child
			}
			c.repeat = c.repeat || g.Child == ev.Table
			switch {
			case n.kind == nodeDelete && act == ddl.FKCascade:
				c.kind = nodeDelete
			case act == ddl.FKSetNull:
				c.kind = nodeSetNull
			default:
				c.kind = nodeUpdate
			}
			if n.kind == nodeUpdate {
				// The parent's changed columns carry root components;
				// g's columns referencing them carry the same.
				c.root = n.root
				c.trace = make([]int, len(g.Columns))
				for i, rc := range g.RefColumns {
					c.trace[i] = -1
					for j, nc := range n.fk.Columns {
						if strings.EqualFold(nc, rc) {
							c.trace[i] = n.trace[j]
						}
					}
				}
			}
			frontier = append(frontier, c)
		}
	}
	if len(p.nodes) == 0 {
		if len(unreplicated) > 0 {
			p.Unreplicated = sortedTables(unreplicated)
			return p, nil
		}
		return nil, nil
	}
	tables := map[schema.TableName]bool{}
	for _, n := range p.nodes {
		tables[n.table] = true
	}
	p.Tables = sortedTables(tables)
	p.Unreplicated = sortedTables(unreplicated)
	return p, nil
}

func sortedTables(m map[schema.TableName]bool) []schema.TableName {
	out := make([]schema.TableName, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// rootKeysOf collects the key values of fk's referenced columns that the
// event deletes or changes; nil when there are none. Rows whose key has a
// NULL reference nothing.
func rootKeysOf(fk *ddl.ForeignKey, ev CascadeEvent) (*rootKeys, error) {
	rk := &rootKeys{fk: fk}
	idx := make([]int, len(fk.RefColumns))
	for i, name := range fk.RefColumns {
		j := ev.Schema.ColumnIndex(name)
		if j < 0 {
			return nil, fmt.Errorf("key %s references column %s, which the event's table map does not have", fk, name)
		}
		idx[i] = j
		rk.cols = append(rk.cols, &ev.Schema.Columns[j])
	}
	values := func(row []any) ([]any, bool) {
		out := make([]any, len(idx))
		for i, j := range idx {
			if j >= len(row) || row[j] == nil {
				return nil, false
			}
			out[i] = row[j]
		}
		return out, true
	}
	seen := map[string]bool{}
	add := func(old, new []any) {
		k := fmt.Sprintf("%#v", old)
		if seen[k] {
			return
		}
		seen[k] = true
		rk.olds = append(rk.olds, old)
		if new != nil {
			rk.news = append(rk.news, new)
		}
	}
	if ev.Delete {
		for _, row := range ev.Rows {
			if old, ok := values(row); ok {
				add(old, nil)
			}
		}
	} else {
		for i := 0; i+1 < len(ev.Rows); i += 2 {
			old, ok := values(ev.Rows[i])
			if !ok {
				continue
			}
			// A column changed to NULL: the children's CASCADE writes NULL.
			new := make([]any, len(idx))
			for k, j := range idx {
				if j < len(ev.Rows[i+1]) {
					new[k] = ev.Rows[i+1][j]
				}
			}
			if !slices.EqualFunc(old, new, equalValue) {
				add(old, new)
			}
		}
	}
	if len(rk.olds) == 0 {
		return nil, nil
	}
	return rk, nil
}

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

// cascadeSQL builds one cascade's statements.
type cascadeSQL struct {
	p      *CascadePlan
	tables map[schema.TableName]*chTable
	first  string // Vs
	last   string // Ve
	// replay: leave out keys with rows at or above Vs, and match the
	// tombstones an earlier attempt wrote (see the package comment).
	replay bool
	// live are the nodes kept (a repeat node whose parent has no rows is
	// not).
	live map[int]bool
}

func newCascadeSQL(p *CascadePlan, tables map[schema.TableName]*chTable, replay bool) *cascadeSQL {
	b := &cascadeSQL{p: p, tables: tables, first: strconv.FormatUint(p.ev.First, 10), last: strconv.FormatUint(p.ev.Last, 10), replay: replay, live: map[int]bool{}}
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
func (b *cascadeSQL) asOf(t *chTable, filter string) string {
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
func (b *cascadeSQL) literal(v any, src *schema.Column, dst chCol) (string, error) {
	lit, err := block.Literal(v, src)
	if err != nil {
		return "", fmt.Errorf("column %s: %w", src.Name, err)
	}
	return "CAST(" + lit + " AS " + baseType(dst.typ) + ")", nil
}

// nodeColumns are the ClickHouse columns of node n's key.
func (b *cascadeSQL) nodeColumns(n *cascadeNode) ([]chCol, error) {
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
func (b *cascadeSQL) match(n *cascadeNode) (string, error) {
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
func (b *cascadeSQL) prefilter(n *cascadeNode) (string, error) {
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
func (b *cascadeSQL) rootMatch(n *cascadeNode, cols []chCol) (string, error) {
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
func (b *cascadeSQL) keySet(rk *rootKeys, comps []int, cols []chCol) ([]string, error) {
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
func (b *cascadeSQL) deletedRows(n *cascadeNode, cols []string) (string, error) {
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
func (b *cascadeSQL) tableNodes(table schema.TableName) []*cascadeNode {
	var out []*cascadeNode
	for _, n := range b.p.nodes {
		if n.table == table && b.live[n.id] {
			out = append(out, n)
		}
	}
	return out
}

// derived is the SELECT of a table's derived rows (before the ARRAY JOIN
// of key changes): every as-of row some node reaches, with _b2c_m<i> for
// each node and the expressions the rows' values need.
type derived struct {
	from    string   // the FROM clause: reached rows with their match flags
	any     string   // a row is reached
	del     string   // the row is deleted
	upd     string   // some update node reached it
	values  []string // per column of t.cols: its new value
	keyDiff string   // the row's sorting key changes ("" when no node changes it)
}

func (b *cascadeSQL) derive(t *chTable, nodes []*cascadeNode) (*derived, error) {
	var matches, flags, filters []string
	for _, n := range nodes {
		m, err := b.match(n)
		if err != nil {
			return nil, err
		}
		pre, err := b.prefilter(n)
		if err != nil {
			return nil, err
		}
		flag := "_b2c_m" + strconv.Itoa(n.id)
		matches = append(matches, m+" AS "+flag)
		flags = append(flags, flag)
		if !slices.Contains(filters, pre) {
			filters = append(filters, pre)
		}
	}
	d := &derived{any: "(" + strings.Join(flags, " OR ") + ")"}
	filter := strings.Join(filters, " OR ")
	if len(filters) > 1 {
		filter = "(" + filter + ")"
	}
	d.from = "(SELECT *, " + strings.Join(matches, ", ") + " FROM (" + b.asOf(t, filter) + ") WHERE _b2c_del = 0)"
	var dels, upds []string
	for i, n := range nodes {
		switch n.kind {
		case nodeDelete:
			dels = append(dels, flags[i])
		case nodeUpdate:
			upds = append(upds, flags[i])
		}
	}
	d.del, d.upd = "0", "0"
	if len(dels) > 0 {
		d.del = "(" + strings.Join(dels, " OR ") + ")"
	}
	if len(upds) > 0 {
		d.upd = "(" + strings.Join(upds, " OR ") + ")"
	}
	var keyOld, keyNew []string
	keyChanges := false
	for _, c := range t.cols {
		var branches []string
		for i, n := range nodes {
			if n.kind == nodeDelete {
				continue
			}
			for k, fc := range n.fk.Columns {
				if !strings.EqualFold(fc, c.name) {
					continue
				}
				if n.kind == nodeSetNull {
					branches = append(branches, flags[i], "NULL")
					continue
				}
				if n.trace[k] < 0 {
					continue // not carried from the parent: unchanged
				}
				v, err := b.mapped(n, n.trace[k], c)
				if err != nil {
					return nil, err
				}
				branches = append(branches, flags[i], v)
			}
		}
		col := schema.QuoteIdent(c.name)
		v := col
		if len(branches) > 0 {
			if d.del != "0" {
				// A deleted row's tombstone keeps its values.
				branches = append([]string{d.del, col}, branches...)
			}
			v = "multiIf(" + strings.Join(branches, ", ") + ", " + col + ")"
		}
		d.values = append(d.values, v)
		if c.key {
			keyOld, keyNew = append(keyOld, col), append(keyNew, v)
			keyChanges = keyChanges || len(branches) > 0
		}
	}
	if keyChanges {
		d.keyDiff = tuple(keyOld) + " != " + tuple(keyNew)
	}
	return d, nil
}

// mapped is the new value of column c for an update node: the root's new
// value of component comp, chosen by the row's old values of the traced
// columns.
func (b *cascadeSQL) mapped(n *cascadeNode, comp int, c chCol) (string, error) {
	t := b.tables[n.table]
	var traced []string
	var tcols []chCol
	var comps []int
	for i, name := range n.fk.Columns {
		if n.trace[i] < 0 {
			continue
		}
		tc, _ := t.col(name)
		traced = append(traced, "assumeNotNull("+schema.QuoteIdent(tc.name)+")")
		tcols = append(tcols, tc)
		comps = append(comps, n.trace[i])
	}
	olds, err := b.keySet(n.root, comps, tcols)
	if err != nil {
		return "", err
	}
	key := tuple(traced)
	if len(traced) > 1 {
		key = "tuple(" + strings.Join(traced, ", ") + ")"
	}
	news := make([]string, len(n.root.news))
	for i, nv := range n.root.news {
		if nv[comp] == nil {
			news[i] = "NULL"
			continue
		}
		lit, err := b.literal(nv[comp], n.root.cols[comp], c)
		if err != nil {
			return "", err
		}
		news[i] = lit
	}
	return "[" + strings.Join(news, ", ") + "][indexOf([" + strings.Join(olds, ", ") + "], " + key + ")]", nil
}

// countSQL counts the tombstones and the other rows a table has at Ve:
// the rows the cascade wrote (and, on a replay, an earlier attempt).
func (b *cascadeSQL) countSQL(t *chTable) string {
	return "SELECT countIf(" + t.deleted() + "), countIf(NOT (" + t.deleted() + ")) FROM " + t.ref + " PREWHERE _version = " + b.last
}

// insertSQL writes a table's derived rows at Ve; a row whose sorting key
// changes also gets a tombstone of its old key.
func (b *cascadeSQL) insertSQL(t *chTable, d *derived) string {
	var cols, outs []string
	side := d.keyDiff != ""
	for i, c := range t.cols {
		cols = append(cols, schema.QuoteIdent(c.name))
		v := d.values[i]
		if side {
			v = "if(_b2c_side = 0, " + schema.QuoteIdent(c.name) + ", " + v + ")"
		}
		outs = append(outs, v)
	}
	dead := d.del
	if side {
		dead = "(_b2c_side = 0 OR " + d.del + ")"
	}
	cols = append(cols, schema.QuoteIdent(schema.VersionColumn), schema.QuoteIdent(t.del))
	outs = append(outs, "toUInt64("+b.last+")")
	if t.del == schema.OpColumn {
		outs = append(outs, "CAST(if("+dead+", 'delete', 'update') AS "+t.delType+")")
	} else {
		outs = append(outs, "toUInt8("+dead+")")
	}
	q := "INSERT INTO " + t.ref + " (" + strings.Join(cols, ", ") + ") SELECT " + strings.Join(outs, ", ") + " FROM " + d.from
	if side {
		q += " ARRAY JOIN [0, 1] AS _b2c_side WHERE " + d.any + " AND (_b2c_side = 1 OR NOT " + d.del + " AND " + d.keyDiff + ")"
	} else {
		q += " WHERE " + d.any
	}
	return q
}

// writeOrder orders the tables so that each is written after every table
// whose derivation reads it (its descendants); cyclic reports a table read
// after it is written (keys in a cycle), which needs the replay reads.
func (b *cascadeSQL) writeOrder() (order []schema.TableName, cyclic bool) {
	// before[t][u]: t must be written before u (t's nodes read u).
	before := map[schema.TableName]map[schema.TableName]bool{}
	var tables []schema.TableName
	for _, n := range b.p.nodes {
		if !b.live[n.id] {
			continue
		}
		if before[n.table] == nil {
			before[n.table] = map[schema.TableName]bool{}
			tables = append(tables, n.table)
		}
		if n.trace != nil {
			continue // matches the root's values: reads no other table
		}
		for a := n.parent; a != nil; a = a.parent {
			if a.table != n.table {
				before[n.table][a.table] = true
			}
			if a.trace != nil {
				break
			}
		}
	}
	slices.SortFunc(tables, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	done := map[schema.TableName]bool{}
	for len(order) < len(tables) {
		progress := false
		for _, t := range tables {
			if done[t] {
				continue
			}
			// t goes once no table still to write must go before it.
			ready := true
			for _, u := range tables {
				if !done[u] && u != t && before[u][t] {
					ready = false
				}
			}
			if ready {
				order, done[t], progress = append(order, t), true, true
			}
		}
		if !progress {
			for _, t := range tables {
				if !done[t] {
					order, done[t] = append(order, t), true
				}
			}
			return order, true
		}
	}
	return order, false
}

// cascadeState is the ClickHouse side's memory of cascades: each table's
// newest version when a cascade first involved it in this process.
type cascadeState struct {
	mu      sync.Mutex
	horizon map[schema.TableName]uint64
	// tables caches the tables' ClickHouse columns; a writer forgets its
	// table's when it changes them (ddl.go).
	tables map[schema.TableName]*chTable
	// afterInsert, in tests, runs after each table's derived rows are
	// written (it may block: a test kills the daemon there).
	afterInsert func(schema.TableName)
}

// SetCascadeTestHook sets a function run after each table's derived rows
// are written, for tests that stop the daemon in the middle of a cascade.
func (c *ClickHouse) SetCascadeTestHook(f func(schema.TableName)) { c.cascades.afterInsert = f }

// ForgetCascadeHorizon drops what is known of a table's newest version:
// it was copied again, at versions ahead of the reader.
func (c *ClickHouse) ForgetCascadeHorizon(t schema.TableName) {
	c.cascades.mu.Lock()
	delete(c.cascades.horizon, t)
	c.cascades.mu.Unlock()
}

// forgetCascadeTable drops a table's cached columns: its writer is
// changing them.
func (c *ClickHouse) forgetCascadeTable(t schema.TableName) {
	c.cascades.mu.Lock()
	delete(c.cascades.tables, t)
	c.cascades.mu.Unlock()
}

// CascadeResult is what one cascade derived: rows per table and action.
type CascadeResult struct {
	Rows map[schema.TableName]map[string]uint64
}

// cascadeTable is a replicated table's ClickHouse columns, cached; nil
// when it has no ClickHouse table (no rows there to derive from).
func (c *ClickHouse) cascadeTable(ctx context.Context, t schema.TableName) (*chTable, error) {
	c.cascades.mu.Lock()
	ct, ok := c.cascades.tables[t]
	c.cascades.mu.Unlock()
	if ok {
		return ct, nil
	}
	ct, err := c.readCascadeTable(ctx, t)
	if err != nil || ct == nil {
		return ct, err // a table missing now may be created: not cached
	}
	c.cascades.mu.Lock()
	if c.cascades.tables == nil {
		c.cascades.tables = map[schema.TableName]*chTable{}
	}
	c.cascades.tables[t] = ct
	c.cascades.mu.Unlock()
	return ct, nil
}

func (c *ClickHouse) readCascadeTable(ctx context.Context, t schema.TableName) (*chTable, error) {
	db := c.cfg.ClickHouseDatabase(t.Database)
	name := t.Table
	if o := c.cfg.TableOptions(t.Database, t.Table); o.Name != "" {
		name = o.Name
	}
	ct := &chTable{name: t, ref: schema.QuoteIdent(db) + "." + schema.QuoteIdent(name)}
	err := c.Retry(ctx, c.log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		rows, err := c.conn.Query(ctx, "SELECT name, type, is_in_sorting_key FROM system.columns WHERE database = ? AND table = ?", db, name)
		if err != nil {
			return err
		}
		defer rows.Close()
		ct.cols, ct.key, ct.del = nil, nil, ""
		for rows.Next() {
			var col chCol
			var inKey uint8
			if err := rows.Scan(&col.name, &col.typ, &inKey); err != nil {
				return err
			}
			switch col.name {
			case schema.VersionColumn:
				continue
			case schema.IsDeletedColumn, schema.OpColumn:
				ct.del, ct.delType = col.name, col.typ
				continue
			}
			col.key = inKey == 1
			if col.key {
				ct.key = append(ct.key, col.name)
			}
			ct.cols = append(ct.cols, col)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	if len(ct.cols) == 0 {
		return nil, nil
	}
	if len(ct.key) == 0 || ct.del == "" {
		return nil, &CascadeError{Table: t, Msg: fmt.Sprintf("ClickHouse table %s has no key (a changelog table of a MySQL table without one): binlog2ch cannot tell which of its rows a cascade changed. Give the MySQL table a primary key, or exclude it", ct.ref)}
	}
	return ct, nil
}

// RunCascade derives a planned cascade's rows in ClickHouse. The caller
// has flushed the pending rows of every table in plan.Tables, and holds
// back the event's own rows until this returns.
func (c *ClickHouse) RunCascade(ctx context.Context, log *slog.Logger, plan *CascadePlan) (CascadeResult, error) {
	res := CascadeResult{Rows: map[schema.TableName]map[string]uint64{}}
	if c.cfg.ClickHouse.Cluster != "" {
		return res, &CascadeError{At: plan.ev.At, Table: plan.ev.Table, Msg: "binlog2ch does not derive foreign-key cascades into a ClickHouse cluster yet; the children's rows would stay in ClickHouse. Exclude the child tables, or replicate them to a single server"}
	}
	tables := map[schema.TableName]*chTable{}
	replay := plan.Replay
	for _, t := range plan.Tables {
		ct, err := c.cascadeTable(ctx, t)
		if err != nil {
			var ce *CascadeError
			if errors.As(err, &ce) {
				ce.At = plan.ev.At
			}
			return res, err
		}
		if ct == nil {
			continue
		}
		tables[t] = ct
		h, err := c.horizonOf(ctx, ct)
		if err != nil {
			return res, err
		}
		replay = replay || h >= plan.ev.First
	}
	b := newCascadeSQL(plan, tables, replay)
	if _, cyclic := b.writeOrder(); cyclic {
		b.replay = true // a table is read after it is written
	}
	settings := clickhouse.Settings{"max_query_size": 64 << 20}
	for k, v := range c.driverSettings {
		settings[k] = v
	}
	qctx := clickhouse.Context(ctx, clickhouse.WithSettings(settings))
	// Levels of a table reached again (a key referencing its own table)
	// exist only while the level above has rows.
	for _, n := range plan.nodes {
		if !b.live[n.id] || !n.repeat || n.parent == nil {
			continue
		}
		var cols []string
		cols = append(cols, n.fk.RefColumns...)
		sub, err := b.deletedRows(n.parent, cols)
		if err != nil {
			return res, &CascadeError{At: plan.ev.At, Table: plan.ev.Table, Msg: err.Error()}
		}
		var count uint64
		q := "SELECT count() FROM (" + sub + ")"
		if err := c.Retry(ctx, log, metrics.StageCascade, "read a cascade's rows", func(context.Context) error {
			return c.conn.QueryRow(qctx, q).Scan(&count)
		}); err != nil {
			return res, fmt.Errorf("binlog %s: cascade of %s: %w", plan.ev.At, plan.ev.Table, err)
		}
		if count == 0 {
			b.live[n.id] = false
			for _, m := range plan.nodes {
				if m.parent != nil && !b.live[m.parent.id] {
					b.live[m.id] = false
				}
			}
		}
	}
	order, _ := b.writeOrder()
	for _, t := range order {
		ct := tables[t]
		d, err := b.derive(ct, b.tableNodes(t))
		if err != nil {
			return res, &CascadeError{At: plan.ev.At, Table: plan.ev.Table, Msg: err.Error()}
		}
		ins := b.insertSQL(ct, d)
		// A part like any insert's: counted, so the writers' batches make
		// room for it.
		c.budget.Take(GrantCascade)
		if err := c.Retry(ctx, log, metrics.StageCascade, "write a cascade's rows", func(context.Context) error {
			return c.conn.Exec(qctx, ins)
		}); err != nil {
			return res, fmt.Errorf("binlog %s: cascade of %s into %s: %w", plan.ev.At, plan.ev.Table, t, err)
		}
		// What was written, for the metric: the rows at Ve (reading only
		// _version, and the flags of the rows it finds).
		var dead, live uint64
		q := b.countSQL(ct)
		if err := c.Retry(ctx, log, metrics.StageCascade, "count a cascade's rows", func(context.Context) error {
			return c.conn.QueryRow(qctx, q).Scan(&dead, &live)
		}); err != nil {
			return res, fmt.Errorf("binlog %s: cascade of %s into %s: %w", plan.ev.At, plan.ev.Table, t, err)
		}
		counts := map[string]uint64{}
		switch {
		case d.del != "0":
			counts[CascadeDelete], counts[CascadeSetNull] = dead, live
		case d.upd != "0":
			counts[CascadeUpdate] = live // the tombstones are of old sorting keys
		default:
			counts[CascadeSetNull] = live
		}
		for k, n := range counts {
			if n == 0 {
				delete(counts, k)
			}
		}
		if len(counts) == 0 {
			continue
		}
		res.Rows[t] = counts
		if hook := c.cascades.afterInsert; hook != nil {
			hook(t)
		}
	}
	log.Debug("cascade derived", "parent", plan.ev.Table.String(), "binlog", plan.ev.At.String(), "rows", res.Rows, "replay", b.replay)
	return res, nil
}

// horizonOf is a table's newest version when a cascade first involved it
// in this process: rows at or above an event's first version that this
// process did not write can only come from before it started (a replay).
func (c *ClickHouse) horizonOf(ctx context.Context, t *chTable) (uint64, error) {
	c.cascades.mu.Lock()
	h, ok := c.cascades.horizon[t.name]
	c.cascades.mu.Unlock()
	if ok {
		return h, nil
	}
	err := c.Retry(ctx, c.log, metrics.StageCascade, "read a table's newest version", func(ctx context.Context) error {
		return c.conn.QueryRow(ctx, "SELECT max(_version) FROM "+t.ref).Scan(&h)
	})
	if err != nil {
		return 0, err
	}
	c.cascades.mu.Lock()
	if c.cascades.horizon == nil {
		c.cascades.horizon = map[schema.TableName]uint64{}
	}
	c.cascades.horizon[t.name] = h
	c.cascades.mu.Unlock()
	return h, nil
}
