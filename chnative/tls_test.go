package chnative

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestTLS runs inserts over the secure native port of a private ClickHouse
// with a throwaway CA, and checks that the ways TLS is misconfigured fail
// with an error saying what is wrong, quickly.
func TestTLS(t *testing.T) {
	if testing.Short() || os.Getenv(servertest.EnvSkip) == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pki, err := localserver.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := localserver.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := localserver.StartClickHouseTLS(ctx, pki)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	roots := func(p *localserver.PKI) *tls.Config {
		pem, err := os.ReadFile(p.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	secure := srv.SecureAddr()
	opts := Options{Addr: []string{secure}, User: srv.User, TLS: roots(pki), DialTimeout: 20 * time.Second}

	t.Run("insert", func(t *testing.T) {
		ch, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.Addr()}, Auth: clickhouse.Auth{Username: srv.User}})
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if err := ch.Exec(ctx, "CREATE TABLE default.tls_t (id UInt64) ENGINE = MergeTree ORDER BY id"); err != nil {
			t.Fatal(err)
		}
		// By IP and by name: an empty ServerName is filled from each
		// address, and the certificate holds both.
		for i, addr := range []string{secure, strings.Replace(secure, "127.0.0.1", "localhost", 1)} {
			o := opts
			o.Addr = []string{addr}
			c, err := Dial(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.conn.(*tls.Conn); !ok {
				t.Fatalf("%s: connection is %T, not TLS", addr, c.conn)
			}
			err = c.Insert(ctx, "INSERT INTO default.tls_t (id)", func([]Column) error { return nil }, func(e *Encoder) error {
				e.StartBlock(1, 2)
				e.Column("id", "UInt64")
				e.Uint64(uint64(2 * i))
				e.Uint64(uint64(2*i + 1))
				return nil
			})
			c.Close()
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
		}
		var n uint64
		if err := ch.QueryRow(ctx, "SELECT count() FROM default.tls_t").Scan(&n); err != nil || n != 4 {
			t.Fatalf("count %d, %v; want 4", n, err)
		}
	})

	// fails dials with o and checks the error holds each of want, within
	// half of DialTimeout, so nothing waited for it (a margin no load
	// eats: the handshake fails in milliseconds).
	fails := func(t *testing.T, o Options, want ...string) {
		t.Helper()
		start := time.Now()
		c, err := Dial(ctx, o)
		if err == nil {
			c.Close()
			t.Fatal("connected")
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not contain %q", err, w)
			}
		}
		if d := time.Since(start); d > o.DialTimeout/2 {
			t.Errorf("took %s", d)
		}
	}
	t.Run("wrong CA", func(t *testing.T) {
		o := opts
		o.TLS = roots(other)
		fails(t, o, "clickhouse "+secure, "TLS handshake", "failed to verify certificate")
	})
	t.Run("wrong server name", func(t *testing.T) {
		o := opts
		o.TLS = roots(pki)
		o.TLS.ServerName = "db.example"
		fails(t, o, "clickhouse "+secure, "failed to verify certificate", "db.example")
	})
	t.Run("TLS to the plain port", func(t *testing.T) {
		o := opts
		o.Addr = []string{srv.Addr()}
		fails(t, o, "clickhouse "+srv.Addr(), "plain text", "secure native port")
	})
	t.Run("plain to the TLS port", func(t *testing.T) {
		o := opts
		o.TLS = nil
		fails(t, o, "clickhouse "+secure, "TLS must be on")
	})
}
