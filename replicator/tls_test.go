package replicator

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// tlsFixture is a config directory holding two throwaway PKIs' files.
type tlsFixture struct {
	dir        string
	pki, other *localserver.PKI
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	f := &tlsFixture{dir: t.TempDir()}
	var err error
	if f.pki, err = localserver.NewPKI(f.dir); err != nil {
		t.Fatal(err)
	}
	otherDir := filepath.Join(f.dir, "other")
	if err := os.Mkdir(otherDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if f.other, err = localserver.NewPKI(otherDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "junk.pem"), []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *tlsFixture) parse(t *testing.T, mysqlTLS, chTLS string) (*Config, error) {
	t.Helper()
	conf := validConfig
	if mysqlTLS != "" {
		conf = strings.Replace(conf, "  server_id: 4242\n", "  server_id: 4242\n  tls:\n"+mysqlTLS, 1)
	}
	if chTLS != "" {
		conf = strings.Replace(conf, "  database_map:", "  tls:\n"+chTLS+"  database_map:", 1)
	}
	return ParseConfig([]byte(conf), filepath.Join(f.dir, "binlog2ch.yaml"), env(map[string]string{"MYSQL_PASSWORD": "x"}))
}

func TestTLSConfigValid(t *testing.T) {
	f := newTLSFixture(t)
	// Relative paths are relative to the config file, as for password_file.
	cfg, err := f.parse(t, `    enabled: true
    ca_file: ca.pem
    cert_file: client.pem
    key_file: client-key.pem
`, `    enabled: true
    server_name: ch.internal
`)
	if err != nil {
		t.Fatal(err)
	}
	my := cfg.MySQLTLS()
	if my == nil || my.RootCAs == nil || len(my.Certificates) != 1 || my.MinVersion != tls.VersionTLS12 || my.InsecureSkipVerify {
		t.Fatalf("mysql TLS config %+v", my)
	}
	// go-mysql's binlog connection needs the name; it defaults to the host.
	if my.ServerName != "127.0.0.1" {
		t.Errorf("mysql server name %q, want the host of mysql.addr", my.ServerName)
	}
	if cfg.MySQL.TLS.CAFile != f.pki.CAFile {
		t.Errorf("ca_file resolved to %q, want %q", cfg.MySQL.TLS.CAFile, f.pki.CAFile)
	}
	ch := cfg.ClickHouseTLS()
	if ch == nil || ch.RootCAs != nil || ch.ServerName != "ch.internal" || len(ch.Certificates) != 0 {
		t.Fatalf("clickhouse TLS config %+v (want system roots and the server_name)", ch)
	}

	cfg, err = f.parse(t, "", "    enabled: true\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MySQLTLS() != nil {
		t.Error("mysql TLS on without mysql.tls")
	}
	// Empty: each ClickHouse address is verified against its own host.
	if ch := cfg.ClickHouseTLS(); ch == nil || ch.ServerName != "" {
		t.Errorf("clickhouse TLS config %+v, want an empty server name", ch)
	}
	cfg, err = f.parse(t, "", "")
	if err != nil || cfg.MySQLTLS() != nil || cfg.ClickHouseTLS() != nil {
		t.Fatalf("TLS must be off by default: %v", err)
	}
}

// TestTLSConfigErrors: each bad tls block names the key, the file and the
// line; a key file's contents never appear.
func TestTLSConfigErrors(t *testing.T) {
	f := newTLSFixture(t)
	file := filepath.Join(f.dir, "binlog2ch.yaml")
	cases := []struct{ name, mysqlTLS, chTLS, want string }{
		{"missing CA", "    enabled: true\n    ca_file: nope.pem\n", "",
			"config: mysql.tls.ca_file: cannot read " + filepath.Join(f.dir, "nope.pem") + ": no such file or directory (" + file + ":9)"},
		{"CA not PEM", "", "    enabled: true\n    ca_file: junk.pem\n",
			"config: clickhouse.tls.ca_file: " + filepath.Join(f.dir, "junk.pem") + " holds no PEM certificate (" + file + ":13)"},
		{"cert without key", "    enabled: true\n    cert_file: client.pem\n", "", "config: mysql.tls.key_file: required with cert_file"},
		{"key without cert", "    enabled: true\n    key_file: client-key.pem\n", "", "config: mysql.tls.cert_file: required with key_file"},
		{"cert not a certificate", "    enabled: true\n    cert_file: client-key.pem\n    key_file: client-key.pem\n", "",
			"config: mysql.tls.cert_file: " + f.pki.ClientKey + " holds no PEM certificate"},
		{"key of another cert", "    enabled: true\n    cert_file: client.pem\n    key_file: other/client-key.pem\n", "",
			"config: mysql.tls.key_file: " + f.other.ClientKey + " is not the private key of cert_file " + f.pki.ClientCert},
		{"missing key file", "    enabled: true\n    cert_file: client.pem\n    key_file: nope-key.pem\n", "",
			"config: mysql.tls.key_file: cannot read " + filepath.Join(f.dir, "nope-key.pem")},
		{"CA with TLS off", "    ca_file: ca.pem\n", "", "config: mysql.tls.ca_file: is set but mysql.tls.enabled is false: set enabled: true or remove it"},
		{"insecure with TLS off", "", "    insecure_skip_verify: true\n", "config: clickhouse.tls.insecure_skip_verify: is set but clickhouse.tls.enabled is false"},
		{"insecure and CA", "    enabled: true\n    ca_file: ca.pem\n    insecure_skip_verify: true\n", "",
			"config: mysql.tls.insecure_skip_verify: turns off the verification ca_file is for: set one of them"},
		{"unknown key", "", "    enabled: true\n    ca: ca.pem\n",
			"config: clickhouse.tls.ca: unknown key (known here: ca_file, cert_file, enabled, insecure_skip_verify, key_file, server_name)"},
		{"not a bool", "    enabled: yes please\n", "", `config: mysql.tls.enabled: want true or false, got "yes please"`},
	}
	key, err := os.ReadFile(f.pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	keyBody := strings.Split(string(key), "\n")[1]
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.parse(t, c.mysqlTLS, c.chTLS)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
			if strings.Contains(err.Error(), keyBody) {
				t.Fatalf("error quotes the private key: %v", err)
			}
		})
	}
}

func TestLogUnsafeSettings(t *testing.T) {
	f := newTLSFixture(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg, err := f.parse(t, "    enabled: true\n    ca_file: ca.pem\n", "    enabled: true\n    insecure_skip_verify: true\n")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ClickHouseTLS().InsecureSkipVerify {
		t.Fatal("insecure_skip_verify not applied")
	}
	cfg.LogUnsafeSettings(log)
	out := logs.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "key=clickhouse.tls.insecure_skip_verify") {
		t.Fatalf("want one warning naming clickhouse.tls.insecure_skip_verify, got:\n%s", out)
	}
	logs.Reset()
	cfg, err = f.parse(t, "    enabled: true\n", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LogUnsafeSettings(log)
	if logs.Len() != 0 {
		t.Fatalf("warning without insecure_skip_verify: %s", logs.String())
	}
}

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
	f := newTLSFixture(t)
	srv := &localserver.Servers{}
	t.Cleanup(func() { _ = srv.Stop() })
	var myErr, chErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); srv.MySQL, myErr = localserver.StartMariaDB(ctx, f.pki.MariaDBTLSArgs()...) }()
	go func() { defer wg.Done(); srv.ClickHouse, chErr = localserver.StartClickHouseTLS(ctx, f.pki) }()
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
	myTLS := fmt.Sprintf("{enabled: true, ca_file: %q, cert_file: %q, key_file: %q}", f.pki.CAFile, f.pki.ClientCert, f.pki.ClientKey)
	chTLS := fmt.Sprintf("{enabled: true, ca_file: %q}", f.pki.CAFile)
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
	run.r.ins.mu.Lock()
	idle := len(run.r.ins.idle)
	run.r.ins.mu.Unlock()
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
	_, err = r.FullSync(ctx, FullSyncOptions{Tables: []TableName{{db, "copied"}}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.assertEqual(db, "copied", cols)

	// fails checks that connecting with conn fails within a few seconds
	// with an error holding each of want.
	fails := func(t *testing.T, conn string, open func(context.Context, *Config) error, want ...string) {
		t.Helper()
		cfg, err := ParseConfig([]byte(conn+"tables: {include: [\"x.*\"]}\nstate_dir: state\n"), filepath.Join(f.dir, "b.yaml"), env(nil))
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
	openMy := func(ctx context.Context, cfg *Config) error {
		db, err := OpenMySQL(ctx, cfg, nil)
		if err == nil {
			db.Close()
		}
		return err
	}
	openCH := func(ctx context.Context, cfg *Config) error {
		ch, err := OpenClickHouse(ctx, cfg, nil)
		if err == nil {
			ch.Close()
		}
		return err
	}
	otherCA := fmt.Sprintf("{enabled: true, ca_file: %q, cert_file: %q, key_file: %q}", f.other.CAFile, f.pki.ClientCert, f.pki.ClientKey)
	myAddr, secure, plainCH := srv.MySQL.Addr(), srv.ClickHouse.SecureAddr(), srv.ClickHouse.Addr()
	t.Run("MySQL wrong CA", func(t *testing.T) {
		fails(t, conn(myAddr, otherCA, secure, chTLS), openMy, "MySQL "+myAddr, "failed to verify certificate")
	})
	t.Run("MySQL without TLS", func(t *testing.T) {
		// The user requires TLS, which is how the test above knows it was on.
		fails(t, conn(myAddr, "{enabled: false}", secure, chTLS), openMy, "MySQL "+myAddr, "Access denied")
	})
	t.Run("MySQL without client certificate", func(t *testing.T) {
		fails(t, conn(myAddr, fmt.Sprintf("{enabled: true, ca_file: %q}", f.pki.CAFile), secure, chTLS), openMy, "MySQL "+myAddr, "Access denied")
	})
	t.Run("ClickHouse wrong CA", func(t *testing.T) {
		fails(t, conn(myAddr, myTLS, secure, fmt.Sprintf("{enabled: true, ca_file: %q}", f.other.CAFile)), openCH,
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
