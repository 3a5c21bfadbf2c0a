package cascade

import (
	"slices"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
)

// The statements' writes: a table's derived rows, their count, and the
// order the tables are written in.

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

func (b *builder) derive(t *chTable, nodes []*node) (*derived, error) {
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
func (b *builder) mapped(n *node, comp int, c chCol) (string, error) {
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
func (b *builder) countSQL(t *chTable) string {
	return "SELECT countIf(" + t.deleted() + "), countIf(NOT (" + t.deleted() + ")) FROM " + t.ref + " PREWHERE _version = " + b.last
}

// insertSQL writes a table's derived rows at Ve; a row whose sorting key
// changes also gets a tombstone of its old key.
func (b *builder) insertSQL(t *chTable, d *derived) string {
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
func (b *builder) writeOrder() (order []schema.TableName, cyclic bool) {
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
