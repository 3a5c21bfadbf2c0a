// Package sdnotify tells systemd how the daemon is doing, as sd_notify(3)
// does: READY=1, RELOADING=1, STOPPING=1, STATUS=... and WATCHDOG=1 datagrams to the
// unix socket named by $NOTIFY_SOCKET. Outside systemd (the variable unset)
// every call does nothing, so callers need no "are we under systemd" check.
// It must not judge the daemon's health itself: KeepAlive pings only while
// the caller's alive says so.
package sdnotify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"
)

// Notifier sends state changes to systemd's notification socket.
type Notifier struct {
	addr *net.UnixAddr // nil: not started by systemd with Type=notify
}

// New returns a Notifier for $NOTIFY_SOCKET, which systemd sets for
// services with Type=notify. A path starting with '@' is an abstract
// socket: Go's net package maps the '@' to the leading NUL byte itself.
func New() *Notifier {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return &Notifier{}
	}
	return &Notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}}
}

// Enabled reports whether there is a socket to notify.
func (n *Notifier) Enabled() bool { return n.addr != nil }

// Ready says start-up is done (Type=notify units count as started then).
func (n *Notifier) Ready() error { return n.Send("READY=1") }

// Reloading says a configuration reload has begun; Ready says it is over
// (whether it was applied or refused). MONOTONIC_USEC goes with it, as
// sd_notify(3) asks for Type=notify-reload (systemd >= 253 ties the
// message to the reload it requested by it; older ones ignore it).
func (n *Notifier) Reloading() error {
	if usec, ok := monotonicUsec(); ok {
		return n.Send(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", usec))
	}
	return n.Send("RELOADING=1")
}

// Stopping says shutdown has begun, so systemd does not take the time spent
// flushing for a hang.
func (n *Notifier) Stopping() error { return n.Send("STOPPING=1") }

// Status sets the one-line status `systemctl status` shows.
func (n *Notifier) Status(s string) error { return n.Send("STATUS=" + s) }

// Watchdog is one keep-alive ping for WatchdogSec.
func (n *Notifier) Watchdog() error { return n.Send("WATCHDOG=1") }

// Send sends state, newline-separated VAR=value assignments, in one
// datagram.
func (n *Notifier) Send(state string) error {
	if n.addr == nil {
		return nil
	}
	if c := n.addr.Name[0]; c != '/' && c != '@' {
		return fmt.Errorf("sd_notify: NOTIFY_SOCKET %q: only absolute paths and abstract sockets (@name) are supported", n.addr.Name)
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %q: %w", state, err)
	}
	return nil
}

// WatchdogInterval is the unit's WatchdogSec, from $WATCHDOG_USEC; 0 when
// the watchdog is off or meant for another process ($WATCHDOG_PID, set by
// systemd, names the process it watches).
func WatchdogInterval() (time.Duration, error) {
	usecText := os.Getenv("WATCHDOG_USEC")
	if usecText == "" {
		return 0, nil
	}
	if pidText := os.Getenv("WATCHDOG_PID"); pidText != "" {
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			return 0, fmt.Errorf("sd_notify: WATCHDOG_PID %q: %w", pidText, err)
		}
		if pid != os.Getpid() {
			return 0, nil
		}
	}
	usec, err := strconv.ParseUint(usecText, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("sd_notify: WATCHDOG_USEC %q: %w", usecText, err)
	}
	if usec == 0 {
		return 0, errors.New("sd_notify: WATCHDOG_USEC is 0")
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// KeepAlive sends WATCHDOG=1 every interval/2 (the margin sd_watchdog_enabled(3)
// recommends) while alive reports true, until ctx ends. While alive is
// false it stays silent, so systemd restarts a daemon that is stuck. It
// logs only changes: not alive, alive again, and sending failing.
func (n *Notifier) KeepAlive(ctx context.Context, interval time.Duration, alive func() bool, log *slog.Logger) {
	if n.addr == nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	wasAlive, sendFailed := true, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		isAlive := alive()
		if isAlive != wasAlive {
			if isAlive {
				log.Info("watchdog: alive again, pinging systemd")
			} else {
				log.Warn("watchdog: not alive, not pinging systemd; it restarts the service after WatchdogSec", "watchdog_sec", interval)
			}
			wasAlive = isAlive
		}
		if !isAlive {
			continue
		}
		err := n.Watchdog()
		if err != nil && !sendFailed {
			log.Warn("watchdog: cannot ping systemd", "error", err)
		}
		sendFailed = err != nil
	}
}
