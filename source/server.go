package source

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/config"
)

// Server is what binlog2ch needs to know of the source server.
type Server struct {
	Flavor string // mysql.MySQLFlavor or mysql.MariaDBFlavor
	// ID is the server's identity, stored with the checkpoint: a binlog
	// position means nothing on another server.
	ID string
	// RawRows: row images may be decoded from the binlog bytes (not with
	// MariaDB's log_bin_compress, whose events go-mysql decompresses).
	RawRows bool
}

// Inspect reads the source's flavour and identity and checks the binlog
// settings correctness depends on; a setting that is wrong is an error
// that says how to fix it.
func Inspect(ctx context.Context, db *sql.DB, cfg *config.Config) (Server, error) {
	var srv Server
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return srv, fmt.Errorf("MySQL %s: %w", cfg.MySQL.Addr, err)
	}
	srv.Flavor = mysql.MySQLFlavor
	if strings.Contains(strings.ToLower(version), "mariadb") {
		srv.Flavor = mysql.MariaDBFlavor
	}
	want := []struct{ variable, value, why string }{
		{"log_bin", "1", "the binary log must be on (log_bin)"},
		{"binlog_format", "ROW", "binlog_format must be ROW: SET GLOBAL binlog_format = 'ROW'"},
		{"binlog_row_image", "FULL", "binlog_row_image must be FULL (updates and deletes need every column): SET GLOBAL binlog_row_image = 'FULL'"},
		{"binlog_row_metadata", "FULL", "binlog_row_metadata must be FULL (the binlog then names each row's columns, so rows are read with the schema they were written with): SET GLOBAL binlog_row_metadata = 'FULL' (MySQL 8.0.1+, MariaDB 10.5+)"},
	}
	for _, w := range want {
		var v string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+w.variable).Scan(&v); err != nil {
			return srv, fmt.Errorf("MySQL %s: read %s: %w (%s)", cfg.MySQL.Addr, w.variable, err, w.why)
		}
		if !strings.EqualFold(v, w.value) && !(w.variable == "log_bin" && strings.EqualFold(v, "ON")) {
			return srv, fmt.Errorf("MySQL %s: %s is %s; %s", cfg.MySQL.Addr, w.variable, v, w.why)
		}
	}
	// MySQL's compressed transactions (TRANSACTION_PAYLOAD events) are not
	// handled yet: refuse them rather than skip their rows.
	var txCompression string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_transaction_compression").Scan(&txCompression); err == nil &&
		(txCompression == "1" || strings.EqualFold(txCompression, "ON")) {
		return srv, fmt.Errorf("MySQL %s: binlog_transaction_compression is ON; binlog2ch does not read compressed transactions yet: SET GLOBAL binlog_transaction_compression = OFF", cfg.MySQL.Addr)
	}
	// MariaDB's compressed binlog events need go-mysql to decompress them.
	var compress string
	srv.RawRows = true
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin_compress").Scan(&compress); err == nil && (compress == "1" || strings.EqualFold(compress, "ON")) {
		srv.RawRows = false
	}
	// Reading the binlog position needs REPLICATION CLIENT: say so at
	// start, not at the first snapshot or position check.
	if _, err := CurrentPosition(ctx, db); err != nil {
		return srv, fmt.Errorf("MySQL %s as %s: %w. binlog2ch needs REPLICATION CLIENT (called BINLOG MONITOR on MariaDB 10.5+) and REPLICATION SLAVE: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the user, and SELECT on the replicated databases",
			cfg.MySQL.Addr, cfg.MySQL.User, err)
	}
	var uuid string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_uuid").Scan(&uuid); err == nil && uuid != "" {
		srv.ID = "uuid:" + uuid
	} else {
		var id uint32
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_id").Scan(&id); err != nil {
			return srv, fmt.Errorf("MySQL %s: read server_id: %w", cfg.MySQL.Addr, err)
		}
		srv.ID = "server_id:" + strconv.FormatUint(uint64(id), 10)
	}
	return srv, nil
}
