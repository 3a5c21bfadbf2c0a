package state

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestTryAcquire: while one process holds the lease, TryAcquire fails at
// once with the holder's host, pid and state_dir (what fullsync
// -checkpoint refuses on); once it is released, TryAcquire takes it.
func TestTryAcquire(t *testing.T) {
	if testing.Short() || os.Getenv(servertest.EnvSkip) == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zk, err := localserver.StartZooKeeper(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Stop()
	lease := func(dir string) *config.Config {
		return &config.Config{StateDir: dir, State: config.StateConfig{Lease: config.LeaseZooKeeper, ZooKeeper: []string{zk.Addr()},
			LeasePath: "/binlog2ch/leases/try", SessionTimeout: 3 * time.Second}}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, err := Acquire(ctx, lease("/var/lib/host-a"), log)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryAcquire(ctx, lease("/var/lib/host-b"), log)
	var held *LeaseHeldError
	if !errors.As(err, &held) || !strings.Contains(held.Holder, "state_dir /var/lib/host-a") || held.Path != "/binlog2ch/leases/try" {
		t.Fatalf("TryAcquire while held: %v", err)
	}
	first.Release()
	second, err := TryAcquire(ctx, lease("/var/lib/host-b"), log)
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	second.Release()
}
