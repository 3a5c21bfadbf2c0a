package localserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// PKI is a throwaway certificate authority with a server certificate (for
// 127.0.0.1 and localhost) and a client certificate it signed, as PEM
// files, for tests of TLS connections.
type PKI struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewPKI writes a fresh CA and its server and client certificates to dir.
// Each call makes a different CA, so two of them test a wrong CA.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "binlog2ch test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, err
	}
	p := &PKI{
		CAFile:     filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	if err := writePEM(p.CAFile, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "PRIVATE KEY", keyDER)
	}
	if err := leaf(2, "localhost", x509.ExtKeyUsageServerAuth, p.ServerCert, p.ServerKey); err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if err := leaf(3, "binlog2ch", x509.ExtKeyUsageClientAuth, p.ClientCert, p.ClientKey); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return p, nil
}

func writePEM(file, kind string, der []byte) error {
	return os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// MariaDBTLSArgs are the mariadbd options that serve TLS with p's server
// certificate and verify client certificates against p's CA; pass them to
// StartMariaDB.
func (p *PKI) MariaDBTLSArgs() []string {
	return []string{"--ssl-ca=" + p.CAFile, "--ssl-cert=" + p.ServerCert, "--ssl-key=" + p.ServerKey}
}

// StartClickHouseTLS is StartClickHouse with the secure native port
// (tcp_port_secure) open too, as Server.SecurePort, serving p's server
// certificate. The plain port stays open, for the test's own checks.
func StartClickHouseTLS(ctx context.Context, p *PKI) (*Server, error) {
	bin, err := findBinary("clickhouse-server")
	if err != nil {
		return nil, fmt.Errorf("ClickHouse: %w", err)
	}
	return startWithRetry(ctx, func(ctx context.Context) (*Server, error, bool) {
		return startClickHouseOnce(ctx, bin, chOptions{pki: p})
	})
}

// clickHouseTLSConfig is the secure port's configuration. 18.16 needs no
// dhParamsFile (it then does ECDHE only); verificationMode none: clients
// present no certificate.
const clickHouseTLSConfig = `  <tcp_port_secure>{{secure}}</tcp_port_secure>
  <openSSL>
    <server>
      <certificateFile>{{cert}}</certificateFile>
      <privateKeyFile>{{key}}</privateKeyFile>
      <verificationMode>none</verificationMode>
      <loadDefaultCAFile>false</loadDefaultCAFile>
      <disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>
      <preferServerCiphers>true</preferServerCiphers>
    </server>
  </openSSL>
`

// SecureAddr is host:port of the secure native port.
func (s *Server) SecureAddr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.SecurePort)) }
