package source

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/failoverready"
)

// Server is what binlog2ch needs to know of the source server.
type Server struct {
	Flavor  string // mysql.MySQLFlavor or mysql.MariaDBFlavor
	Version string // SELECT VERSION()
	// ID is the server's identity, stored with the checkpoint: a binlog
	// position means nothing on another server.
	ID string
	// RawRows: row images may be decoded from the binlog bytes (not with
	// MariaDB's log_bin_compress, whose events go-mysql decompresses).
	RawRows bool
	// GTIDMode is whether the server writes GTIDs (always on MariaDB;
	// MySQL's gtid_mode ON); Failover is what following a failover
	// depends on (strict mode, log_slave_updates, the server's role).
	GTIDMode bool
	Failover failoverready.Settings
	// Collations maps the server's collation ids to their character sets:
	// the binlog names a text column's collation by id, and the ids above
	// 255 differ between MySQL and MariaDB.
	Collations map[uint64]string
	// NativeForeignKeys is MySQL 9.6+'s innodb_native_foreign_keys ("" on
	// servers without it): OFF means the server applies foreign keys above
	// InnoDB and writes their cascades' rows to the binlog.
	NativeForeignKeys string
}

// ForeignKeyNaming says how this server makes and names foreign keys
// (cascade.Keys' fields of the same names): inlineReferences, whether a
// column's REFERENCES makes a key; indexNamesKeys, whether a FOREIGN KEY
// clause's index name names the key when no CONSTRAINT symbol does.
func (s Server) ForeignKeyNaming() (inlineReferences, indexNamesKeys bool) {
	if s.Flavor == mysql.MariaDBFlavor {
		return true, true
	}
	major, minor, patch := versionNumbers(s.Version)
	return major >= 9, major < 8 || major == 8 && minor == 0 && patch < 16
}

// versionNumbers reads "8.0.36-log" as 8, 0, 36.
func versionNumbers(v string) (major, minor, patch int) {
	parts := strings.SplitN(v, ".", 3)
	num := func(i int) int {
		if i >= len(parts) {
			return 0
		}
		s := parts[i]
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		n, _ := strconv.Atoi(s[:end])
		return n
	}
	return num(0), num(1), num(2)
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
	srv.Flavor, srv.Version = mysql.MySQLFlavor, version
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
	// MySQL's compressed transactions (binlog_transaction_compression=ON)
	// are read like others (payload.go): nothing to check.
	// MariaDB's compressed binlog events need go-mysql to decompress them.
	var compress string
	srv.RawRows = true
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin_compress").Scan(&compress); err == nil && (compress == "1" || strings.EqualFold(compress, "ON")) {
		srv.RawRows = false
	}
	// Reading the binlog position needs REPLICATION CLIENT: say so at
	// start, not at the first snapshot or position check.
	var err error
	if _, err = CurrentPosition(ctx, db); err != nil {
		return srv, fmt.Errorf("MySQL %s as %s: %w. binlog2ch needs REPLICATION CLIENT (called BINLOG MONITOR on MariaDB 10.5+) and REPLICATION SLAVE: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the user, and SELECT on the replicated databases",
			cfg.MySQL.Addr, cfg.MySQL.User, err)
	}
	if srv.Collations, err = catalog.Collations(ctx, db); err != nil {
		return srv, fmt.Errorf("MySQL %s: %w", cfg.MySQL.Addr, err)
	}
	srv.Failover = failoverready.Read(ctx, db, srv.Flavor)
	srv.GTIDMode = srv.Failover.GTIDMode
	// Only MySQL 9.6+ has it; elsewhere InnoDB applies every key.
	var native string
	if db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_native_foreign_keys").Scan(&native) == nil {
		srv.NativeForeignKeys = "OFF"
		if native == "1" || strings.EqualFold(native, "ON") {
			srv.NativeForeignKeys = "ON"
		}
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
