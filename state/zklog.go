package state

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// zkLogger takes the ZooKeeper client's Printf lines (go-zookeeper/zk
// v1.0.4, conn.go) and logs them at a level chosen by their format:
// failures to connect and a session's connection lost WARN, the session
// established again after such a failure INFO, the rest of the connection
// chatter DEBUG (binlog2ch logs the lease itself: held, waited for, lost).
type zkLogger struct {
	log *slog.Logger
	// closing is set when binlog2ch closes the session: the send and
	// receive loops ending then is no failure.
	closing atomic.Bool
	// failed is set by a failure to connect or a connection lost, until
	// the next session.
	failed atomic.Bool
}

func (z *zkLogger) Printf(format string, args ...any) {
	l := z.level(format, args)
	z.log.Log(context.Background(), l, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "zookeeper")
}

// level is the level of one line, by the client's format string; it
// records failures, so that the session coming back is logged at INFO.
func (z *zkLogger) level(format string, args []any) slog.Level {
	switch format {
	case "connected to %s", // TCP only; the session follows
		"re-submitting `%d` credentials after reconnect",
		"recv closed, cancel re-submitting credentials",
		"should quit, cancel re-submitting credentials":
		return slog.LevelDebug
	case "authenticated: id=%d, timeout=%d":
		if z.failed.Swap(false) {
			return slog.LevelInfo
		}
		return slog.LevelDebug
	case "failed to connect to %s: %v":
		if z.closing.Load() {
			return slog.LevelDebug
		}
		z.failed.Store(true)
		return slog.LevelWarn
	case "send loop terminated: %v", "recv loop terminated: %v":
		// The send loop ends without an error when the receive loop did
		// first, which says why.
		if z.closing.Load() || len(args) == 1 && args[0] == nil {
			return slog.LevelDebug
		}
		z.failed.Store(true)
		return slog.LevelWarn
	case "authentication failed: %s", // the session expired, or the server refused it
		"error in resending auth creds: %v",
		"Failed to set previous watches: %v",
		"failed to set connection deadline: %v",
		"gave up trying to send opClose to server", // the session outlives us until it expires
		"Xid < 0 (%d) but not ping or watcher event",
		"Response for unknown request with xid %d":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
