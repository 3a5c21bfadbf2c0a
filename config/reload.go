package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// What a reload (SIGHUP) may change while the daemon runs. The log level
// is a command-line flag (-log-level), not a key of the file, so a reload
// cannot change it.
var reloadable = []string{"tables.include", "tables.exclude"}

// CheckReload reports whether a running daemon started with old may take
// new in its place: only the table selection may differ. Any other change
// is an error naming each key and saying a restart applies it.
func CheckReload(old, new *Config) error {
	var refused []string
	for _, k := range ChangedKeys(old, new) {
		if !slices.Contains(reloadable, k) {
			refused = append(refused, k)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("config reload refused: %s changed, and a running binlog2ch cannot change %s: restart it (systemctl restart binlog2ch) to apply %s, or undo %s in the file. A reload may change only %s",
		strings.Join(refused, ", "), plural(refused, "it", "them"), plural(refused, "it", "them"), plural(refused, "the change", "the changes"), strings.Join(reloadable, " and "))
}

func plural(s []string, one, many string) string {
	if len(s) == 1 {
		return one
	}
	return many
}

// ChangedKeys are the YAML key paths whose values differ between old and
// new (e.g. batch.max_rows, tables.overrides.shop.orders.engine), in the
// order of the file's model. A list counts as one key.
func ChangedKeys(old, new *Config) []string {
	var keys []string
	diffValues(reflect.ValueOf(*old), reflect.ValueOf(*new), "", &keys)
	for i, k := range keys {
		// The password read from password_file: the file's contents
		// changed, not a key.
		for _, s := range []struct {
			section string
			file    string
		}{{"mysql", new.MySQL.PasswordFile}, {"clickhouse", new.ClickHouse.PasswordFile}} {
			if k == s.section+".password" && s.file != "" {
				keys[i] = s.section + ".password_file (the password in it)"
			}
		}
	}
	return keys
}

func diffValues(a, b reflect.Value, key string, keys *[]string) {
	switch a.Kind() {
	case reflect.Struct:
		t := a.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			// Unexported fields are derived from the exported ones (the
			// parsed schema options).
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if key != "" {
				name = key + "." + name
			}
			diffValues(a.Field(i), b.Field(i), name, keys)
		}
	case reflect.Map:
		seen := map[string]bool{}
		var names []string
		for _, m := range []reflect.Value{a, b} {
			for _, k := range m.MapKeys() {
				if s := fmt.Sprint(k.Interface()); !seen[s] {
					seen[s] = true
					names = append(names, s)
				}
			}
		}
		slices.Sort(names)
		for _, n := range names {
			k := reflect.ValueOf(n).Convert(a.Type().Key())
			va, vb := a.MapIndex(k), b.MapIndex(k)
			switch {
			case !va.IsValid() || !vb.IsValid():
				*keys = append(*keys, key+"."+n) // added or removed
			default:
				diffValues(va, vb, key+"."+n, keys)
			}
		}
	case reflect.Slice:
		// An absent list and an empty one are the same setting.
		if (a.Len() != 0 || b.Len() != 0) && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*keys = append(*keys, key)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*keys = append(*keys, key)
		}
	}
}
