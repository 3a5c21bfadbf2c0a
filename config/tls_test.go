package config

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
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
	if f.other, err = localserver.NewPKI(filepath.Join(f.dir, "other")); err != nil {
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
	return Parse([]byte(conf), filepath.Join(f.dir, "binlog2ch.yaml"), env(map[string]string{"MYSQL_PASSWORD": "x"}))
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
