package replicator

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/go-sql-driver/mysql"
)

// OpenMySQL opens a SQL connection pool to the source server and checks it
// answers. The driver logs into log (see mysqlDriverLogger); a nil log
// keeps it silent.
func OpenMySQL(ctx context.Context, cfg *config.Config, log *slog.Logger) (*sql.DB, error) {
	c := mysqlDriverConfig(cfg, log)
	c.InterpolateParams = true
	db, err := openMySQLPool(cfg, c)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, mysqlError(cfg, err)
	}
	return db, nil
}

// mysqlDriverConfig is the driver configuration every pool starts from:
// the server, the user, TIMESTAMPs in UTC, and the driver's log lines in
// log.
func mysqlDriverConfig(cfg *config.Config, log *slog.Logger) *mysql.Config {
	c := mysql.NewConfig()
	c.Logger = &mysql.NopLogger{}
	if log != nil {
		c.Logger = mysqlDriverLogger{log}
	}
	c.Net = "tcp"
	c.Addr = cfg.MySQL.Addr
	c.User = cfg.MySQL.User
	c.Passwd = cfg.MySQL.Password.Reveal()
	c.Timeout = 10 * time.Second
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	return c
}

// openMySQLPool opens a pool with c and the config's TLS settings. The
// *tls.Config goes in directly (a connector, not a DSN), so no name has to
// be registered in the driver's global table.
func openMySQLPool(cfg *config.Config, c *mysql.Config) (*sql.DB, error) {
	c.TLS = cfg.MySQLTLS()
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("MySQL %s: %w", cfg.MySQL.Addr, err)
	}
	return sql.OpenDB(conn), nil
}

// mysqlError names the server and user in a failed connection's error.
func mysqlError(cfg *config.Config, err error) error {
	if errors.Is(err, mysql.ErrNoTLS) {
		return fmt.Errorf("MySQL %s as %s: %w (mysql.tls.enabled is true: the server must be started with ssl_cert and ssl_key)", cfg.MySQL.Addr, cfg.MySQL.User, err)
	}
	return fmt.Errorf("MySQL %s as %s: %w", cfg.MySQL.Addr, cfg.MySQL.User, err)
}

// OpenClickHouse connects to the target servers over the native protocol
// with LZ4 and checks they answer. The driver logs into log, at the levels
// ClickHouseLogger gives its messages (its failures are at DEBUG: they
// reach binlog2ch's own log as errors, once per retry); a nil log keeps it
// silent.
func OpenClickHouse(ctx context.Context, cfg *config.Config, log *slog.Logger) (driver.Conn, error) {
	var settings clickhouse.Settings
	if cfg.ClickHouse.Cluster != "" {
		// Inserts that fall back to clickhouse-go go into the Distributed
		// table too, synchronously like the native ones (see newInserters).
		settings = clickhouse.Settings{"insert_distributed_sync": 1}
	}
	var driverLog *slog.Logger
	if log != nil {
		driverLog = ClickHouseLogger(log)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Logger:      driverLog,
		Addr:        cfg.ClickHouse.Addr,
		Auth:        clickhouse.Auth{Username: cfg.ClickHouse.User, Password: cfg.ClickHouse.Password.Reveal()},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		DialTimeout: 10 * time.Second,
		TLS:         cfg.ClickHouseTLS(),
		Settings:    settings,
	})
	if err != nil {
		return nil, fmt.Errorf("ClickHouse %v: %w", cfg.ClickHouse.Addr, err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, clickHouseError(cfg, err)
	}
	return conn, nil
}

// clickHouseError names the servers and user in a failed connection's
// error, with a hint when TLS met a plain-text port.
func clickHouseError(cfg *config.Config, err error) error {
	return fmt.Errorf("ClickHouse %v as %s: %w", cfg.ClickHouse.Addr, cfg.ClickHouse.User,
		tlsHint(err, "clickhouse", cfg.ClickHouseTLS() != nil, " ClickHouse's secure native port, tcp_port_secure, is usually 9440"))
}

// tlsHint adds what an operator most likely got wrong to a failed
// connection's error: TLS against a plain port (portHint then says which
// port serves TLS), or the reverse.
func tlsHint(err error, section string, tlsOn bool, portHint string) error {
	var rh tls.RecordHeaderError
	switch {
	case tlsOn && errors.As(err, &rh):
		return fmt.Errorf("%w (the server answered in plain text: is this its TLS port?%s)", err, portHint)
	case !tlsOn && errors.Is(err, syscall.ECONNRESET):
		// What a TLS port does with a plain-text hello.
		return fmt.Errorf("%w (if this is a TLS port, set %s.tls.enabled)", err, section)
	}
	return err
}
