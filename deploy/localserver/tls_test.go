package localserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestTLSServers: both servers speak TLS with the PKI's server certificate,
// which verifies against its CA, and MariaDB checks client certificates
// against the same CA.
func TestTLSServers(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pki, err := NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}

	ch, err := StartClickHouseTLS(ctx, pki)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Stop()
	c, err := tls.Dial("tcp", ch.SecureAddr(), &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("ClickHouse secure port: %v", err)
	}
	c.Close()

	my, err := StartMariaDB(ctx, pki.MariaDBTLSArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer my.Stop()
	cfg, err := mysql.ParseDSN(my.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var name, cipher string
	if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
		t.Fatal(err)
	}
	if cipher == "" {
		t.Fatal("MariaDB connection is not encrypted")
	}
	t.Logf("MariaDB over TLS with %s", cipher)
}
