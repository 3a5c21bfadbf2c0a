package replicator

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/state"
)

// TestQuietStart: a first start on a MariaDB as `make demo` starts it, and
// on one with MariaDB's own defaults (gtid_strict_mode and
// log_slave_updates OFF), logs no WARN or ERROR line from New to a clean
// shutdown: the initial snapshot of a table with rows, a table created
// and filled afterwards, the checkpoints. The failover advice is an INFO
// line on such a primary.
func TestQuietStart(t *testing.T) {
	t.Run("demo", func(t *testing.T) {
		quietStart(t, servertest.Need(t), "")
	})
	t.Run("mariadb-defaults", func(t *testing.T) {
		srv := servertest.Need(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// Later options win: these undo localserver's failover settings.
		my, err := localserver.StartMariaDBWith(ctx, localserver.MariaDBOptions{Args: []string{"--gtid-strict-mode=OFF", "--log-slave-updates=OFF"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = my.Stop() })
		quietStart(t, &localserver.Servers{MySQL: my, ClickHouse: srv.ClickHouse}, "gtid_strict_mode = ON")
	})
}

// quietStart runs the first start on srv and fails on any WARN or ERROR;
// advice, when set, is text the failover advice's INFO line must hold.
func quietStart(t *testing.T, srv *localserver.Servers, advice string) {
	h := newHarnessOn(t, srv, mysqlSection(srv.MySQL)+fmt.Sprintf("clickhouse: {addr: [%q], user: %q, password: %q}\n",
		srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password), 1, "batch: {flush_interval: 200ms}\ncheckpoint: {interval: 200ms}\n")
	// A first start: no checkpoint, so an initial snapshot.
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	db := h.dbs[0]
	h.exec("CREATE TABLE "+db+".before (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO "+db+".before VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	logs := &syncBuffer{}
	run := h.startLogged(logs, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), testHooks{})
	h.waitCaughtUp(run, 2*time.Minute)
	h.exec("CREATE TABLE "+db+".after (id INT PRIMARY KEY, v DECIMAL(10,2), at DATETIME(3))",
		"INSERT INTO "+db+".after VALUES (1, 1.5, NOW(3)), (2, 2.5, NOW(3))",
		"UPDATE "+db+".before SET v = 'z' WHERE id = 2", "DELETE FROM "+db+".before WHERE id = 3")
	h.waitCaughtUp(run, 2*time.Minute)
	h.assertEqual(db, "before", []string{"id", "v"})
	h.assertEqual(db, "after", []string{"id", "v"})
	if err := run.stop(t); err != nil {
		t.Fatalf("stop: %v; logs:\n%s", err, tail(logs.String(), 4000))
	}
	var loud []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			loud = append(loud, l)
		}
	}
	if len(loud) > 0 {
		t.Errorf("a default start logged %d WARN/ERROR lines:\n%s", len(loud), strings.Join(loud, "\n"))
	}
	if advice != "" && !strings.Contains(logs.String(), advice) {
		t.Errorf("no failover advice with %q; logs:\n%s", advice, tail(logs.String(), 4000))
	}
}
