package localserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StartClickHouse starts a private ClickHouse server (user default, no
// password, time zone UTC) on free loopback ports. The native protocol port
// is Endpoint.Port; HTTPPort is the HTTP one.
func StartClickHouse(ctx context.Context) (*Server, error) {
	bin, err := findBinary("clickhouse-server")
	if err != nil {
		return nil, fmt.Errorf("ClickHouse: %w", err)
	}
	return startWithRetry(ctx, func(ctx context.Context) (*Server, error, bool) {
		return startClickHouseOnce(ctx, bin, chOptions{})
	})
}

const clickHouseConfig = `<yandex>
  <logger>
    <level>warning</level>
    <log>{{dir}}/server.log</log>
    <errorlog>{{dir}}/error.log</errorlog>
    <console>0</console>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{{tcp}}</tcp_port>
  <http_port>{{http}}</http_port>
  <path>{{dir}}/data/</path>
  <tmp_path>{{dir}}/tmp/</tmp_path>
  <user_files_path>{{dir}}/user_files/</user_files_path>
  <format_schema_path>{{dir}}/format_schemas/</format_schema_path>
  <users_config>{{dir}}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>536870912</mark_cache_size>
  <timezone>UTC</timezone>
{{tls}}</yandex>
`

// clickHouseUsers: an ON CLUSTER statement gives up after 30 s instead of
// 180 (distributed_ddl_task_timeout), so a task a server's DDL worker
// missed (seen under load with 18.16) fails and is sent again within a
// test's time.
const clickHouseUsers = `<yandex>
  <profiles><default><distributed_ddl_task_timeout>30</distributed_ddl_task_timeout></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
`

// chOptions are what differs between the private ClickHouse servers.
type chOptions struct {
	pki   *PKI   // a secure port too, serving pki's certificate
	tcp   int    // the native port, chosen beforehand (a cluster member); 0: a free one
	extra string // more configuration elements (cluster membership)
	name  string // for errors; default "ClickHouse"
}

// startClickHouseOnce starts a server as o says.
func startClickHouseOnce(ctx context.Context, bin string, o chOptions) (*Server, error, bool) {
	pki := o.pki
	dir, err := os.MkdirTemp("", "binlog2ch-clickhouse-")
	if err != nil {
		return nil, fmt.Errorf("ClickHouse: temp dir: %w", err), false
	}
	tcp := o.tcp
	if tcp == 0 {
		if tcp, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err, false
		}
	}
	httpPort, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err, false
	}
	tlsConf := ""
	secure := 0
	if pki != nil {
		if secure, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err, false
		}
		tlsConf = strings.NewReplacer("{{secure}}", strconv.Itoa(secure), "{{cert}}", pki.ServerCert, "{{key}}", pki.ServerKey).Replace(clickHouseTLSConfig)
	}
	s := &Server{
		Endpoint:   Endpoint{Host: "127.0.0.1", Port: tcp, User: "default"},
		HTTPPort:   httpPort,
		SecurePort: secure,
		Dir:        dir,
		name:       "ClickHouse",
		logPath:    filepath.Join(dir, "clickhouse-server.out"),
	}
	if o.name != "" {
		s.name = o.name
	}
	cfg := strings.NewReplacer("{{dir}}", dir, "{{tcp}}", strconv.Itoa(tcp), "{{http}}", strconv.Itoa(httpPort), "{{tls}}", tlsConf+o.extra).Replace(clickHouseConfig)
	cfgPath := filepath.Join(dir, "config.xml")
	err = os.WriteFile(cfgPath, []byte(cfg), 0o600)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "users.xml"), []byte(clickHouseUsers), 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("ClickHouse: write config: %w", err), false
	}
	s.restart = func(ctx context.Context) error {
		cmd := exec.Command(bin, "--config-file="+cfgPath)
		cmd.Dir = dir
		if err := s.launch(cmd); err != nil {
			return err
		}
		return s.waitReady(ctx, 60*time.Second, s.pingClickHouse)
	}
	cmd := exec.Command(bin, "--config-file="+cfgPath)
	cmd.Dir = dir
	if err := s.launch(cmd); err != nil {
		os.RemoveAll(dir)
		return nil, err, false
	}
	if err := s.waitReady(ctx, 60*time.Second, s.pingClickHouse); err != nil {
		retry := isBindFailure(s)
		_ = s.Stop()
		return nil, err, retry
	}
	return s, nil, false
}

// pingClickHouse asks the HTTP /ping endpoint, then checks the native ports
// accept connections: every listener must be up.
func (s *Server) pingClickHouse(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(s.Host, strconv.Itoa(s.HTTPPort))+"/ping", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ping: HTTP %d %s", resp.StatusCode, body)
	}
	addrs := []string{s.Addr()}
	if s.SecurePort != 0 {
		addrs = append(addrs, net.JoinHostPort(s.Host, strconv.Itoa(s.SecurePort)))
	}
	for _, a := range addrs {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}
