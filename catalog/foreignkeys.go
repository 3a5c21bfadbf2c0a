package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// ForeignKeys reads every foreign key of the server's tables (the system
// databases' aside) from information_schema, in order of child table and
// name, and every base table, those without keys too.
func ForeignKeys(ctx context.Context, db *sql.DB) (keys []ddl.ForeignKey, tables []schema.TableName, err error) {
	type ruleKey struct{ db, table, name string }
	rules := map[ruleKey][2]ddl.FKAction{}
	rows, err := db.QueryContext(ctx, `SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, DELETE_RULE, UPDATE_RULE
		FROM information_schema.REFERENTIAL_CONSTRAINTS`)
	if err != nil {
		return nil, nil, fmt.Errorf("read foreign keys (information_schema.REFERENTIAL_CONSTRAINTS): %w", err)
	}
	for rows.Next() {
		var k ruleKey
		var del, upd string
		if err := rows.Scan(&k.db, &k.table, &k.name, &del, &upd); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read foreign keys: %w", err)
		}
		rules[k] = [2]ddl.FKAction{ddl.ParseFKAction(del), ddl.ParseFKAction(upd)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read foreign keys: %w", err)
	}
	rows, err = db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'`)
	if err != nil {
		return nil, nil, fmt.Errorf("read foreign keys (information_schema.TABLES): %w", err)
	}
	for rows.Next() {
		var t schema.TableName
		if err := rows.Scan(&t.Database, &t.Table); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read foreign keys: %w", err)
		}
		if !schema.SystemDatabase(t.Database) {
			tables = append(tables, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read foreign keys: %w", err)
	}
	rows, err = db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME,
		REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
		FROM information_schema.KEY_COLUMN_USAGE WHERE REFERENCED_TABLE_NAME IS NOT NULL
		ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`)
	if err != nil {
		return nil, nil, fmt.Errorf("read foreign keys (information_schema.KEY_COLUMN_USAGE): %w", err)
	}
	defer rows.Close()
	cur := -1
	for rows.Next() {
		var db, table, name, col, refDB, refTable, refCol string
		if err := rows.Scan(&db, &table, &name, &col, &refDB, &refTable, &refCol); err != nil {
			return nil, nil, fmt.Errorf("read foreign keys: %w", err)
		}
		if schema.SystemDatabase(db) {
			continue
		}
		child := schema.TableName{Database: db, Table: table}
		if cur < 0 || keys[cur].Child != child || keys[cur].Name != name {
			r, ok := rules[ruleKey{db, table, name}]
			if !ok {
				continue // not a foreign key of a table (or gone meanwhile)
			}
			keys = append(keys, ddl.ForeignKey{Name: name, Child: child, Parent: schema.TableName{Database: refDB, Table: refTable}, OnDelete: r[0], OnUpdate: r[1]})
			cur = len(keys) - 1
		}
		keys[cur].Columns = append(keys[cur].Columns, col)
		keys[cur].RefColumns = append(keys[cur].RefColumns, refCol)
	}
	return keys, tables, rows.Err()
}

// TextCollations reads the collations other than binary ones of the
// tables' text columns, as "db.table.column" -> collation.
func TextCollations(ctx context.Context, db *sql.DB, tables []schema.TableName) (map[string]string, error) {
	out := map[string]string{}
	if len(tables) == 0 {
		return out, nil
	}
	conds := make([]string, 0, len(tables))
	args := make([]any, 0, 2*len(tables))
	for _, t := range tables {
		conds = append(conds, "(TABLE_SCHEMA = ? AND TABLE_NAME = ?)")
		args = append(args, t.Database, t.Table)
	}
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS
		WHERE COLLATION_NAME IS NOT NULL AND COLLATION_NAME <> 'binary' AND COLLATION_NAME NOT LIKE '%\_bin' AND (`+strings.Join(conds, " OR ")+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var db, table, col, coll string
		if err := rows.Scan(&db, &table, &col, &coll); err != nil {
			return nil, err
		}
		out[schema.TableName{Database: db, Table: table}.String()+"."+col] = coll
	}
	return out, rows.Err()
}
