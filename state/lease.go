package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/go-zookeeper/zk"
)

// ErrLeaseLost stops a daemon whose ZooKeeper session was disconnected or
// expired: another daemon may hold the lease now.
var ErrLeaseLost = errors.New("lost the ZooKeeper lease (session disconnected or expired): stopped replicating without flushing, since another daemon may be replicating now; the rows not checkpointed are replayed by whoever holds the lease next")

// leaseWaitLog is how often a daemon waiting for the lease says so again.
var leaseWaitLog = 30 * time.Second

// Holder names this process in the lease node and the checkpoint
// table: host, pid and state_dir.
func Holder(cfg *config.Config) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d state_dir %s", host, os.Getpid(), cfg.StateDir)
}

// lease is a held ZooKeeper ephemeral node: it exists while the session
// that created it lives, so a holder that dies releases it when ZooKeeper
// expires its session.
type Lease struct {
	conn  *zk.Conn
	zlog  *zkLogger
	path  string
	fence int64 // the node's creation zxid: larger for every later holder
	held  atomic.Bool
	lost  chan struct{}
	once  sync.Once
}

// Valid reports whether the lease is still held.
func (l *Lease) Valid() bool { return l != nil && l.held.Load() }

// Fence is the lease's token: the node's creation zxid, larger for every
// later holder.
func (l *Lease) Fence() int64 { return l.fence }

// Lost is closed once the lease is lost.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

func (l *Lease) markLost() {
	l.held.Store(false)
	l.once.Do(func() { close(l.lost) })
}

// release deletes the node by closing the session: the next daemon takes
// over at once instead of after the session timeout.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.held.Store(false)
	l.close()
}

// close closes the session; the client's account of its end is routine.
func (l *Lease) close() {
	l.zlog.closing.Store(true)
	l.conn.Close()
}

// Acquire takes the lease, waiting while another daemon holds it.
// Once held, any disconnection from ZooKeeper counts as losing it: the
// client notices within 2/3 of the session timeout (its receive timeout),
// before the servers expire the session, so the holder stops first.
func Acquire(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Lease, error) {
	return acquire(ctx, cfg, log, true)
}

// LeaseHeldError is a lease another process holds, for TryAcquire.
type LeaseHeldError struct {
	Path   string
	Holder string // what the holder wrote: host, pid and state_dir (Holder)
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("the ZooKeeper lease %s is held by %s", e.Path, e.Holder)
}

// TryAcquire takes the lease if no one holds it, without waiting: held by
// another process (a daemon replicating, or one that died whose session
// has not expired yet), it fails with a *LeaseHeldError.
func TryAcquire(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Lease, error) {
	return acquire(ctx, cfg, log, false)
}

func acquire(ctx context.Context, cfg *config.Config, log *slog.Logger, wait bool) (*Lease, error) {
	st := cfg.State
	l := &Lease{path: st.LeasePath, lost: make(chan struct{}), zlog: &zkLogger{log: log}}
	connected := make(chan struct{}, 1)
	conn, _, err := zk.Connect(st.ZooKeeper, st.SessionTimeout, zk.WithLogger(l.zlog), zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type != zk.EventSession {
			return
		}
		switch ev.State {
		case zk.StateHasSession:
			select {
			case connected <- struct{}{}:
			default:
			}
		case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
			if l.held.Load() {
				log.Error("ZooKeeper session lost while holding the lease: stopping replication", "state", ev.State.String(), "lease", st.LeasePath)
				l.markLost()
			}
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("ZooKeeper %v: %w", st.ZooKeeper, err)
	}
	l.conn = conn
	fail := func(err error) (*Lease, error) {
		l.close()
		return nil, err
	}
	select {
	case <-connected:
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-time.After(time.Minute):
		return fail(fmt.Errorf("ZooKeeper %v: no session within a minute", st.ZooKeeper))
	}
	if err := ensureParents(conn, st.LeasePath); err != nil {
		return fail(err)
	}
	me := Holder(cfg)
	var waitingSince time.Time
	lastLog := time.Time{}
	for {
		_, err := conn.Create(st.LeasePath, []byte(me), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			log.Warn("ZooKeeper: cannot create the lease node; retrying", "lease", st.LeasePath, "error", err)
			select {
			case <-ctx.Done():
				return fail(ctx.Err())
			case <-time.After(time.Second):
			}
			continue
		}
		data, stat, watch, gerr := conn.GetW(st.LeasePath)
		if errors.Is(gerr, zk.ErrNoNode) {
			continue // released meanwhile
		}
		if gerr != nil {
			return fail(fmt.Errorf("ZooKeeper: read the lease %s: %w", st.LeasePath, gerr))
		}
		// Ours also when a Create whose reply was lost did create it.
		if stat.EphemeralOwner == conn.SessionID() {
			l.fence = stat.Czxid
			l.held.Store(true)
			// A disconnection between the create and now would have gone
			// unnoticed: check the session still stands.
			if conn.State() != zk.StateHasSession {
				l.markLost()
				return fail(ErrLeaseLost)
			}
			if !waitingSince.IsZero() {
				log.Info("took over the lease", "lease", st.LeasePath, "waited", time.Since(waitingSince).Round(time.Millisecond).String(), "fence", l.fence)
			} else {
				log.Info("holding the lease", "lease", st.LeasePath, "fence", l.fence)
			}
			return l, nil
		}
		if !wait {
			return fail(&LeaseHeldError{Path: st.LeasePath, Holder: string(data)})
		}
		if waitingSince.IsZero() {
			waitingSince = time.Now()
		}
		if time.Since(lastLog) >= leaseWaitLog {
			log.Warn("waiting for the lease held by "+string(data), "lease", st.LeasePath, "holder", string(data),
				"waiting", time.Since(waitingSince).Round(time.Second).String(),
				"note", "a holder that died releases it when its ZooKeeper session expires (state.session_timeout)")
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-watch:
		case <-time.After(leaseWaitLog):
		}
	}
}

// ensureParents creates the lease node's parent path.
func ensureParents(conn *zk.Conn, path string) error {
	parts := strings.Split(path, "/")
	for i := 2; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("ZooKeeper: create %s: %w", p, err)
		}
	}
	return nil
}
