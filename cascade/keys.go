package cascade

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Foreign keys, for the cascades InnoDB applies without row events (see
// docs/replication.md, "Foreign-key cascades"). The model is loaded from
// information_schema at start, or from the checkpoint, which keeps it as of
// its position, and then follows the DDL read from the binlog, in binlog
// order: a replay of old events sees the keys as they were when the events
// were written, not as they are now.

// Keys is the foreign keys of the source's tables at one point of
// the binlog, by child table. It belongs to the stream's goroutine.
type Keys struct {
	byChild map[schema.TableName][]*ddl.ForeignKey
	// Tracked are the child tables whose keys the model holds for certain
	// (see KeyState); others come from information_schema at start.
	tracked map[schema.TableName]bool
	// InlineReferences: the server makes a column's REFERENCES a key
	// (MariaDB; MySQL from 9.0), as a FOREIGN KEY clause.
	InlineReferences bool
	// IndexNamesKeys: a FOREIGN KEY clause's index name names the key when
	// no CONSTRAINT symbol does (MariaDB; MySQL before 8.0.16).
	IndexNamesKeys bool
}

// NewKeys returns an empty model.
func NewKeys() *Keys {
	return &Keys{byChild: map[schema.TableName][]*ddl.ForeignKey{}, tracked: map[schema.TableName]bool{}}
}

// Add adds a key (replacing one of the same name on the same table).
func (m *Keys) Add(k ddl.ForeignKey) {
	keys := m.byChild[k.Child]
	keys = slices.DeleteFunc(keys, func(x *ddl.ForeignKey) bool { return strings.EqualFold(x.Name, k.Name) })
	m.byChild[k.Child] = append(keys, k.Clone())
	m.tracked[k.Child] = true
}

// Of returns the keys of a child table.
func (m *Keys) Of(child schema.TableName) []*ddl.ForeignKey { return m.byChild[child] }

// Referencing returns the keys whose parent is the table, in a stable
// order (child, then name).
func (m *Keys) Referencing(parent schema.TableName) []*ddl.ForeignKey {
	var out []*ddl.ForeignKey
	for _, keys := range m.byChild {
		for _, k := range keys {
			if k.Parent == parent {
				out = append(out, k)
			}
		}
	}
	sortKeys(out)
	return out
}

// All returns every key, sorted by child and name.
func (m *Keys) All() []*ddl.ForeignKey {
	var out []*ddl.ForeignKey
	for _, keys := range m.byChild {
		out = append(out, keys...)
	}
	sortKeys(out)
	return out
}

func sortKeys(keys []*ddl.ForeignKey) {
	slices.SortFunc(keys, func(a, b *ddl.ForeignKey) int {
		if c := strings.Compare(a.Child.String(), b.Child.String()); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Clone returns a copy the caller may keep while the model changes.
func (m *Keys) Clone() *Keys {
	c := NewKeys()
	c.InlineReferences, c.IndexNamesKeys = m.InlineReferences, m.IndexNamesKeys
	for t, keys := range m.byChild {
		for _, k := range keys {
			c.byChild[t] = append(c.byChild[t], k.Clone())
		}
	}
	for t := range m.tracked {
		c.tracked[t] = true
	}
	return c
}

// KeyState is the model as the checkpoint keeps it: the keys of the
// Tracked child tables, exactly as of the checkpoint's position.
type KeyState struct {
	Tracked []schema.TableName `json:"tracked"`
	Keys    []ddl.ForeignKey   `json:"keys,omitempty"`
	// CopyEnd is the version of the binlog position where the initial
	// snapshot's copy ended (0: none, or saved before it was kept): an
	// ON UPDATE CASCADE below it ran while the copy read its children,
	// which a restart must know as well as the run that copied.
	CopyEnd uint64 `json:"copy_end_version,omitempty"`
	// CopyWindows are the tables a `fullsync` without -checkpoint copied
	// while run's checkpoint stayed behind its position, each with the
	// versions of its copy's window: an ON UPDATE CASCADE into one of
	// them from inside its window is refused as CopyEnd's are (those
	// before the window lose to the copy's rows by their versions).
	CopyWindows []CopyWindow `json:"copy_windows,omitempty"`
}

// CopyWindow is a table's copy window: from the version of the copy's
// position (its rows') up to that of the position where it had read them
// all.
type CopyWindow struct {
	Table    schema.TableName `json:"table"`
	From, To uint64
}

// WithWindow is ws with w in place of any window of its table.
func WithWindow(ws []CopyWindow, w CopyWindow) []CopyWindow {
	out := []CopyWindow{w}
	for _, x := range ws {
		if x.Table != w.Table {
			out = append(out, x)
		}
	}
	return out
}

// State returns what the checkpoint keeps of the model: the keys of the
// tables that keep replicates (a key with a replicated child or parent)
// and those tables, so a start from the checkpoint knows they had no other
// keys then.
func (m *Keys) State(keep func(schema.TableName) bool) *KeyState {
	st := &KeyState{}
	tracked := map[schema.TableName]bool{}
	for _, k := range m.All() {
		if keep(k.Child) || keep(k.Parent) {
			st.Keys = append(st.Keys, *k.Clone())
			tracked[k.Child] = true
		}
	}
	for t := range m.tracked {
		if keep(t) {
			tracked[t] = true
		}
	}
	for t := range tracked {
		st.Tracked = append(st.Tracked, t)
	}
	slices.SortFunc(st.Tracked, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	return st
}

// Restore puts a checkpoint's keys over the model: the tracked tables'
// keys replace those read from information_schema (which are the keys of
// now, perhaps after DDL the binlog from the checkpoint on will replay).
func (m *Keys) Restore(st *KeyState) {
	if st == nil {
		return
	}
	for _, t := range st.Tracked {
		delete(m.byChild, t)
		m.tracked[t] = true
	}
	for _, k := range st.Keys {
		m.byChild[k.Child] = append(m.byChild[k.Child], k.Clone())
	}
}

// Track marks tables whose keys the model now holds for certain (they
// were read from information_schema, or have none).
func (m *Keys) Track(tables ...schema.TableName) {
	for _, t := range tables {
		m.tracked[t] = true
	}
}

// Equal reports whether two models hold the same keys.
func (m *Keys) Equal(o *Keys) bool {
	a, b := m.All(), o.All()
	return slices.EqualFunc(a, b, func(x, y *ddl.ForeignKey) bool {
		return x.Name == y.Name && x.Child == y.Child && x.Parent == y.Parent && slices.Equal(x.Columns, y.Columns) &&
			slices.Equal(x.RefColumns, y.RefColumns) && x.OnDelete == y.OnDelete && x.OnUpdate == y.OnUpdate
	})
}

// LoadKeys reads every foreign key of the server's tables (the
// system databases' aside) from information_schema. Every table is
// tracked, those without keys too: the checkpoint then records that they
// had none, which a key added since must not change for a replay.
func LoadKeys(ctx context.Context, db *sql.DB) (*Keys, error) {
	keys, tables, err := catalog.ForeignKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	m := NewKeys()
	for _, t := range tables {
		m.tracked[t] = true
	}
	for i := range keys {
		k := &keys[i]
		m.byChild[k.Child] = append(m.byChild[k.Child], k)
		m.tracked[k.Child] = true
	}
	return m, nil
}

// ApplyDDL follows one statement's effects on tables and their keys, in
// binlog order; it reports whether the keys changed. dropped names keys a
// DROP FOREIGN KEY named that the model does not know (their table's keys
// may have been named otherwise by the server).
func (m *Keys) ApplyDDL(effects []ddl.Effect) (changed bool, unknown []string) {
	for _, ef := range effects {
		switch ef.Kind {
		case ddl.Create:
			if ef.IfNotExists && m.tracked[ef.Table] {
				continue // the table was there: CREATE ... IF NOT EXISTS changed nothing
			}
			if len(m.byChild[ef.Table]) > 0 || len(ef.ForeignKeys) > 0 {
				changed = true
			}
			delete(m.byChild, ef.Table)
			m.tracked[ef.Table] = true
			m.addNamed(ef.Table, ef.ForeignKeys)
		case ddl.Drop:
			// Keys referencing the dropped table stay: InnoDB keeps them
			// (foreign_key_checks=0 allows the drop), and they work again
			// when a table of that name is created.
			if len(m.byChild[ef.Table]) > 0 {
				changed = true
			}
			delete(m.byChild, ef.Table)
			m.tracked[ef.Table] = true
		case ddl.RenameTable:
			changed = m.renameTable(ef.Table, ef.NewTable) || changed
		case ddl.RenameColumns:
			changed = m.renameColumns(ef.Table, ef.Renames) || changed
		case ddl.ForeignKeys:
			for _, name := range ef.DropForeignKeys {
				keys := m.byChild[ef.Table]
				n := len(keys)
				keys = slices.DeleteFunc(keys, func(k *ddl.ForeignKey) bool { return strings.EqualFold(k.Name, name) })
				if len(keys) == n {
					unknown = append(unknown, name)
				}
				m.byChild[ef.Table] = keys
				changed = true
			}
			if len(ef.ForeignKeys) > 0 {
				m.addNamed(ef.Table, ef.ForeignKeys)
				changed = true
			}
		}
	}
	return changed, unknown
}

// addNamed adds keys, naming those declared without a name as InnoDB does:
// table_ibfk_N, N one past the highest such number the table has.
func (m *Keys) addNamed(t schema.TableName, keys []ddl.ForeignKey) {
	next := 1
	prefix := strings.ToLower(t.Table) + "_ibfk_"
	for _, k := range m.byChild[t] {
		if rest, ok := strings.CutPrefix(strings.ToLower(k.Name), prefix); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	for _, k := range keys {
		if k.Inline && !m.InlineReferences {
			continue
		}
		k.Child = t
		if k.IndexName && !m.IndexNamesKeys {
			k.Name = ""
		}
		if k.Parent.Database == "" {
			k.Parent.Database = t.Database
		}
		if k.Name == "" {
			k.Name = t.Table + "_ibfk_" + strconv.Itoa(next)
			next++
		}
		k.Inline, k.IndexName = false, false // how it was declared, not what it is
		m.byChild[t] = append(m.byChild[t], k.Clone())
	}
	m.tracked[t] = true
}

// renameTable moves a table's keys to its new name, renaming the names
// InnoDB generated (t_ibfk_N becomes new_ibfk_N), and points the keys that
// referenced it at the new name, as InnoDB does.
func (m *Keys) renameTable(from, to schema.TableName) bool {
	changed := false
	if keys, ok := m.byChild[from]; ok {
		delete(m.byChild, from)
		prefix := strings.ToLower(from.Table) + "_ibfk_"
		for _, k := range keys {
			k.Child = to
			if rest, ok := strings.CutPrefix(strings.ToLower(k.Name), prefix); ok {
				k.Name = to.Table + "_ibfk_" + rest
			}
		}
		m.byChild[to] = keys
		changed = changed || len(keys) > 0
	}
	if m.tracked[from] {
		delete(m.tracked, from)
		m.tracked[to] = true
	}
	for _, keys := range m.byChild {
		for _, k := range keys {
			if k.Parent == from {
				k.Parent = to
				changed = true
			}
		}
	}
	return changed
}

// renameColumns follows RENAME COLUMN and CHANGE COLUMN in the keys of the
// table and in the keys that reference it.
func (m *Keys) renameColumns(t schema.TableName, renames map[string]string) bool {
	changed := false
	rename := func(cols []string) {
		for i, c := range cols {
			for from, to := range renames {
				if strings.EqualFold(c, from) {
					cols[i] = to
					changed = true
				}
			}
		}
	}
	for _, k := range m.byChild[t] {
		rename(k.Columns)
	}
	for _, keys := range m.byChild {
		for _, k := range keys {
			if k.Parent == t {
				rename(k.RefColumns)
			}
		}
	}
	return changed
}
