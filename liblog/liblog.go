// Package liblog routes the log lines of the libraries binlog2ch uses
// (clickhouse-go, go-sql-driver/mysql; go-mysql's binlog connection is
// binlog2ch's own, source/dump.go, and logs as binlog2ch) through
// the daemon's slog handler, at the level each message means to an
// operator. It knows those libraries' messages, not binlog2ch's work: it
// never decides what is an error.
package liblog

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// The libraries binlog2ch uses log through slog (clickhouse-go) or
// through a Printf (go-sql-driver/mysql here; the ZooKeeper client in
// state). Their messages go into the
// daemon's log with a component attribute, at the level they mean to an
// operator: routine chatter (connects, closes) at DEBUG; failures binlog2ch
// also sees as returned errors, which it logs itself with their context
// and retries, at DEBUG; binlog2ch alone decides what is fatal and logs
// that at ERROR.

// libRule maps one library message to a level.
type libRule struct {
	msg   string     // the message; a trailing "*" matches any message starting with the rest
	level slog.Level // at most the library's own level: rules only demote
	strip []string   // attributes dropped
}

// libRules is a library's mapping; other messages keep their level, but
// ERROR becomes WARN.
type libRules []libRule

func (rs libRules) match(msg string) *libRule {
	for i := range rs {
		r := &rs[i]
		if p, ok := strings.CutSuffix(r.msg, "*"); ok && strings.HasPrefix(msg, p) || r.msg == msg {
			return r
		}
	}
	return nil
}

// level is the level a message logged at l is logged at, and the rule
// that says so (nil: none).
func (rs libRules) level(l slog.Level, msg string) (slog.Level, *libRule) {
	r := rs.match(msg)
	if r == nil {
		return min(l, slog.LevelWarn), nil
	}
	return min(l, r.level), r
}

// clickHouseRules is clickhouse-go v2.51. Every WARN and ERROR it logs on
// a query's or a connection's failure also comes back to binlog2ch as the
// call's error, which binlog2ch logs with the table and retries.
var clickHouseRules = libRules{
	// On every start with a server older than the driver's official
	// minimum; binlog2ch supports ClickHouse from 18.16 on, checking what
	// each server has.
	{msg: "unsupported clickhouse version", level: slog.LevelDebug},
	{msg: "server exception received", level: slog.LevelDebug},
	{msg: "send data failed*", level: slog.LevelDebug},
	{msg: "read data failed*", level: slog.LevelDebug},
	{msg: "connection broken*", level: slog.LevelDebug},
	{msg: "connection closed unexpectedly", level: slog.LevelDebug},
	{msg: "failed to bind query parameters", level: slog.LevelDebug},
	{msg: "failed to get first block", level: slog.LevelDebug},
	{msg: "query processing failed", level: slog.LevelDebug},
}

// libLogger is a logger for a library that logs through slog: its records
// reach log's handler mapped by rules, with the component attribute.
func libLogger(log *slog.Logger, component string, rules libRules) *slog.Logger {
	return slog.New(&libHandler{inner: log.Handler(), rules: rules}).With("component", component)
}

// ClickHouse is the logger for a clickhouse-go connection
// (clickhouse.Options.Logger): the driver's messages at binlog2ch's levels.
func ClickHouse(log *slog.Logger) *slog.Logger {
	return libLogger(log, "clickhouse", clickHouseRules)
}

// libHandler maps a library's records to binlog2ch's levels. Rules only
// lower a level, so a level the inner handler does not log is not logged
// mapped either: Enabled asks the inner handler about the library's level.
type libHandler struct {
	inner slog.Handler
	rules libRules
}

func (h *libHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *libHandler) Handle(ctx context.Context, r slog.Record) error {
	level, rule := h.rules.level(r.Level, r.Message)
	if level != r.Level && !h.inner.Enabled(ctx, level) {
		return nil
	}
	if level == r.Level && (rule == nil || len(rule.strip) == 0) {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if rule == nil || !slices.Contains(rule.strip, a.Key) {
			out.AddAttrs(a)
		}
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *libHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &libHandler{inner: h.inner.WithAttrs(attrs), rules: h.rules}
}

func (h *libHandler) WithGroup(name string) slog.Handler {
	return &libHandler{inner: h.inner.WithGroup(name), rules: h.rules}
}

// MySQLDriver takes go-sql-driver/mysql's lines (mysql.Config.Logger,
// whose default writes "[mysql] ..." to stderr, past the daemon's handler
// and its JSON). Each comes with an error the call also returns, which
// binlog2ch logs or retries itself: WARN, but DEBUG for an idle connection
// the pool drops and replaces (every pool after a server restart).
type MySQLDriver struct{ Log *slog.Logger }

// Print logs one driver line.
func (m MySQLDriver) Print(v ...any) {
	// Connections' lines start with the driver's file:line, e.g.
	// "connection.go:803"; the rest is what it says.
	msg := strings.Join(strings.Fields(fmt.Sprintln(v...)), " ")
	if first, rest, ok := strings.Cut(msg, " "); ok && strings.Contains(first, ".go:") {
		msg = rest
	}
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "closing bad idle connection") {
		level = slog.LevelDebug
	}
	m.Log.Log(context.Background(), level, msg, "component", "mysql")
}
