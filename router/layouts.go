package router

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// partitionLayouts are the tables' partition layouts as of the binlog
// position read: a layout held is exact for that position, never a guess.
// It belongs to the stream's goroutine.
type partitionLayouts struct {
	// known are layouts held for certain; nil: not partitioned.
	known map[schema.TableName]*catalog.Partitions
	// unknown are tables whose layout is not known, with why; a key with
	// Database "" is a table of that (lower-cased) name in any database.
	unknown map[schema.TableName]string
	// all: a table neither lists is not partitioned. Else that holds for
	// the tables every one of covers selects (none: no table), and the
	// others are not known, for uncovered.
	all       bool
	covers    []config.TablesConfig
	uncovered string
	// changes are the layouts before each statement that changed them,
	// kept until the checkpoint passes it; saved is the state of now.
	changes []layoutChange
	saved   *state.PartitionState
	// before are the tables of the statement being acted on, as they
	// were before it.
	before map[schema.TableName]layoutOf
	tried  time.Time // the last resolvePartitions
}

type layoutChange struct {
	at     source.Position
	before *state.PartitionState
}

// restoreLayouts starts from the checkpoint's layouts: those of its
// position. A table they do not hold is not known.
func restoreLayouts(from *state.Checkpoint) *partitionLayouts {
	m := &partitionLayouts{known: map[schema.TableName]*catalog.Partitions{}, unknown: map[schema.TableName]string{}, uncovered: notKept(from)}
	if from == nil || from.Partitions == nil {
		return m
	}
	st := from.Partitions
	for _, c := range st.Covers {
		m.covers = append(m.covers, config.TablesConfig{Include: c.Include, Exclude: c.Exclude})
	}
	for _, l := range st.Layouts {
		p := &catalog.Partitions{Method: l.Method, Expr: l.Expr}
		for _, b := range l.Parts {
			p.Parts = append(p.Parts, catalog.Partition{Name: b.Name, Desc: b.Desc})
		}
		m.known[l.Table] = p
	}
	for _, t := range st.None {
		m.known[t] = nil
	}
	for _, u := range st.Unknown {
		m.unknown[u.Table] = u.Why
	}
	return m
}

func (m *partitionLayouts) covered(t schema.TableName) bool {
	if m.all {
		return true
	}
	for _, c := range m.covers {
		if !c.Selects(t.Database, t.Table) {
			return false
		}
	}
	return len(m.covers) > 0
}

// complete reports whether every table's layout is known.
func (m *partitionLayouts) complete() bool { return m.all && len(m.unknown) == 0 }

func (m *partitionLayouts) lookup(t schema.TableName) layoutOf {
	if p, ok := m.known[t]; ok {
		return layoutOf{parts: p}
	}
	if why, ok := m.unknown[t]; ok {
		return layoutOf{why: why}
	}
	if why, ok := m.unknown[schema.TableName{Table: strings.ToLower(t.Table)}]; ok {
		return layoutOf{why: why}
	}
	if m.covered(t) {
		return layoutOf{}
	}
	return layoutOf{why: m.uncovered}
}

func (m *partitionLayouts) set(t schema.TableName, p *catalog.Partitions) {
	delete(m.unknown, t)
	m.known[t] = p
}

func (m *partitionLayouts) setUnknown(t schema.TableName, why string) {
	if t.Database == "" {
		// Any database's: the statement's default one is not known.
		t.Table = strings.ToLower(t.Table)
		for k := range m.known {
			if strings.EqualFold(k.Table, t.Table) {
				delete(m.known, k)
				m.unknown[k] = why
			}
		}
	}
	delete(m.known, t)
	m.unknown[t] = why
}

func (m *partitionLayouts) setLookup(t schema.TableName, lo layoutOf) {
	if lo.why != "" {
		m.setUnknown(t, lo.why)
	} else {
		m.set(t, lo.parts.Clone())
	}
}

// resolved takes information_schema's layouts as those of the position.
func (m *partitionLayouts) resolved(all map[schema.TableName]*catalog.Partitions) {
	m.known, m.unknown, m.all, m.covers = all, map[schema.TableName]string{}, true, nil
}

// record keeps the state of before a change at at, for the checkpoints
// before it.
func (m *partitionLayouts) record(at source.Position, keep func(schema.TableName) bool, sel *config.TablesConfig) {
	m.changes = append(m.changes, layoutChange{at: at, before: m.state(keep, sel)})
	m.saved = nil
}

// at is the state as of a checkpoint position: before the first change
// after it. Changes it has passed are forgotten.
func (m *partitionLayouts) at(p source.Position, keep func(schema.TableName) bool, sel *config.TablesConfig) *state.PartitionState {
	for len(m.changes) > 0 && !p.Before(m.changes[0].at) {
		m.changes = m.changes[1:]
	}
	if len(m.changes) > 0 {
		return m.changes[0].before
	}
	if m.saved == nil {
		m.saved = m.state(keep, sel)
	}
	return m.saved
}

// state is what the checkpoint keeps: the layouts of the tables keep
// keeps, and the selections whose other tables are not partitioned.
func (m *partitionLayouts) state(keep func(schema.TableName) bool, sel *config.TablesConfig) *state.PartitionState {
	st := &state.PartitionState{}
	var covers []config.TablesConfig
	if m.all || len(m.covers) > 0 {
		covers = append(slices.Clone(m.covers), *sel)
	}
	for _, c := range covers {
		st.Covers = append(st.Covers, state.Selection{Include: c.Include, Exclude: c.Exclude})
	}
	coveredThen := func(t schema.TableName) bool {
		for _, c := range covers {
			if !c.Selects(t.Database, t.Table) {
				return false
			}
		}
		return len(covers) > 0
	}
	for t, p := range m.known {
		switch {
		case !keep(t) && !coveredThen(t):
		case p != nil:
			l := state.PartitionLayout{Table: t, Method: p.Method, Expr: p.Expr}
			for _, part := range p.Parts {
				l.Parts = append(l.Parts, state.PartitionBound{Name: part.Name, Desc: part.Desc})
			}
			st.Layouts = append(st.Layouts, l)
		case !coveredThen(t):
			st.None = append(st.None, t)
		}
	}
	for t, why := range m.unknown {
		if t.Database == "" || keep(t) || coveredThen(t) {
			st.Unknown = append(st.Unknown, state.UnknownLayout{Table: t, Why: why})
		}
	}
	slices.SortFunc(st.Layouts, func(a, b state.PartitionLayout) int { return strings.Compare(a.Table.String(), b.Table.String()) })
	slices.SortFunc(st.None, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	slices.SortFunc(st.Unknown, func(a, b state.UnknownLayout) int { return strings.Compare(a.Table.String(), b.Table.String()) })
	return st
}

// followStatement applies a statement's effects to the layouts, and
// marks unknown the tables whose new layout it does not tell exactly
// (unparsed: those a statement the parser could not read may change). It
// returns those, with why.
func (m *partitionLayouts) followStatement(st source.Statement, unparsed []schema.TableName) map[schema.TableName]string {
	inexact := map[schema.TableName]string{}
	for _, t := range unparsed {
		inexact[t] = "a statement binlog2ch could not parse may have changed it: " + truncate(st.Text, 200)
	}
	for i, ef := range st.Effects {
		if !st.Parsed && (ef.Kind == ddl.Drop || ef.Kind == ddl.PartitionRows) {
			// CREATE OR REPLACE, CONVERT PARTITION: their new layout is
			// in words the parser cannot read.
			inexact[ef.Table] = "a statement binlog2ch could not parse changed it: " + truncate(st.Text, 200)
			continue
		}
		if why := m.follow(st.Effects, i); why != "" {
			inexact[ef.Table] = why
		}
	}
	for t, why := range inexact {
		m.setUnknown(t, why)
	}
	return inexact
}

// follow applies a statement's effect i to the layouts. It returns why
// the table's new layout is not known exactly ("" when it is).
func (m *partitionLayouts) follow(effects []ddl.Effect, i int) string {
	ef, rest := effects[i], effects[i+1:]
	t := ef.Table
	switch ef.Kind {
	case ddl.Create:
		next := layoutOf{} // not partitioned, unless its Partitioning effect says
		for _, e := range rest {
			if e.Kind == ddl.Partitioning && e.Table == t {
				next = m.changed(m.lookup(t), e.Partitioning)
			}
		}
		if ef.IfNotExists {
			// The table may have been there, unchanged.
			if now := m.lookup(t); now.why != "" || next.why != "" || !now.parts.Equal(next.parts) {
				return "CREATE TABLE IF NOT EXISTS, of a table that may have been there with another layout"
			}
		}
		m.setLookup(t, next)
		return next.why
	case ddl.Drop:
		m.set(t, nil)
	case ddl.DropDatabase:
		for k := range m.known {
			if k.Database == t.Database {
				m.known[k] = nil
			}
		}
		for k := range m.unknown {
			if k.Database == t.Database {
				delete(m.unknown, k)
				m.known[k] = nil
			}
		}
	case ddl.RenameTable:
		lo := m.lookup(t)
		m.set(t, nil)
		m.setLookup(ef.NewTable, lo)
	case ddl.PartitionRows:
		if ef.PartitionOp != "DROP" {
			return "" // TRUNCATE and EXCHANGE keep the definitions
		}
		lo := m.lookup(t)
		if lo.why == "" && lo.parts != nil {
			p := lo.parts.Clone()
			p.Drop(ef.Partitions)
			m.set(t, p)
		}
	case ddl.Partitioning:
		for _, e := range effects[:i] {
			if e.Kind == ddl.Create && e.Table == t {
				return "" // a CREATE TABLE's: its Create took it
			}
		}
		if prev := m.lookup(t); prev.why == "" || ef.Partitioning.Op == ddl.PartitionsDefine || ef.Partitioning.Op == ddl.PartitionsRemove || ef.Partitioning.Op == ddl.PartitionsLike {
			next := m.changed(prev, ef.Partitioning)
			m.setLookup(t, next)
			return next.why
		}
	}
	return ""
}

// changed is a layout after a partitioning change.
func (m *partitionLayouts) changed(prev layoutOf, pc *ddl.PartitionChange) layoutOf {
	bad := func(why string) layoutOf { return layoutOf{why: why} }
	if pc.Inexact != "" {
		return bad("binlog2ch does not read the new layout exactly from the statement: " + pc.Inexact)
	}
	parts := func(defs []ddl.PartitionDef) []catalog.Partition {
		var out []catalog.Partition
		for _, d := range defs {
			out = append(out, catalog.Partition{Name: d.Name, Desc: d.Desc})
		}
		return out
	}
	switch pc.Op {
	case ddl.PartitionsDefine:
		return layoutOf{parts: &catalog.Partitions{Method: pc.Layout.Method, Expr: pc.Layout.Expr, Parts: parts(pc.Layout.Parts)}}
	case ddl.PartitionsRemove:
		return layoutOf{}
	case ddl.PartitionsLike:
		lo := m.lookup(pc.Like)
		if lo.why != "" {
			return bad("CREATE TABLE ... LIKE " + pc.Like.String() + ", whose layout is not known: " + lo.why)
		}
		return layoutOf{parts: lo.parts.Clone()}
	}
	if prev.why != "" || prev.parts == nil {
		return bad("a change of the partitions of a table whose layout binlog2ch does not hold")
	}
	p := prev.parts.Clone()
	hash := strings.Contains(p.Method, "HASH") || strings.Contains(p.Method, "KEY")
	switch pc.Op {
	case ddl.PartitionsAdd:
		if hash && len(pc.Layout.Parts) == 0 {
			for range pc.Count {
				p.Parts = append(p.Parts, catalog.Partition{Name: "p" + strconv.Itoa(len(p.Parts))})
			}
			return layoutOf{parts: p}
		}
		p.Parts = append(p.Parts, parts(pc.Layout.Parts)...)
		return layoutOf{parts: p}
	case ddl.PartitionsCoalesce:
		p.Parts = p.Parts[:max(1, len(p.Parts)-pc.Count)]
		return layoutOf{parts: p}
	case ddl.PartitionsReorganize:
		if len(pc.Names) == 0 {
			return layoutOf{parts: p} // a HASH table's partitions rebuilt
		}
		first := -1
		var kept []catalog.Partition
		for _, part := range p.Parts {
			if slices.ContainsFunc(pc.Names, func(n string) bool { return strings.EqualFold(n, part.Name) }) {
				if first < 0 {
					first = len(kept)
				}
				continue
			}
			kept = append(kept, part)
		}
		if first < 0 || len(kept) != len(p.Parts)-len(pc.Names) {
			return bad("REORGANIZE PARTITION of partitions binlog2ch does not know")
		}
		p.Parts = slices.Concat(kept[:first], parts(pc.Layout.Parts), kept[first:])
		return layoutOf{parts: p}
	}
	return bad("a partitioning change binlog2ch does not follow")
}

// LayoutsOf is the checkpoint's partition state when all, information_schema's
// layouts read at a position nothing was written during the read, are
// those of that position (a copy's, read before it starts): every table
// sel selects is known.
func LayoutsOf(all map[schema.TableName]*catalog.Partitions, sel *config.TablesConfig) *state.PartitionState {
	m := &partitionLayouts{}
	m.resolved(all)
	return m.state(func(t schema.TableName) bool { return sel.Selects(t.Database, t.Table) }, sel)
}
