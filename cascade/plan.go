package cascade

import (
	"fmt"
	"slices"
	"strings"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Event is a parent rows event whose cascades are derived.
type Event struct {
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
	ActionDelete  = "delete"
	ActionSetNull = "set_null"
	ActionUpdate  = "update"
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

// node is one table reached by the cascade, through one key.
type node struct {
	table  schema.TableName
	kind   nodeKind
	fk     *ddl.ForeignKey // the table's key referencing the parent node's table
	parent *node           // nil: the event's table
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

// maxDepth is InnoDB's: a deeper cascade fails the statement.
const maxDepth = 15

// maxNodes bounds the expansion of keys that reference their own
// table (or a cycle of tables) several times.
const maxNodes = 256

// Plan is what one parent event cascades to.
type Plan struct {
	ev    Event
	nodes []*node // in expansion order: a node after its parent
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
	// Collations are the text columns' collations of the tables, by
	// lower-case column name; Compare compares values under one in MySQL
	// (collate.go). The Follower sets them.
	Collations map[schema.TableName]map[string]Collation
	Compare    Comparer
}

// Error: a cascade binlog2ch cannot derive exactly. It stops
// replication at the event rather than leave ClickHouse silently wrong.
type Error struct {
	At    source.Position
	Table schema.TableName // the parent
	Msg   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("binlog %s: %s: foreign-key cascade: %s", e.At, e.Table, e.Msg)
}

// PlanEvent works out which tables a parent event cascades to: nil when
// it cascades to none (no key with CASCADE or SET NULL for the event's
// kind, no referenced value changed, or no replicated child).
func PlanEvent(keys *Keys, ev Event, replicated func(schema.TableName) bool) (*Plan, error) {
	p := &Plan{ev: ev}
	fail := func(format string, args ...any) (*Plan, error) {
		return nil, &Error{At: ev.At, Table: ev.Table, Msg: fmt.Sprintf(format, args...)}
	}
	var frontier []*node
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
		n := &node{table: fk.Child, fk: fk, root: rk, depth: 1, repeat: fk.Child == ev.Table}
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
			// Its rows are not in ClickHouse: nothing to derive for it,
			// and nothing to derive through it, which a replicated table
			// below it would need.
			if t := throughUnreplicated(keys, replicated, n); t != nil {
				return fail("key %s cascades into %s, which is not replicated, and key %s cascades from there into %s, which is: binlog2ch derives a cascade from the rows of the tables it passes through, and ClickHouse has none of %s. Replicate %s too (tables.include; a running daemon copies it online), or exclude %s",
					n.fk, n.table, t, t.Child, n.table, n.table, t.Child)
			}
			unreplicated[n.table] = true
			continue
		}
		if len(p.nodes) >= maxNodes {
			return fail("the keys reach more than %d tables and levels (keys referencing their own tables several times); binlog2ch does not derive such cascades", maxNodes)
		}
		n.id = len(p.nodes)
		p.nodes = append(p.nodes, n)
		if n.depth >= maxDepth {
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
			c := &node{table: g.Child, fk: g, parent: n, depth: n.depth + 1}
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
func rootKeysOf(fk *ddl.ForeignKey, ev Event) (*rootKeys, error) {
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
			if !slices.EqualFunc(old, new, source.SameValue) {
				add(old, new)
			}
		}
	}
	if len(rk.olds) == 0 {
		return nil, nil
	}
	return rk, nil
}

// throughUnreplicated is a key through which node n's table, not
// replicated, may cascade further into a replicated table (nil: none).
func throughUnreplicated(keys *Keys, replicated func(schema.TableName) bool, n *node) *ddl.ForeignKey {
	for _, g := range keys.Referencing(n.table) {
		act := g.Action(n.kind == nodeDelete)
		if act == ddl.FKRestrict {
			continue
		}
		if n.kind != nodeDelete && !slices.ContainsFunc(g.RefColumns, func(c string) bool { return containsFold(n.fk.Columns, c) }) {
			continue // references no column the update changes
		}
		if replicated(g.Child) || (g.Child != n.table && reachesReplicated(keys, replicated, g.Child)) {
			return g
		}
	}
	return nil
}
