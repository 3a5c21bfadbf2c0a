package liblog

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// logLines decodes JSON log lines.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestLibRulesLevels(t *testing.T) {
	for _, c := range []struct {
		name  string
		rules libRules
		level slog.Level
		msg   string
		want  slog.Level
	}{
		{"clickhouse-go", clickHouseRules, slog.LevelWarn, "unsupported clickhouse version", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelWarn, "server exception received", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelError, "send data failed: connection closed", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelError, "send data failed", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelError, "read data failed: decode error", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelError, "connection broken: pipe error", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelError, "connection closed unexpectedly", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelError, "query processing failed", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelDebug, "executing query", slog.LevelDebug},
		{"clickhouse-go", clickHouseRules, slog.LevelWarn, "clickhouse: cluster interserver-secret mode enabled — connection holds impersonation rights for any user on the cluster", slog.LevelWarn},
		// Not in the rules: as logged, ERROR as WARN (binlog2ch decides
		// what is fatal).
		{"clickhouse-go", clickHouseRules, slog.LevelError, "exec context error", slog.LevelWarn},
		// Rules only demote.
		{"demote only", libRules{{msg: "x", level: slog.LevelWarn}}, slog.LevelDebug, "x", slog.LevelDebug},
		{"prefix", libRules{{msg: "ab*", level: slog.LevelDebug}}, slog.LevelInfo, "a", slog.LevelInfo},
	} {
		if got, _ := c.rules.level(c.level, c.msg); got != c.want {
			t.Errorf("%s: %s %q: got %s, want %s", c.name, c.level, c.msg, got, c.want)
		}
	}
}

// TestLibHandler: mapped levels are filtered by the inner handler's level;
// attributes, groups and With survive; stripped attributes go.
func TestLibHandler(t *testing.T) {
	rules := libRules{{msg: "chatter", level: slog.LevelDebug}, {msg: "dump", level: slog.LevelInfo, strip: []string{"config"}}}
	var out bytes.Buffer
	log := libLogger(slog.New(slog.NewJSONHandler(&out, nil)), "lib", rules)
	log.Info("chatter", "n", 1)
	log.Info("dump", "config", "big", "keep", 2)
	log.WithGroup("g").Error("failed", "err", "e")
	log.Debug("debug")
	lines := logLines(t, out.String())
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got:\n%s", out.String())
	}
	if l := lines[0]; l["msg"] != "dump" || l["level"] != "INFO" || l["config"] != nil || l["keep"] != 2.0 || l["component"] != "lib" {
		t.Errorf("dump: %v", l)
	}
	if l := lines[1]; l["msg"] != "failed" || l["level"] != "WARN" || l["g"].(map[string]any)["err"] != "e" {
		t.Errorf("failed: %v", l)
	}
	h := libLogger(slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})), "lib", rules).Handler()
	if h.Enabled(t.Context(), slog.LevelInfo) || !h.Enabled(t.Context(), slog.LevelError) {
		t.Error("Enabled does not follow the inner handler")
	}
}

// TestMySQLDriverLine: a driver failure line is logged at WARN with
// component=mysql, without the driver's file:line; an idle connection the
// pool replaces at DEBUG (source's TestMySQLDriverLogs sees one for real).
func TestMySQLDriverLine(t *testing.T) {
	var out bytes.Buffer
	log := MySQLDriver{slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	log.Print("closing connection:", io.ErrUnexpectedEOF)
	log.Print("connection.go:803: closing bad idle connection: ", io.EOF)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", out.String())
	}
	if got := lines[0]; !strings.Contains(got, "level=WARN") || !strings.Contains(got, `msg="closing connection: unexpected EOF"`) || !strings.Contains(got, "component=mysql") {
		t.Errorf("driver failure logged as %q", got)
	}
	if got := lines[1]; !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, `msg="closing bad idle connection: EOF"`) {
		t.Errorf("idle connection logged as %q", got)
	}
}
