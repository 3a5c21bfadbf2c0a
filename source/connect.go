package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/liblog"
	"github.com/go-sql-driver/mysql"
)

// OpenMySQL opens a SQL connection pool to the source server and checks it
// answers. The driver logs into log (see liblog.MySQLDriver); a nil log
// keeps it silent.
func OpenMySQL(ctx context.Context, cfg *config.Config, log *slog.Logger) (*sql.DB, error) {
	c := DriverConfig(cfg, log)
	c.InterpolateParams = true
	return OpenPool(ctx, cfg, c)
}

// DriverConfig is the driver configuration every pool starts from:
// the server, the user, TIMESTAMPs in UTC, and the driver's log lines in
// log.
func DriverConfig(cfg *config.Config, log *slog.Logger) *mysql.Config {
	c := mysql.NewConfig()
	c.Logger = &mysql.NopLogger{}
	if log != nil {
		c.Logger = liblog.MySQLDriver{Log: log}
	}
	c.Net = "tcp"
	c.Addr = cfg.MySQL.Addr
	c.User = cfg.MySQL.User
	c.Passwd = cfg.MySQL.Password.Reveal()
	c.Timeout = 10 * time.Second
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	return c
}

// OpenPool opens a pool with c and the config's TLS settings and checks
// the server answers. The *tls.Config goes in directly (a connector, not a
// DSN), so no name has to be registered in the driver's global table.
func OpenPool(ctx context.Context, cfg *config.Config, c *mysql.Config) (*sql.DB, error) {
	c.TLS = cfg.MySQLTLS()
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("MySQL %s: %w", cfg.MySQL.Addr, err)
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, mysqlError(cfg, err)
	}
	return db, nil
}

// mysqlError names the server and user in a failed connection's error.
func mysqlError(cfg *config.Config, err error) error {
	if errors.Is(err, mysql.ErrNoTLS) {
		return fmt.Errorf("MySQL %s as %s: %w (mysql.tls.enabled is true: the server must be started with ssl_cert and ssl_key)", cfg.MySQL.Addr, cfg.MySQL.User, err)
	}
	return fmt.Errorf("MySQL %s as %s: %w", cfg.MySQL.Addr, cfg.MySQL.User, err)
}
