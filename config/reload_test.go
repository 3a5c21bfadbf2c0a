package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(text), "/etc/binlog2ch.yaml", env(map[string]string{"MYSQL_PASSWORD": "p$ss"}))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return cfg
}

// TestCheckReload: the table selection may change; every other key is
// refused by its YAML path, with the restart it needs.
func TestCheckReload(t *testing.T) {
	old := mustParse(t, validConfig)
	if err := CheckReload(old, mustParse(t, validConfig)); err != nil {
		t.Errorf("same file: %v", err)
	}
	if k := ChangedKeys(old, mustParse(t, validConfig)); len(k) != 0 {
		t.Errorf("same file: changed %v", k)
	}
	tables := strings.Replace(validConfig, `include: ["shop.*"]`, `include: ["shop.*", "crm.*"]`, 1)
	tables = strings.Replace(tables, `exclude: ["shop.tmp_*"]`, `exclude: []`, 1)
	if err := CheckReload(old, mustParse(t, tables)); err != nil {
		t.Errorf("tables changed: %v", err)
	}
	if k := ChangedKeys(old, mustParse(t, tables)); !slices.Equal(k, []string{"tables.include", "tables.exclude"}) {
		t.Errorf("tables changed: %v", k)
	}

	for _, c := range []struct {
		name, from, to string
		want           []string
	}{
		{"batch", "metrics:", "batch: {max_rows: 10}\nmetrics:", []string{"batch.max_rows"}},
		{"nested and map", "database_map: {shop: shop_replica}", "database_map: {shop: other, crm: crm}\n  tls: {enabled: true}",
			[]string{"clickhouse.database_map.crm", "clickhouse.database_map.shop", "clickhouse.tls.enabled"}},
		{"list and scalar", `addr: ["127.0.0.1:9000"]`, `addr: ["127.0.0.1:9000", "127.0.0.2:9000"]`, []string{"clickhouse.addr"}},
		{"state_dir", `state_dir: "/var/lib/binlog2ch"`, `state_dir: "/var/lib/other"`, []string{"state_dir"}},
		{"override beside tables", `exclude: ["shop.tmp_*"]`, "exclude: [\"shop.tmp_*\", \"shop.x\"]\n  overrides: {shop.orders: {engine: MergeTree}}",
			[]string{"tables.overrides.shop.orders"}},
	} {
		newCfg := mustParse(t, strings.Replace(validConfig, c.from, c.to, 1))
		err := CheckReload(old, newCfg)
		if err == nil {
			t.Errorf("%s: allowed", c.name)
			continue
		}
		for _, k := range c.want {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("%s: error does not name %s: %v", c.name, k, err)
			}
		}
		if !strings.Contains(err.Error(), "restart") || strings.Contains(err.Error(), "tables.exclude changed") {
			t.Errorf("%s: %v", c.name, err)
		}
		got := slices.DeleteFunc(ChangedKeys(old, newCfg), func(k string) bool { return k == "tables.exclude" })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: changed %v, want %v", c.name, got, c.want)
		}
	}

	// A changed override's own key is named, down to the field.
	withOverride := strings.Replace(validConfig, `exclude: ["shop.tmp_*"]`, "exclude: [\"shop.tmp_*\"]\n  overrides: {shop.orders: {engine: MergeTree}}", 1)
	changedOverride := strings.Replace(withOverride, "engine: MergeTree", "engine: ReplacingMergeTree", 1)
	if k := ChangedKeys(mustParse(t, withOverride), mustParse(t, changedOverride)); !slices.Equal(k, []string{"tables.overrides.shop.orders.engine"}) {
		t.Errorf("override changed: %v", k)
	}
}

// TestCheckReloadPasswordFile: a password file whose contents changed is
// named as the file, and the password never shows.
func TestCheckReloadPasswordFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("first-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(validConfig, `password: "${MYSQL_PASSWORD}"`, "password_file: "+pw, 1)
	old := mustParse(t, text)
	if err := os.WriteFile(pw, []byte("second-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := CheckReload(old, mustParse(t, text))
	if err == nil || !strings.Contains(err.Error(), "mysql.password_file (the password in it)") {
		t.Fatalf("changed password file: %v", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
}
