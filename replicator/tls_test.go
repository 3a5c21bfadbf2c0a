package replicator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestTLSEndToEnd replicates over TLS only: a private MariaDB serving TLS,
// where the daemon's user must present a client certificate (REQUIRE
// X509, so a plain or certificate-less connection is refused), and a
// private ClickHouse whose secure native port is the only address in the
// config. The binlog stream, the SQL pool, the snapshot reader,
// clickhouse-go and chnative's inserts all go through it. Then each way of
// getting TLS wrong fails at once with an error naming the server.
func TestTLSEndToEnd(t *testing.T) {
	if testing.Short() || os.Getenv(servertest.EnvSkip) == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki, err := localserver.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := localserver.NewPKI(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &localserver.Servers{}
	t.Cleanup(func() { _ = srv.Stop() })
	var myErr, chErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); srv.MySQL, myErr = localserver.StartMariaDB(ctx, pki.MariaDBTLSArgs()...) }()
	go func() { defer wg.Done(); srv.ClickHouse, chErr = localserver.StartClickHouseTLS(ctx, pki) }()
	wg.Wait()
	if err := errors.Join(myErr, chErr); err != nil {
		t.Fatal(err)
	}
	root, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, q := range []string{
		"CREATE USER 'b2c_tls'@'%' IDENTIFIED BY 'tls-pw' REQUIRE X509",
		"GRANT ALL PRIVILEGES ON *.* TO 'b2c_tls'@'%'",
	} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	myTLS := fmt.Sprintf("{enabled: true, ca_file: %q, cert_file: %q, key_file: %q}", pki.CAFile, pki.ClientCert, pki.ClientKey)
	chTLS := fmt.Sprintf("{enabled: true, ca_file: %q}", pki.CAFile)
	conn := func(myAddr, myTLS, chAddr, chTLS string) string {
		return fmt.Sprintf("mysql: {addr: %q, user: b2c_tls, password: tls-pw, server_id: 4242, tls: %s}\nclickhouse: {addr: [%q], tls: %s}\n",
			myAddr, myTLS, chAddr, chTLS)
	}
	h := newHarnessOn(t, srv, conn(srv.MySQL.Addr(), myTLS, srv.ClickHouse.SecureAddr(), chTLS), 1, "")
	db := h.dbs[0]
	cols := []string{"id", "s"}

	run := h.start()
	h.exec("CREATE TABLE "+db+".t (id INT PRIMARY KEY, s VARCHAR(20))",
		"INSERT INTO "+db+".t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
		"UPDATE "+db+".t SET s = 'TWO' WHERE id = 2",
		"DELETE FROM "+db+".t WHERE id = 3")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(db, "t", cols)
	// A clean native insert leaves its connection in the pool: chnative
	// took the rows, and it can only reach the secure port.
	idle := run.r.sink.IdleConns()
	if idle == 0 || strings.Contains(run.logs.String(), "inserting through clickhouse-go") {
		t.Fatalf("the rows did not go through chnative; logs:\n%s", run.logs.String())
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	// A table copy reads through the snapshot pool.
	h.exec("CREATE TABLE "+db+".copied (id INT PRIMARY KEY, s VARCHAR(20))",
		"INSERT INTO "+db+".copied VALUES (10, 'ten'), (11, 'eleven')")
	r := h.newReplicator(io.Discard)
	_, err = r.FullSync(ctx, FullSyncOptions{Tables: []schema.TableName{{Database: db, Table: "copied"}}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.assertEqual(db, "copied", cols)

	// fails checks that connecting with conn fails within a few seconds
	// with an error holding each of want.
	fails := func(t *testing.T, conn string, open func(context.Context, *config.Config) error, want ...string) {
		t.Helper()
		cfg, err := config.Parse([]byte(conn+"tables: {include: [\"x.*\"]}\nstate_dir: state\n"), filepath.Join(dir, "b.yaml"), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = open(ctx, cfg)
		if err == nil {
			t.Fatal("connected")
		}
		t.Log(err)
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not contain %q", err, w)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s", d)
		}
	}
	openMy := func(ctx context.Context, cfg *config.Config) error {
		db, err := source.OpenMySQL(ctx, cfg, nil)
		if err == nil {
			db.Close()
		}
		return err
	}
	openCH := func(ctx context.Context, cfg *config.Config) error {
		ch, err := chconn.Open(ctx, cfg, nil)
		if err == nil {
			ch.Close()
		}
		return err
	}
	otherCA := fmt.Sprintf("{enabled: true, ca_file: %q, cert_file: %q, key_file: %q}", other.CAFile, pki.ClientCert, pki.ClientKey)
	myAddr, secure, plainCH := srv.MySQL.Addr(), srv.ClickHouse.SecureAddr(), srv.ClickHouse.Addr()
	t.Run("MySQL wrong CA", func(t *testing.T) {
		fails(t, conn(myAddr, otherCA, secure, chTLS), openMy, "MySQL "+myAddr, "failed to verify certificate")
	})
	t.Run("MySQL without TLS", func(t *testing.T) {
		// The user requires TLS, which is how the test above knows it was on.
		fails(t, conn(myAddr, "{enabled: false}", secure, chTLS), openMy, "MySQL "+myAddr, "Access denied")
	})
	t.Run("MySQL without client certificate", func(t *testing.T) {
		fails(t, conn(myAddr, fmt.Sprintf("{enabled: true, ca_file: %q}", pki.CAFile), secure, chTLS), openMy, "MySQL "+myAddr, "Access denied")
	})
	t.Run("ClickHouse wrong CA", func(t *testing.T) {
		fails(t, conn(myAddr, myTLS, secure, fmt.Sprintf("{enabled: true, ca_file: %q}", other.CAFile)), openCH,
			"ClickHouse ["+secure+"]", "failed to verify certificate")
	})
	t.Run("ClickHouse TLS to the plain port", func(t *testing.T) {
		fails(t, conn(myAddr, myTLS, plainCH, chTLS), openCH, "ClickHouse ["+plainCH+"]", "plain text", "9440")
	})
	t.Run("ClickHouse plain to the TLS port", func(t *testing.T) {
		fails(t, conn(myAddr, myTLS, secure, "{enabled: false}"), openCH, "ClickHouse ["+secure+"]", "set clickhouse.tls.enabled")
	})
	t.Run("MySQL TLS to a server without TLS", func(t *testing.T) {
		plain := servertest.Need(t)
		fails(t, conn(plain.MySQL.Addr(), myTLS, secure, chTLS), openMy, "MySQL "+plain.MySQL.Addr(), "server does not support TLS", "ssl_cert")
	})
}
