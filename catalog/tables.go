package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// ListTables returns the source's base tables that the config selects, in
// name order.
func ListTables(ctx context.Context, db *sql.DB, cfg *config.Config) ([]schema.TableName, error) {
	return listOfType(ctx, db, cfg, "BASE TABLE", "list tables")
}

// AllTables returns the source's base tables, selected or not, of every
// database but the server's own, in name order: what ClickHouse tables are
// compared with to tell a table MySQL lacks from one the config leaves out.
func AllTables(ctx context.Context, db *sql.DB) ([]schema.TableName, error) {
	return listOfType(ctx, db, nil, "BASE TABLE", "list tables")
}

// listOfType returns the tables of one information_schema TABLE_TYPE that
// cfg selects (a nil cfg: all), in name order; what names the list in
// errors.
func listOfType(ctx context.Context, db *sql.DB, cfg *config.Config, tableType, what string) ([]schema.TableName, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_TYPE = ? ORDER BY TABLE_SCHEMA, TABLE_NAME`, tableType)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []schema.TableName
	for rows.Next() {
		var t schema.TableName
		if err := rows.Scan(&t.Database, &t.Table); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if !schema.SystemDatabase(t.Database) && (cfg == nil || cfg.Replicates(t.Database, t.Table)) {
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// EstimateRows returns MySQL's estimates of the tables' row counts
// (information_schema.TABLES.TABLE_ROWS; InnoDB's are approximate), read
// with one statement per thousand tables. A table without an estimate is
// left out.
func EstimateRows(ctx context.Context, db *sql.DB, tables []schema.TableName) (map[schema.TableName]uint64, error) {
	out := make(map[schema.TableName]uint64, len(tables))
	want := make(map[schema.TableName]bool, len(tables))
	names := make([]schema.TableName, 0, len(tables))
	for _, t := range tables {
		if !want[t] {
			want[t] = true
			names = append(names, schema.TableName{Database: t.Database, Table: t.Table})
		}
	}
	for start := 0; start < len(names); start += 1000 {
		where, args := schema.NameFilter(names[start:min(start+1000, len(names))], "TABLE_SCHEMA", "TABLE_NAME")
		rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES WHERE "+where, args...)
		if err != nil {
			return nil, fmt.Errorf("estimate the rows of %d tables: %w", len(tables), err)
		}
		for rows.Next() {
			var t schema.TableName
			var n sql.NullInt64
			if err := rows.Scan(&t.Database, &t.Table, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("estimate the rows of %d tables: %w", len(tables), err)
			}
			if want[t] && n.Valid {
				out[t] = uint64(max(n.Int64, 0))
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("estimate the rows of %d tables: %w", len(tables), err)
		}
	}
	return out, nil
}

// systemVersioned is MariaDB's TABLE_TYPE of a system-versioned table,
// which ListTables' 'BASE TABLE' leaves out.
const systemVersioned = "SYSTEM VERSIONED"

// ListVersioned returns the system-versioned tables the config selects
// (MariaDB's information_schema.TABLES.TABLE_TYPE 'SYSTEM VERSIONED'; none
// on MySQL), in name order. binlog2ch refuses them: their DELETEs and
// UPDATEs keep history rows that MySQL's SELECT does not show.
func ListVersioned(ctx context.Context, db *sql.DB, cfg *config.Config) ([]schema.TableName, error) {
	return listOfType(ctx, db, cfg, systemVersioned, "list system-versioned tables")
}

// Versioned returns those of tables that are system-versioned, in name
// order, read with one statement per thousand tables.
func Versioned(ctx context.Context, db *sql.DB, tables []schema.TableName) ([]schema.TableName, error) {
	want := make(map[schema.TableName]bool, len(tables))
	var names []schema.TableName
	for _, t := range tables {
		t = schema.TableName{Database: t.Database, Table: t.Table}
		if !want[t] {
			want[t] = true
			names = append(names, t)
		}
	}
	var out []schema.TableName
	for start := 0; start < len(names); start += 1000 {
		where, args := schema.NameFilter(names[start:min(start+1000, len(names))], "TABLE_SCHEMA", "TABLE_NAME")
		rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = ? AND "+where,
			append([]any{systemVersioned}, args...)...)
		if err != nil {
			return nil, fmt.Errorf("check %d tables for system versioning: %w", len(names), err)
		}
		for rows.Next() {
			var t schema.TableName
			if err := rows.Scan(&t.Database, &t.Table); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check %d tables for system versioning: %w", len(names), err)
			}
			if want[t] {
				out = append(out, t)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("check %d tables for system versioning: %w", len(names), err)
		}
	}
	slices.SortFunc(out, func(a, b schema.TableName) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}
