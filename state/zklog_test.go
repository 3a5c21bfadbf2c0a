package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestZooKeeperLevels feeds the ZooKeeper client's formats (go-zookeeper/zk
// v1.0.4 conn.go) in the order a start, an outage and a close log them.
func TestZooKeeperLevels(t *testing.T) {
	var out bytes.Buffer
	z := &zkLogger{log: slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	steps := []struct {
		format string
		args   []any
		want   string
	}{
		{"connected to %s", []any{"127.0.0.1:2181"}, "DEBUG"},
		{"authenticated: id=%d, timeout=%d", []any{int64(72), int32(3000)}, "DEBUG"},
		// The server goes away: the loops end, connecting fails.
		{"recv loop terminated: %v", []any{errors.New("failed to read from connection: EOF")}, "WARN"},
		{"send loop terminated: %v", []any{nil}, "DEBUG"},
		{"failed to connect to %s: %v", []any{"127.0.0.1:2181", errors.New("connection refused")}, "WARN"},
		{"connected to %s", []any{"127.0.0.1:2181"}, "DEBUG"},
		{"authentication failed: %s", []any{errors.New("zk: session has been expired by the server")}, "WARN"},
		{"connected to %s", []any{"127.0.0.1:2181"}, "DEBUG"},
		// Back: said once at INFO.
		{"authenticated: id=%d, timeout=%d", []any{int64(73), int32(3000)}, "INFO"},
		{"re-submitting `%d` credentials after reconnect", []any{0}, "DEBUG"},
		{"Failed to set previous watches: %v", []any{errors.New("x")}, "WARN"},
		{"some line of a later version", nil, "INFO"},
	}
	for _, s := range steps {
		z.Printf(s.format, s.args...)
	}
	// binlog2ch closes the session: its end is routine.
	z.closing.Store(true)
	closing := []struct {
		format string
		args   []any
	}{
		{"recv loop terminated: %v", []any{errors.New("failed to read from connection: EOF")}},
		{"send loop terminated: %v", []any{errors.New("zk: connection closed")}},
		{"failed to connect to %s: %v", []any{"127.0.0.1:2181", errors.New("connection refused")}},
	}
	for _, s := range closing {
		z.Printf(s.format, s.args...)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != len(steps)+len(closing) {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		want := "DEBUG"
		if i < len(steps) {
			want = steps[i].want
		}
		if l["level"] != want || l["component"] != "zookeeper" {
			t.Errorf("line %d %q: %v, want %s", i, l["msg"], l["level"], want)
		}
	}
	if lines[4]["msg"] != "failed to connect to 127.0.0.1:2181: connection refused" {
		t.Errorf("message: %q", lines[4]["msg"])
	}
}
