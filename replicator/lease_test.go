package replicator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/state"
)

// startDaemonOn is startDaemon on another config file ("another host").
func (h *harness) startDaemonOn(config, logPath string) *daemon {
	h.t.Helper()
	saved := h.path
	h.path = config
	defer func() { h.path = saved }()
	d := h.startDaemon(logPath)
	h.t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
	})
	return d
}

// waitLog waits until the log at path contains want.
func waitLog(t *testing.T, path, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(path); strings.Contains(string(data), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := os.ReadFile(path)
	t.Fatalf("%s: no %q within %s; log (tail):\n%s", filepath.Base(path), want, timeout, tail(string(data), 4000))
}

func logHas(path, s string) bool {
	data, _ := os.ReadFile(path)
	return strings.Contains(string(data), s)
}

// TestLeaseFailover runs the daemon as "host A" with the checkpoint in a
// replicated ClickHouse table and a ZooKeeper lease. "Host B" (another
// state_dir) started meanwhile waits and says so, without replicating.
// A is SIGKILLed mid-workload: B takes the lease once A's session expires,
// resumes from the shared checkpoint, and ClickHouse ends equal to MySQL.
// Then a third daemon waits for B, and takes over at once when B stops
// cleanly (its session is closed, the node deleted).
func TestLeaseFailover(t *testing.T) {
	const session = 3 * time.Second
	h, _ := newClusterHarnessWith(t, 1, 2, nil, func(c *localserver.Cluster) string {
		return fmt.Sprintf("state: {store: clickhouse, name: failover_%d, lease: zookeeper, zookeeper: [%q], session_timeout: %s}\n",
			time.Now().UnixNano(), c.ZooKeeper.Addr(), session)
	})
	db := h.dbs[0]
	// The harness recorded the start position in state_dir: make it the
	// shared checkpoint (fence 0, below any lease's).
	start, err := state.LoadFile(h.cfg.StateDir)
	if err != nil || start == nil {
		t.Fatalf("harness checkpoint: %v", err)
	}
	start.SavedAt = time.Now().UTC()
	if err := state.NewStore(h.cfg, h.ch, 0, nil, nil).Save(context.Background(), *start); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	// Host B: the same config in another directory, so another state_dir.
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	configB := filepath.Join(t.TempDir(), "binlog2ch.yaml")
	if err := os.WriteFile(configB, data, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	logA, logB, logC := filepath.Join(logs, "a.log"), filepath.Join(logs, "b.log"), filepath.Join(logs, "c.log")

	a := h.startDaemonOn(h.path, logA)
	waitLog(t, logA, "msg=\"holding the lease\"", 30*time.Second)
	b := h.startDaemonOn(configB, logB)
	waitLog(t, logB, "waiting for the lease held by", 30*time.Second)

	w := h.startWorkload(db, 21, time.Millisecond)
	defer w.finish()
	w.waitIters(120, 90*time.Second)
	if logHas(logB, "resuming from checkpoint") || logHas(logB, "first start") {
		t.Fatal("host B replicated while host A held the lease")
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()
	waitLog(t, logB, "took over the lease", 4*session+time.Minute)
	t.Logf("host B took over %s after host A was killed (session timeout %s)", time.Since(killed).Round(time.Millisecond), session)
	waitLog(t, logB, "resuming from checkpoint", 60*time.Second)

	w.waitIters(280, 90*time.Second)
	w.finish()
	h.waitCaughtUpProcess(b, logB, 90*time.Second)
	h.assertClusterWorkload(db)
	if _, err := os.Stat(filepath.Join(filepath.Dir(configB), "state", state.CheckpointFile)); err == nil {
		t.Error("host B wrote a checkpoint file in its state_dir; the checkpoint belongs in ClickHouse")
	}

	// A third daemon (host A again) waits for B; B stops cleanly and
	// releases the lease at once.
	c3 := h.startDaemonOn(h.path, logC)
	waitLog(t, logC, "waiting for the lease held by", 30*time.Second)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-b.done
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("host B exited with %d after SIGTERM", code)
	}
	stopped := time.Now()
	final, err := state.Read(context.Background(), h.cfg, h.ch)
	if err != nil || final == nil {
		t.Fatalf("shared checkpoint after B stopped: %v", err)
	}
	waitLog(t, logC, "took over the lease", session)
	t.Logf("third daemon took over %s after host B stopped cleanly", time.Since(stopped).Round(time.Millisecond))
	waitLog(t, logC, "position="+final.Position.String(), 60*time.Second)
	h.waitCaughtUpProcess(c3, logC, 30*time.Second)
	h.assertClusterWorkload(db)
}

// TestLeaseLostStopsDaemon cuts the holder off from ZooKeeper (the server
// is killed): the daemon must stop replicating before the session could
// have expired on ZooKeeper's side, exit with an error that says why, and
// save no checkpoint after that.
func TestLeaseLostStopsDaemon(t *testing.T) {
	const session = 3 * time.Second
	h, c := newClusterHarnessWith(t, 1, 1, nil, func(c *localserver.Cluster) string {
		return fmt.Sprintf("state: {store: clickhouse, name: lost_%d, lease: zookeeper, zookeeper: [%q], session_timeout: %s}\n",
			time.Now().UnixNano(), c.ZooKeeper.Addr(), session)
	})
	logA := filepath.Join(t.TempDir(), "a.log")
	a := h.startDaemonOn(h.path, logA)
	waitLog(t, logA, "msg=\"holding the lease\"", 30*time.Second)
	waitLog(t, logA, "initial snapshot done", 60*time.Second) // replicating
	cutoff := time.Now()
	if err := c.ZooKeeper.Kill(); err != nil {
		t.Fatal(err)
	}
	// It must stop on the disconnection, which the client reports at once
	// for a closed connection and within 2/3 of the session timeout for a
	// silent one, not on the expiry another daemon could take over after.
	// The reason is asserted, not the time, which a loaded machine stretches.
	select {
	case <-a.done:
	case <-time.After(time.Minute):
		t.Fatal("the daemon still ran a minute after losing ZooKeeper")
	}
	stoppedAfter := time.Since(cutoff)
	if !logHas(logA, "state=StateDisconnected") {
		data, _ := os.ReadFile(logA)
		t.Errorf("the daemon did not stop on the disconnection:\n%s", tail(string(data), 3000))
	}
	if code := a.cmd.ProcessState.ExitCode(); code == 0 {
		t.Error("the daemon exited with 0 after losing the lease")
	}
	if !logHas(logA, "lost the ZooKeeper lease") {
		data, _ := os.ReadFile(logA)
		t.Errorf("the daemon's log does not say it lost the lease:\n%s", tail(string(data), 3000))
	}
	t.Logf("the daemon stopped %s after ZooKeeper was killed (session timeout %s)", stoppedAfter.Round(time.Millisecond), session)
}
