package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
)

// TLSConfig is the tls block of mysql and clickhouse. Off by default, so an
// existing config keeps connecting in plain text.
type TLSConfig struct {
	Enabled bool `yaml:"enabled"`
	// CAFile holds the PEM certificates the server's certificate must chain
	// to; empty: the system's roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate (PEM), for servers that
	// require one; set both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the server's certificate must carry; empty:
	// the host of the address connected to.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any certificate. Unsafe: anyone on the
	// path can pose as the server and read the password and the data.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`

	config *tls.Config // built at load; nil when TLS is off
}

// MySQLTLS is the TLS configuration for every connection to the source
// (nil: plain text). Callers must not modify it.
func (c *Config) MySQLTLS() *tls.Config { return c.MySQL.TLS.config }

// ClickHouseTLS is the TLS configuration for every connection to the
// target (nil: plain text). Its ServerName is empty unless
// clickhouse.tls.server_name is set: each address is then verified against
// its own host. Callers must not modify it.
func (c *Config) ClickHouseTLS() *tls.Config { return c.ClickHouse.TLS.config }

// LogUnsafeSettings warns, at start, about settings that trade safety for
// convenience, so nobody runs with them unknowingly.
func (c *Config) LogUnsafeSettings(log *slog.Logger) {
	for _, s := range []struct {
		section string
		tls     TLSConfig
	}{{"mysql", c.MySQL.TLS}, {"clickhouse", c.ClickHouse.TLS}} {
		if s.tls.Enabled && s.tls.InsecureSkipVerify {
			log.Warn("UNSAFE: TLS certificate verification is OFF: anyone on the network path can pose as the server and read the password and the data; set "+
				s.section+".tls.ca_file instead of "+s.section+".tls.insecure_skip_verify", "key", s.section+".tls.insecure_skip_verify")
		}
	}
}

// validate checks the files and builds the tls.Config. serverName is the
// default name to verify ("" to leave it to each address's host).
func (t *TLSConfig) validate(d *decoder, section, dir, serverName string) {
	key := section + ".tls"
	if !t.Enabled {
		// A CA file with TLS off would look like TLS to whoever reads the
		// config, while the connection stays plain.
		for _, f := range []struct{ name, v string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"server_name", t.ServerName}} {
			if f.v != "" {
				d.problem(key+"."+f.name, "is set but "+key+".enabled is false: set enabled: true or remove it")
			}
		}
		if t.InsecureSkipVerify {
			d.problem(key+".insecure_skip_verify", "is set but "+key+".enabled is false: set enabled: true or remove it")
		}
		return
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.ServerName != "" {
		tc.ServerName = t.ServerName
	}
	if t.InsecureSkipVerify && t.CAFile != "" {
		d.problem(key+".insecure_skip_verify", "turns off the verification ca_file is for: set one of them")
	}
	if t.CAFile != "" {
		t.CAFile = abs(dir, t.CAFile)
		if data, ok := d.readFile(key+".ca_file", t.CAFile); ok {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(data) {
				d.problem(key+".ca_file", t.CAFile+" holds no PEM certificate")
			}
			tc.RootCAs = pool
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		d.problem(key+".key_file", "required with cert_file: the client certificate's private key")
	case t.CertFile == "" && t.KeyFile != "":
		d.problem(key+".cert_file", "required with key_file: the client certificate")
	case t.CertFile != "":
		t.CertFile, t.KeyFile = abs(dir, t.CertFile), abs(dir, t.KeyFile)
		certPEM, okCert := d.readFile(key+".cert_file", t.CertFile)
		keyPEM, okKey := d.readFile(key+".key_file", t.KeyFile)
		if !okCert || !okKey {
			break
		}
		if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
			d.problem(key+".cert_file", t.CertFile+" holds no PEM certificate")
			break
		}
		// The error never quotes the key file's contents.
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			d.problem(key+".key_file", fmt.Sprintf("%s is not the private key of cert_file %s: %v", t.KeyFile, t.CertFile, err))
			break
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	t.config = tc
}

// readFile reads a file a key names; a failure is that key's problem.
func (d *decoder) readFile(key, file string) ([]byte, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		d.problem(key, fmt.Sprintf("cannot read %s: %v", file, err))
		return nil, false
	}
	return data, true
}

func abs(dir, file string) string {
	if filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(dir, file)
}

// hostOf is the host of a host:port address, validated at load.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
