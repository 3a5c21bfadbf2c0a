package chtables

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRegistry: tables and columns recorded, dropped columns forgotten,
// renames followed, tables dropped forgotten; what is saved loads back;
// a corrupt file is an error that says what the file is for.
func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	r, err := LoadRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.columns("d", "t"); ok {
		t.Fatal("an empty registry lists d.t")
	}
	steps := []func() error{
		func() error { return r.Record("d", "t", []string{"id", "v", "_version"}, nil, false) },
		func() error { return r.Record("d", "t", []string{"id", "w", "_version"}, []string{"v"}, false) },
		func() error { return r.Rename("d", "t", "t", map[string]string{"w": "w2"}) },
		func() error { return r.Record("d", "gone", []string{"id"}, nil, false) },
		func() error { return r.Forget("d", "gone") },
		func() error { return r.Rename("d", "t", "t2", nil) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	again, err := LoadRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, reg := range []*Registry{r, again} {
		cols, ok := reg.columns("d", "t2")
		if !ok || !slices.Equal(cols, []string{"_version", "id", "w2"}) {
			t.Errorf("d.t2 lists %v (%v); want _version, id, w2", cols, ok)
		}
		for _, gone := range []string{"t", "gone"} {
			if _, ok := reg.columns("d", gone); ok {
				t.Errorf("d.%s still listed", gone)
			}
		}
	}
	if err := r.Record("d", "t2", []string{"id"}, nil, true); err != nil {
		t.Fatal(err)
	}
	if cols, _ := r.columns("d", "t2"); !slices.Equal(cols, []string{"id"}) {
		t.Errorf("replaced: %v", cols)
	}
	var nilReg *Registry
	if err := nilReg.Record("d", "t", []string{"id"}, nil, false); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRegistry(dir); err == nil || !strings.Contains(err.Error(), "ClickHouse tables binlog2ch created") {
		t.Errorf("a corrupt registry: %v", err)
	}
}
