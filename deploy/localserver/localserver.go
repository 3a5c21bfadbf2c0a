// Package localserver starts private, throwaway MariaDB and ClickHouse
// servers on free loopback ports in temporary directories, for the demo,
// the tests and the benchmarks. It also accepts servers the user already
// runs (MySQL 8, a current ClickHouse) through environment variables, so the
// same tests can run against them. It never installs anything: a missing
// server binary is an error that says what to install.
package localserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables that point at servers the caller already runs.
// Their form is mysql://user:password@host:port and
// clickhouse://user:password@host:port (native protocol port).
const (
	EnvMySQL      = "BINLOG2CH_TEST_MYSQL"
	EnvClickHouse = "BINLOG2CH_TEST_CLICKHOUSE"
)

// installHint tells the user how to get the server binaries.
const installHint = "install them with `make deps` (Debian, as root: apt-get install mariadb-server clickhouse-server clickhouse-client), " +
	"or point the tests at running servers with " + EnvMySQL + "=mysql://user:pass@host:port and " + EnvClickHouse + "=clickhouse://user:pass@host:port"

// Endpoint is how to reach one server.
type Endpoint struct {
	Host     string
	Port     int
	User     string
	Password string
}

// Addr is host:port.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// Server is one running server, private or external.
type Server struct {
	Endpoint
	// HTTPPort is a private ClickHouse's HTTP port (0 otherwise).
	HTTPPort int
	// SecurePort is the TLS native port of a ClickHouse from
	// StartClickHouseTLS (0 otherwise).
	SecurePort int
	// Dir is the private server's temporary directory ("" for external ones).
	Dir string
	// External is true when the server came from an environment variable;
	// Stop leaves it running.
	External bool
	// ServerID is a private MariaDB's --server-id (0 otherwise).
	ServerID uint32

	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error

	restart func(context.Context) error // starts the process again on the same ports and data

	stopOnce sync.Once
	stopErr  error
}

// Kill kills a private server's process (SIGKILL), keeping its data, to
// test what a crash or an outage does; Restart brings it back.
func (s *Server) Kill() error {
	if s.External || s.cmd == nil {
		return fmt.Errorf("%s: only a private server can be killed", s.name)
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	return nil
}

// Restart starts a killed private server again, on the same ports and with
// the same data, and waits until it answers.
func (s *Server) Restart(ctx context.Context) error {
	if s.External || s.restart == nil {
		return fmt.Errorf("%s: only a private server can be restarted", s.name)
	}
	return s.restart(ctx)
}

// Pid is a private server's process id (0 for an external one).
func (s *Server) Pid() int {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop kills a private server, waits for it and removes its directory. It
// is safe to call more than once and does nothing for an external server.
// The data is thrown away, so there is nothing to shut down gracefully, and a
// graceful ClickHouse shutdown alone takes seconds.
func (s *Server) Stop() error {
	if s == nil || s.External {
		return nil
	}
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			// The server runs in its own process group: signal the group so
			// helper processes go too.
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
		if s.Dir != "" {
			s.stopErr = os.RemoveAll(s.Dir)
		}
	})
	return s.stopErr
}

// Servers is a MySQL-compatible server and a ClickHouse server.
type Servers struct {
	MySQL      *Server
	ClickHouse *Server
}

// Stop stops both servers.
func (s *Servers) Stop() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.MySQL.Stop(), s.ClickHouse.Stop())
}

// Start returns both servers: the ones named by BINLOG2CH_TEST_MYSQL and
// BINLOG2CH_TEST_CLICKHOUSE when set, private ones otherwise. The two start in
// parallel; on error nothing is left running.
func Start(ctx context.Context) (*Servers, error) {
	var (
		s            Servers
		wg           sync.WaitGroup
		myErr, chErr error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.MySQL, myErr = mysqlFromEnvOrStart(ctx)
	}()
	go func() {
		defer wg.Done()
		s.ClickHouse, chErr = clickHouseFromEnvOrStart(ctx)
	}()
	wg.Wait()
	if err := errors.Join(myErr, chErr); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return &s, nil
}

func mysqlFromEnvOrStart(ctx context.Context) (*Server, error) {
	if v := os.Getenv(EnvMySQL); v != "" {
		return external(EnvMySQL, v, "mysql", 3306)
	}
	return StartMariaDB(ctx)
}

func clickHouseFromEnvOrStart(ctx context.Context) (*Server, error) {
	if v := os.Getenv(EnvClickHouse); v != "" {
		return external(EnvClickHouse, v, "clickhouse", 9000)
	}
	return StartClickHouse(ctx)
}

// External is a server the caller already runs, given as
// mysql://user:password@host:port or clickhouse://user:password@host:port
// (native protocol port); Stop leaves it running. what names the setting
// in errors; the password is never echoed.
func External(what, raw string) (*Server, error) {
	if strings.HasPrefix(raw, "clickhouse://") {
		return external(what, raw, "clickhouse", 9000)
	}
	return external(what, raw, "mysql", 3306)
}

// external parses scheme://user:password@host:port from an environment
// variable. The password is never echoed in errors.
func external(env, raw, scheme string, defaultPort int) (*Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a %s://user:password@host:port address", env, scheme)
	}
	if u.Scheme != scheme || u.Host == "" {
		return nil, fmt.Errorf("%s: want %s://user:password@host:port", env, scheme)
	}
	e := Endpoint{Host: u.Hostname(), Port: defaultPort, User: "root"}
	if scheme == "clickhouse" {
		e.User = "default"
	}
	if p := u.Port(); p != "" {
		if e.Port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("%s: bad port %q", env, p)
		}
	}
	if u.User != nil {
		e.User = u.User.Username()
		e.Password, _ = u.User.Password()
	}
	return &Server{Endpoint: e, External: true, name: env}, nil
}

// findBinary looks on PATH and in the sbin directories, which a non-root
// user's PATH often lacks.
func findBinary(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"} {
			p := filepath.Join(dir, n)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found; %s", strings.Join(names, " or "), installHint)
}

// freePort asks the kernel for a free loopback port. Another process may take
// it before the server binds it; callers retry on a bind failure.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts cmd in its own process group, killed with this process even
// if it dies without cleaning up (Pdeathsig), with output to logPath.
func (s *Server) launch(cmd *exec.Cmd) error {
	out, err := os.Create(s.logPath)
	if err != nil {
		return fmt.Errorf("%s: create log: %w", s.name, err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("%s: start %s: %w", s.name, cmd.Path, err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		out.Close()
		close(s.done)
	}()
	return nil
}

// waitReady polls ready until it succeeds, the process exits, or the
// deadline passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last = ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s exited during start-up (%v); its log %s ends with:\n%s", s.name, s.waitErr, s.logPath, s.logTail(extraLogs(s)...))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last error: %v); its log %s ends with:\n%s", s.name, timeout, last, s.logPath, s.logTail(extraLogs(s)...))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// extraLogs are the server's own log files, which say more than stdout.
func extraLogs(s *Server) []string {
	return []string{filepath.Join(s.Dir, "error.log"), filepath.Join(s.Dir, "server.err")}
}

// logTail returns the last lines of the server's output and log files.
func (s *Server) logTail(more ...string) string {
	var b strings.Builder
	for _, p := range append([]string{s.logPath}, more...) {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(p), strings.Join(lines, "\n"))
	}
	return b.String()
}

// isBindFailure reports whether a start-up failure was a port already in use,
// which a retry on another port fixes.
func isBindFailure(s *Server) bool {
	t := s.logTail(extraLogs(s)...)
	return strings.Contains(t, "Address already in use") || strings.Contains(t, "Can't start server: Bind") || strings.Contains(t, "errno: 98")
}

// startWithRetry starts a server up to three times, on fresh ports, when the
// failure was a port taken between freePort and bind.
func startWithRetry(ctx context.Context, start func(context.Context) (*Server, error, bool)) (*Server, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var s *Server
		var retry bool
		s, err, retry = start(ctx)
		if err == nil {
			return s, nil
		}
		if !retry || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}
