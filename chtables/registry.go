package chtables

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/binlog2ch/binlog2ch/state"
)

// RegistryFile is, in state_dir, the ClickHouse tables binlog2ch created
// and the columns it put in them. A table or column it lists that
// ClickHouse lacks was dropped outside binlog2ch: recreating it would hold
// only the rows changed since, so the writer stops instead (see
// TargetChangedError). One that it does not list is new and is created.
const RegistryFile = "tables.json"

// Registry is the RegistryFile's content, shared by the writers.
type Registry struct {
	mu     sync.Mutex
	dir    string
	tables map[string][]string // "db.table" in ClickHouse -> columns, sorted
}

// LoadRegistry reads the registry in dir (empty when there is none).
func LoadRegistry(dir string) (*Registry, error) {
	r := &Registry{dir: dir, tables: map[string][]string{}}
	var file struct {
		Tables map[string][]string `json:"tables"`
	}
	found, err := state.ReadFile(dir, RegistryFile, &file)
	if err != nil {
		return nil, fmt.Errorf("%w; it lists the ClickHouse tables binlog2ch created. Restore it, or delete it: binlog2ch then creates missing tables again without telling whether they were dropped by hand", err)
	}
	if found && file.Tables != nil {
		r.tables = file.Tables
	}
	return r, nil
}

func key(db, table string) string { return db + "." + table }

// columns lists what binlog2ch put in a table; ok is false for a table it
// did not create (or that it dropped since).
func (r *Registry) columns(db, table string) (cols []string, ok bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cols, ok = r.tables[key(db, table)]
	return cols, ok
}

// Record notes a table's columns after binlog2ch made them so: the ones it
// has, less dropped ones. replace forgets earlier columns (a table copied
// from scratch).
func (r *Registry) Record(db, table string, cols, dropped []string, replace bool) error {
	return r.recordAll([]registryEntry{{db: db, table: table, cols: cols, dropped: dropped, replace: replace}})
}

// registryEntry is one table's record.
type registryEntry struct {
	db, table     string
	cols, dropped []string
	replace       bool
}

// recordAll records entries and saves the file once, if any changed.
func (r *Registry) recordAll(entries []registryEntry) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, e := range entries {
		k := key(e.db, e.table)
		var next []string
		if !e.replace {
			next = append(next, r.tables[k]...)
		}
		for _, c := range e.cols {
			if !slices.Contains(next, c) {
				next = append(next, c)
			}
		}
		next = slices.DeleteFunc(next, func(c string) bool { return slices.Contains(e.dropped, c) })
		sort.Strings(next)
		if old, ok := r.tables[k]; ok && slices.Equal(old, next) {
			continue
		}
		r.tables[k] = next
		changed = true
	}
	if !changed {
		return nil
	}
	return r.save()
}

// Forget drops a table binlog2ch dropped.
func (r *Registry) Forget(db, table string) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tables[key(db, table)]; !ok {
		return nil
	}
	delete(r.tables, key(db, table))
	return r.save()
}

// Swapped records a shadow table swapped in for table: the shadow and
// the mark of the swap (table's old name) are forgotten and table lists
// cols, its columns now, in one save (a stop between two saves left the
// shadow listed and table's old columns). It reports whether the
// registry listed the shadow.
func (r *Registry) Swapped(db, shadow, table string, cols []string) (bool, error) {
	if r == nil {
		return false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, listed := r.tables[key(db, shadow)]
	delete(r.tables, key(db, shadow))
	delete(r.tables, key(db, oldName(table)))
	r.tables[key(db, table)] = slices.Sorted(slices.Values(cols))
	return listed, r.save()
}

// Rename follows a table or column rename binlog2ch applied.
func (r *Registry) Rename(db, from, to string, columns map[string]string) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cols, ok := r.tables[key(db, from)]
	if !ok {
		return nil
	}
	next := make([]string, 0, len(cols))
	for _, c := range cols {
		if n, ok := columns[c]; ok {
			c = n
		}
		next = append(next, c)
	}
	sort.Strings(next)
	delete(r.tables, key(db, from))
	r.tables[key(db, to)] = next
	return r.save()
}

func (r *Registry) save() error {
	data, err := json.MarshalIndent(struct {
		Tables map[string][]string `json:"tables"`
	}{r.tables}, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteFile(r.dir, RegistryFile, append(data, '\n'))
}

// ForgetName drops table from the registry (binlog2ch dropped it).
func (c *Manager) ForgetName(db, table string) error { return c.reg.Forget(db, table) }

// Registered lists the tables of ClickHouse database db that binlog2ch
// created and has not dropped.
func (c *Manager) Registered(db string) []string { return c.reg.Registered(db) }

// Registered lists the tables of ClickHouse database db in the registry.
func (r *Registry) Registered(db string) []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.tables {
		if d, t, ok := strings.Cut(k, "."); ok && d == db {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}
