package config

import (
	"strings"
	"testing"
)

func TestCompression(t *testing.T) {
	environ := env(map[string]string{"MYSQL_PASSWORD": "pw"})
	cfg, err := Parse([]byte(validConfig), "binlog2ch.yaml", environ)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClickHouse.Compression != CompressionAuto {
		t.Errorf("default clickhouse.compression = %q, want %q", cfg.ClickHouse.Compression, CompressionAuto)
	}
	with := func(v string) string {
		return strings.Replace(validConfig, "  database_map:", "  compression: "+v+"\n  database_map:", 1)
	}
	for _, v := range []string{CompressionAuto, CompressionLZ4, CompressionZSTD, CompressionNone, CompressionLZ4Adaptive} {
		cfg, err := Parse([]byte(with(v)), "binlog2ch.yaml", environ)
		if err != nil {
			t.Fatalf("compression: %s: %v", v, err)
		}
		if cfg.ClickHouse.Compression != v {
			t.Errorf("compression: %s read as %q", v, cfg.ClickHouse.Compression)
		}
	}
	for _, v := range []string{"LZ4", "gzip", `""`, "off"} {
		_, err := Parse([]byte(with(v)), "binlog2ch.yaml", environ)
		want := `config: clickhouse.compression: want auto, lz4, zstd, none or lz4-adaptive, got `
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(binlog2ch.yaml:11)") {
			t.Errorf("compression: %s: got %v, want %q with the file and line", v, err, want)
		}
	}
	// A running daemon keeps its connections' compression: a reload
	// refuses the change.
	old, _ := Parse([]byte(validConfig), "binlog2ch.yaml", environ)
	changed, _ := Parse([]byte(with("none")), "binlog2ch.yaml", environ)
	if err := CheckReload(old, changed); err == nil || !strings.Contains(err.Error(), "clickhouse.compression") {
		t.Errorf("reload changing clickhouse.compression: %v", err)
	}
}
