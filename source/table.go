package source

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/binlog2ch/binlog2ch/config"
)

// SystemDatabase reports whether db is one of the server's own databases,
// which are never replicated, whatever tables.include says.
func SystemDatabase(db string) bool { return systemDatabases[db] }

var systemDatabases = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// TableName is a MySQL table.
type TableName struct{ Database, Table string }

func (t TableName) String() string { return t.Database + "." + t.Table }

// ListTables returns the source's base tables that the config selects, in
// name order.
func ListTables(ctx context.Context, db *sql.DB, cfg *config.Config) ([]TableName, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []TableName
	for rows.Next() {
		var t TableName
		if err := rows.Scan(&t.Database, &t.Table); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		if !SystemDatabase(t.Database) && cfg.Replicates(t.Database, t.Table) {
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return out, nil
}
