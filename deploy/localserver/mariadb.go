package localserver

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultServerID is the --server-id of a MariaDB from StartMariaDB.
const DefaultServerID = 7

// MariaDBOptions vary a private MariaDB from StartMariaDBWith.
type MariaDBOptions struct {
	// ServerID is the server's --server-id, which MariaDB writes into every
	// GTID it generates (domain-server-seq); 0 means DefaultServerID.
	ServerID uint32
	// Args are appended to mariadbd's command line, so a test can vary a
	// server setting.
	Args []string
}

// StartMariaDB starts a private MariaDB with the binlog settings the
// replicator needs (ROW format, full row metadata, server id
// DefaultServerID), root without a password over TCP. extraArgs are appended
// to mariadbd's command line, so a test can vary a server setting.
func StartMariaDB(ctx context.Context, extraArgs ...string) (*Server, error) {
	return StartMariaDBWith(ctx, MariaDBOptions{Args: extraArgs})
}

// StartMariaDBWith is StartMariaDB with options. Every server gets the same
// binlog settings (ROW, FULL row metadata, log_slave_updates, GTID strict
// mode, files named binlog.NNNNNN), so a replica promoted to primary writes
// the binlog its primary wrote.
func StartMariaDBWith(ctx context.Context, opts MariaDBOptions) (*Server, error) {
	if opts.ServerID == 0 {
		opts.ServerID = DefaultServerID
	}
	installDB, err := findBinary("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, fmt.Errorf("MariaDB: %w", err)
	}
	mariadbd, err := findBinary("mariadbd", "mysqld")
	if err != nil {
		return nil, fmt.Errorf("MariaDB: %w", err)
	}
	return startWithRetry(ctx, func(ctx context.Context) (*Server, error, bool) {
		return startMariaDBOnce(ctx, installDB, mariadbd, opts)
	})
}

func startMariaDBOnce(ctx context.Context, installDB, mariadbd string, opts MariaDBOptions) (*Server, error, bool) {
	dir, err := os.MkdirTemp("", "binlog2ch-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("MariaDB: temp dir: %w", err), false
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err, false
	}
	s := &Server{
		Endpoint: Endpoint{Host: "127.0.0.1", Port: port, User: "root"},
		Dir:      dir,
		ServerID: opts.ServerID,
		name:     "MariaDB",
		logPath:  filepath.Join(dir, "mariadbd.out"),
	}
	data := filepath.Join(dir, "data")
	// A private tmpdir: MariaDB's temporary file names can collide between
	// instances sharing /tmp, which fails concurrent installs.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("MariaDB: %w", err), false
	}
	install := exec.CommandContext(ctx, installDB, "--no-defaults", "--datadir="+data, "--tmpdir="+tmp, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("MariaDB: %s failed: %w\n%s", installDB, err, errorLines(out)), false
	}
	args := []string{
		"--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--user=root",
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "sock"),
		"--pid-file=" + filepath.Join(dir, "pid"),
		"--log-error=" + filepath.Join(dir, "server.err"),
		"--log-bin=" + filepath.Join(dir, "binlog"),
		"--server-id=" + strconv.FormatUint(uint64(opts.ServerID), 10),
		"--binlog-format=ROW",
		"--binlog-row-metadata=FULL",
		// A replica logs what it applies, under the primary's GTIDs, so
		// after a promotion its binlog continues the primary's.
		"--log-slave-updates=ON",
		// Refuse out-of-order GTIDs in a domain instead of logging them.
		"--gtid-strict-mode=ON",
		// A fixed name: the default derives from the host name.
		"--relay-log=" + filepath.Join(dir, "relay-bin"),
		"--skip-name-resolve",
		// MySQL 8's defaults, which MariaDB's latin1 default would hide.
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		"--max-allowed-packet=256M",
	}
	all := append(args, opts.Args...)
	s.restart = func(ctx context.Context) error {
		if err := s.launch(exec.Command(mariadbd, all...)); err != nil {
			return err
		}
		return s.waitReady(ctx, 60*time.Second, s.pingMySQL)
	}
	cmd := exec.Command(mariadbd, all...)
	if err := s.launch(cmd); err != nil {
		os.RemoveAll(dir)
		return nil, err, false
	}
	if err := s.waitReady(ctx, 60*time.Second, s.pingMySQL); err != nil {
		retry := isBindFailure(s)
		_ = s.Stop()
		return nil, err, retry
	}
	return s, nil, false
}

// DSN is a go-sql-driver/mysql DSN for the server, with database db ("" for
// none).
func (s *Server) DSN(db string) string {
	c := mysql.NewConfig()
	c.Net = "tcp"
	c.Addr = s.Addr()
	c.User = s.User
	c.Passwd = s.Password
	c.DBName = db
	c.MultiStatements = true
	c.InterpolateParams = true
	return c.FormatDSN()
}

func (s *Server) pingMySQL(ctx context.Context) error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// errorLines keeps the lines of mariadb-install-db's output that say what
// went wrong; the rest is boilerplate advice.
func errorLines(out []byte) string {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "rror:") || strings.Contains(l, "failed") {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return string(out)
	}
	return strings.Join(keep, "\n")
}
