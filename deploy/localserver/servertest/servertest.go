// Package servertest shares one pair of throwaway servers among the tests of
// a package: started on first use, stopped when the tests end.
//
//	func TestMain(m *testing.M) { servertest.Main(m) }
//	func TestX(t *testing.T) { srv := servertest.Need(t) ... }
//
// An integration test whose servers cannot start fails; it never skips
// silently. Set BINLOG2CH_SKIP_INTEGRATION=1 (or run `go test -short`) to skip
// the integration tests on purpose, for example on a laptop without the
// server binaries. It must never be imported outside tests.
package servertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
)

// EnvSkip names the variable that skips integration tests on purpose.
const EnvSkip = "BINLOG2CH_SKIP_INTEGRATION"

var (
	mu      sync.Mutex
	started *localserver.Servers
	failed  error
)

// Main runs the package's tests and stops the shared servers afterwards, also
// when the run is interrupted with SIGINT or SIGTERM.
func Main(m *testing.M) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		stop()
		fmt.Fprintf(os.Stderr, "servertest: %v: servers stopped\n", s)
		os.Exit(1)
	}()
	code := m.Run()
	stop()
	os.Exit(code)
}

func stop() {
	mu.Lock()
	defer mu.Unlock()
	if started != nil {
		if err := started.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "servertest: stop servers: %v\n", err)
		}
		started = nil
	}
}

// Need returns the shared servers, starting them on first use. It fails the
// test when they cannot start, and skips it only when the user asked for that
// (-short or BINLOG2CH_SKIP_INTEGRATION=1).
func Need(t testing.TB) *localserver.Servers {
	t.Helper()
	if testing.Short() || os.Getenv(EnvSkip) == "1" {
		t.Skipf("integration test skipped on request (-short or %s=1)", EnvSkip)
	}
	mu.Lock()
	defer mu.Unlock()
	if started == nil && failed == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		started, failed = localserver.Start(ctx)
		cancel()
	}
	if failed != nil {
		t.Fatalf("integration servers did not start: %v", failed)
	}
	return started
}

// Name returns a database name unique to this test run, so tests never touch
// each other's data, nor a user's data on external servers. Eight random
// bytes: with four, two of a hundred names once came out equal (CI), and
// packages testing in parallel share the servers.
func Name(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
