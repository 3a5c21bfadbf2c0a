package schema

import "strings"

// TableName is a MySQL table.
type TableName struct{ Database, Table string }

func (n TableName) String() string { return n.Database + "." + n.Table }

// SystemDatabase reports whether db is one of the server's own databases,
// which are never replicated, whatever tables.include says.
func SystemDatabase(db string) bool { return systemDatabases[db] }

var systemDatabases = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// ParseTableName reads db.table as String writes it (a database name has
// no dot; a table name may).
func ParseTableName(s string) (TableName, bool) {
	db, table, ok := strings.Cut(s, ".")
	if !ok || db == "" || table == "" {
		return TableName{}, false
	}
	return TableName{Database: db, Table: table}, true
}
