// Package partitioning follows MySQL tables' partition layouts through
// the binlog: as of the position read, from the checkpoint's or
// information_schema's, changed by each statement's partition DDL, and
// saved with the checkpoint. A layout it holds is exact for its position;
// it never guesses one (a table whose layout a statement does not tell
// exactly is marked not known, with why), and it reads no server.
package partitioning

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

// Layouts are the tables' partition layouts as of the binlog
// position read: a layout held is exact for that position, never a guess.
// It belongs to the stream's goroutine.
type Layouts struct {
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
	// Before are the tables of the statement being acted on, as they
	// were before it (the router's, as it acts).
	Before map[schema.TableName]Layout
	Tried  time.Time // the router's last read of information_schema
}

type layoutChange struct {
	at     source.Position
	before *state.PartitionState
}

// Restore starts from the checkpoint's layouts: those of its
// position. A table they do not hold is not known.
func Restore(from *state.Checkpoint) *Layouts {
	m := &Layouts{known: map[schema.TableName]*catalog.Partitions{}, unknown: map[schema.TableName]string{}, uncovered: notKept(from)}
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

func (m *Layouts) covered(t schema.TableName) bool {
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

// Complete reports whether every table's layout is known.
func (m *Layouts) Complete() bool { return m.all && len(m.unknown) == 0 }

// Lookup is t's layout as of the position read.
func (m *Layouts) Lookup(t schema.TableName) Layout {
	if p, ok := m.known[t]; ok {
		return Layout{Parts: p}
	}
	if why, ok := m.unknown[t]; ok {
		return Layout{Why: why}
	}
	if why, ok := m.unknown[schema.TableName{Table: strings.ToLower(t.Table)}]; ok {
		return Layout{Why: why}
	}
	if m.covered(t) {
		return Layout{}
	}
	return Layout{Why: m.uncovered}
}

func (m *Layouts) set(t schema.TableName, p *catalog.Partitions) {
	delete(m.unknown, t)
	m.known[t] = p
}

func (m *Layouts) setUnknown(t schema.TableName, why string) {
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

func (m *Layouts) setLookup(t schema.TableName, lo Layout) {
	if lo.Why != "" {
		m.setUnknown(t, lo.Why)
	} else {
		m.set(t, lo.Parts.Clone())
	}
}

// Resolved takes information_schema's layouts as those of the position.
func (m *Layouts) Resolved(all map[schema.TableName]*catalog.Partitions) {
	m.known, m.unknown, m.all, m.covers = all, map[schema.TableName]string{}, true, nil
}

// Record keeps the state of before a change at at, for the checkpoints
// before it.
func (m *Layouts) Record(at source.Position, keep func(schema.TableName) bool, sel *config.TablesConfig) {
	m.changes = append(m.changes, layoutChange{at: at, before: m.state(keep, sel)})
	m.saved = nil
}

// At is the state as of a checkpoint position: before the first change
// after it. Changes it has passed are forgotten.
func (m *Layouts) At(p source.Position, keep func(schema.TableName) bool, sel *config.TablesConfig) *state.PartitionState {
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
func (m *Layouts) state(keep func(schema.TableName) bool, sel *config.TablesConfig) *state.PartitionState {
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

// FollowStatement applies a statement's effects to the layouts, and
// marks unknown the tables whose new layout it does not tell exactly
// (unparsed: those a statement the parser could not read may change). It
// returns those, with why.
func (m *Layouts) FollowStatement(st source.Statement, unparsed []schema.TableName) map[schema.TableName]string {
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
func (m *Layouts) follow(effects []ddl.Effect, i int) string {
	ef, rest := effects[i], effects[i+1:]
	t := ef.Table
	switch ef.Kind {
	case ddl.Create:
		next := Layout{} // not partitioned, unless its Partitioning effect says
		for _, e := range rest {
			if e.Kind == ddl.Partitioning && e.Table == t {
				next = m.changed(m.Lookup(t), e.Partitioning)
			}
		}
		if ef.IfNotExists {
			// The table may have been there, unchanged.
			if now := m.Lookup(t); now.Why != "" || next.Why != "" || !now.Parts.Equal(next.Parts) {
				return "CREATE TABLE IF NOT EXISTS, of a table that may have been there with another layout"
			}
		}
		m.setLookup(t, next)
		return next.Why
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
		lo := m.Lookup(t)
		m.set(t, nil)
		m.setLookup(ef.NewTable, lo)
	case ddl.PartitionRows:
		if ef.PartitionOp != "DROP" {
			return "" // TRUNCATE and EXCHANGE keep the definitions
		}
		lo := m.Lookup(t)
		if lo.Why == "" && lo.Parts != nil {
			p := lo.Parts.Clone()
			p.Drop(ef.Partitions)
			m.set(t, p)
		}
	case ddl.Partitioning:
		for _, e := range effects[:i] {
			if e.Kind == ddl.Create && e.Table == t {
				return "" // a CREATE TABLE's: its Create took it
			}
		}
		if prev := m.Lookup(t); prev.Why == "" || ef.Partitioning.Op == ddl.PartitionsDefine || ef.Partitioning.Op == ddl.PartitionsRemove || ef.Partitioning.Op == ddl.PartitionsLike {
			next := m.changed(prev, ef.Partitioning)
			m.setLookup(t, next)
			return next.Why
		}
	}
	return ""
}

// changed is a layout after a partitioning change.
func (m *Layouts) changed(prev Layout, pc *ddl.PartitionChange) Layout {
	bad := func(why string) Layout { return Layout{Why: why} }
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
		return Layout{Parts: &catalog.Partitions{Method: pc.Layout.Method, Expr: pc.Layout.Expr, Parts: parts(pc.Layout.Parts)}}
	case ddl.PartitionsRemove:
		return Layout{}
	case ddl.PartitionsLike:
		lo := m.Lookup(pc.Like)
		if lo.Why != "" {
			return bad("CREATE TABLE ... LIKE " + pc.Like.String() + ", whose layout is not known: " + lo.Why)
		}
		return Layout{Parts: lo.Parts.Clone()}
	}
	if prev.Why != "" || prev.Parts == nil {
		return bad("a change of the partitions of a table whose layout binlog2ch does not hold")
	}
	p := prev.Parts.Clone()
	hash := strings.Contains(p.Method, "HASH") || strings.Contains(p.Method, "KEY")
	switch pc.Op {
	case ddl.PartitionsAdd:
		if hash && len(pc.Layout.Parts) == 0 {
			for range pc.Count {
				p.Parts = append(p.Parts, catalog.Partition{Name: "p" + strconv.Itoa(len(p.Parts))})
			}
			return Layout{Parts: p}
		}
		p.Parts = append(p.Parts, parts(pc.Layout.Parts)...)
		return Layout{Parts: p}
	case ddl.PartitionsCoalesce:
		p.Parts = p.Parts[:max(1, len(p.Parts)-pc.Count)]
		return Layout{Parts: p}
	case ddl.PartitionsReorganize:
		if len(pc.Names) == 0 {
			return Layout{Parts: p} // a HASH table's partitions rebuilt
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
		return Layout{Parts: p}
	}
	return bad("a partitioning change binlog2ch does not follow")
}

// Of is the checkpoint's partition state when all, information_schema's
// layouts read at a position nothing was written during the read, are
// those of that position (a copy's, read before it starts): every table
// sel selects is known.
func Of(all map[schema.TableName]*catalog.Partitions, sel *config.TablesConfig) *state.PartitionState {
	m := &Layouts{}
	m.Resolved(all)
	return m.state(func(t schema.TableName) bool { return sel.Selects(t.Database, t.Table) }, sel)
}

// Layout is one table's layout: parts (nil: not partitioned), or why it
// is not known.
type Layout struct {
	Parts *catalog.Partitions
	Why   string
}

// notKept is why a table's layout is not known when the checkpoint did
// not keep it.
func notKept(from *state.Checkpoint) string {
	if from == nil || from.Partitions == nil {
		return "the checkpoint binlog2ch started from keeps no partition layouts (saved without on_partition_maintenance: apply, by an older binlog2ch, or by a snapshot or fullsync while the server kept writing to its binlog), and binlog2ch has not been caught up with the server since"
	}
	return "the table was not replicated at the checkpoint's position, so the checkpoint does not keep its layout, and binlog2ch has not been caught up with the server since"
}

// MoveOnly returns why a REORGANIZE or COALESCE may have left a row
// without a partition ("": it cannot have).
func MoveOnly(ef ddl.Effect, before, after Layout) string {
	switch {
	case before.Why != "":
		return "the table's partition layout before it is not known (" + before.Why + ")"
	case before.Parts == nil:
		return "the table was not partitioned as binlog2ch followed its DDL"
	case after.Why != "":
		return "its new partition layout is not known (" + after.Why + ")"
	}
	var names []string
	if ef.PartitionOp == "REORGANIZE" {
		names = ef.Partitions
	}
	return before.Parts.KeepsRows(names, after.Parts)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
