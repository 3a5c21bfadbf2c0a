package chconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/liblog"
)

// Open connects clickhouse-go to the target servers over the native protocol,
// compressed as clickhouse.compression says, and checks they answer. The driver logs into log, at the levels
// ClickHouseLogger gives its messages (its failures are at DEBUG: they
// reach binlog2ch's own log as errors, once per retry); a nil log keeps it
// silent.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (driver.Conn, error) {
	var settings clickhouse.Settings
	if cfg.ClickHouse.Cluster != "" {
		// Inserts that fall back to clickhouse-go go into the Distributed
		// table too, synchronously like the native ones (see
		// chsettings's insertSettings).
		settings = clickhouse.Settings{"insert_distributed_sync": 1}
	}
	var driverLog *slog.Logger
	if log != nil {
		driverLog = liblog.ClickHouse(log)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Logger:      driverLog,
		Addr:        cfg.ClickHouse.Addr,
		Auth:        clickhouse.Auth{Username: cfg.ClickHouse.User, Password: cfg.ClickHouse.Password.Reveal()},
		Compression: driverCompression(cfg.ClickHouse.Compression, cfg.ClickHouse.Addr),
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

// driverCompression is clickhouse.compression for clickhouse-go: none
// turns the query's compression flag off, as chnative does. The driver
// picks among addrs itself, so auto is none only when every one names
// this host (localhost or a loopback address); the inserts' own
// connections decide per connection (chnative.CompressionAuto).
func driverCompression(v string, addrs []string) *clickhouse.Compression {
	switch v {
	case config.CompressionZSTD:
		return &clickhouse.Compression{Method: clickhouse.CompressionZSTD}
	case config.CompressionNone:
		return &clickhouse.Compression{Method: clickhouse.CompressionNone}
	case config.CompressionAuto:
		if loopbackOnly(addrs) {
			return &clickhouse.Compression{Method: clickhouse.CompressionNone}
		}
	}
	return &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
}

// loopbackOnly reports whether every address is localhost or a loopback
// IP, without a DNS lookup.
func loopbackOnly(addrs []string) bool {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return false
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return len(addrs) > 0
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
