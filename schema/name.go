package schema

// TableName is a MySQL table.
type TableName struct{ Database, Table string }

func (n TableName) String() string { return n.Database + "." + n.Table }

// SystemDatabase reports whether db is one of the server's own databases,
// which are never replicated, whatever tables.include says.
func SystemDatabase(db string) bool { return systemDatabases[db] }

var systemDatabases = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}
