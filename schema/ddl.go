package schema

import (
	"fmt"
	"strconv"
)

// The text of every ClickHouse statement binlog2ch runs against a target
// table, built here so that each one is a pure function of the target (its
// capabilities, options and cluster) and pinned per server profile by the
// golden files in testdata/ddl. sink and snapshot only decide when to run
// them.

// TableRef names a ClickHouse table and the cluster its DDL runs on (nil
// outside cluster mode), for statements about a table whose columns are not
// at hand: a MySQL DROP, TRUNCATE or RENAME names only the table.
type TableRef struct {
	Database, Name string
	Cluster        *Cluster
}

// Table is the ClickHouse table db.name under these options.
func (o Options) Table(db, name string) TableRef {
	return TableRef{Database: db, Name: name, Cluster: o.Cluster}
}

// Ref is the target's table.
func (t *Target) Ref() TableRef { return t.Options.Table(t.Database, t.Name) }

// ReadRef is the table to read the whole target from: the Distributed table
// in cluster mode, the table itself otherwise.
func (t *Target) ReadRef() TableRef { return t.Options.Table(t.Database, t.ReadName()) }

// Distributed is the Distributed table over r in cluster mode; ok is false
// outside it.
func (r TableRef) Distributed() (d TableRef, ok bool) {
	if r.Cluster == nil {
		return TableRef{}, false
	}
	return TableRef{Database: r.Database, Name: Options{Cluster: r.Cluster}.DistributedName(r.Name), Cluster: r.Cluster}, true
}

// String is `db`.`name`, as statements name the table.
func (r TableRef) String() string { return QuoteIdent(r.Database) + "." + QuoteIdent(r.Name) }

// OnCluster is " ON CLUSTER `name`" in cluster mode, "" otherwise.
func (r TableRef) OnCluster() string {
	if r.Cluster == nil {
		return ""
	}
	return " ON CLUSTER " + QuoteIdent(r.Cluster.Name)
}

// CreateDatabaseSQL creates the table's database, on every server of the
// cluster in cluster mode. The engine is the server's default (Atomic on
// current servers): a Replicated database refuses the explicit ZooKeeper
// arguments binlog2ch gives replicated tables (24.9+).
func (r TableRef) CreateDatabaseSQL() string {
	return "CREATE DATABASE IF NOT EXISTS " + QuoteIdent(r.Database) + r.OnCluster()
}

// DropSQL drops the table (MySQL's DROP TABLE, fullsync -recreate, a
// Distributed table recreated with new columns).
func (r TableRef) DropSQL() string { return "DROP TABLE IF EXISTS " + r.String() + r.OnCluster() }

// TruncateSQL empties the table (MySQL's TRUNCATE TABLE).
func (r TableRef) TruncateSQL() string {
	return "TRUNCATE TABLE IF EXISTS " + r.String() + r.OnCluster()
}

// RenameSQL renames the table to another in its database (MySQL's RENAME
// TABLE and ALTER TABLE ... RENAME). ClickHouse puts ON CLUSTER last here.
func (r TableRef) RenameSQL(to string) string {
	return "RENAME TABLE " + r.String() + " TO " + QuoteIdent(r.Database) + "." + QuoteIdent(to) + r.OnCluster()
}

// DeleteWhereSQL deletes the rows matching where with a mutation (ALTER
// TABLE ... DELETE, on every server since 18.16; asynchronous, so callers
// wait in system.mutations). binlog2ch uses no lightweight DELETE FROM
// (22.8+): a mutation works on every server it supports, and both paths
// that delete (partition maintenance, an interrupted copy's rows) are rare.
func (r TableRef) DeleteWhereSQL(where string) string {
	return "ALTER TABLE " + r.String() + r.OnCluster() + " DELETE WHERE " + where
}

// CreateDatabaseSQL creates the target's database.
func (t *Target) CreateDatabaseSQL() string { return t.Ref().CreateDatabaseSQL() }

// AddColumnSQL adds column c. def is its DEFAULT, a ClickHouse literal
// ("" for none: existing rows then read the type's default, as MySQL's rows
// do for a column without DEFAULT); after is the column it follows, so the
// table keeps MySQL's column order ("" to append it).
func (t *Target) AddColumnSQL(c TargetColumn, def, after string) string {
	s := "ALTER TABLE " + t.Ref().String() + t.OnCluster() + " ADD COLUMN " + QuoteIdent(c.Name) + " " + c.Type.String()
	if def != "" {
		if c.Type.Kind == CHUUID {
			def = "toUUID(" + def + ")" // 18.16 cannot CAST a string to Nullable(UUID)
		}
		s += " DEFAULT " + def
	}
	if after != "" {
		s += " AFTER " + QuoteIdent(after)
	}
	return s
}

// ModifyColumnSQL changes column c to its mapped type (MySQL's MODIFY
// COLUMN, or a type ClickHouse has otherwise than the mapping gives).
func (t *Target) ModifyColumnSQL(c TargetColumn) string {
	return "ALTER TABLE " + t.Ref().String() + t.OnCluster() + " MODIFY COLUMN " + QuoteIdent(c.Name) + " " + c.Type.String()
}

// DropColumnSQL drops a column MySQL dropped.
func (t *Target) DropColumnSQL(name string) string {
	return "ALTER TABLE " + t.Ref().String() + t.OnCluster() + " DROP COLUMN " + QuoteIdent(name)
}

// RenameColumnError: MySQL renamed a column and the server has no RENAME
// COLUMN. A drop and an add would lose the column's data, so binlog2ch
// stops and says how to do it by hand.
type RenameColumnError struct {
	From, To string
	Version  string // the ClickHouse server's
}

func (e *RenameColumnError) Error() string {
	return fmt.Sprintf("MySQL renamed column %s to %s, and ClickHouse %s cannot rename a column (RENAME COLUMN needs 20.4); renaming by drop and add would lose its data. Rename it by hand (add %s, copy %s into it, drop %s) and restart binlog2ch",
		e.From, e.To, e.Version, e.To, e.From, e.From)
}

// RenameColumnSQL renames a column (MySQL's RENAME COLUMN and CHANGE with a
// new name), or is a *RenameColumnError on servers without RENAME COLUMN.
func (t *Target) RenameColumnSQL(from, to string) (string, error) {
	if !t.Caps.RenameColumn {
		return "", &RenameColumnError{From: from, To: to, Version: t.Caps.Version}
	}
	return "ALTER TABLE " + t.Ref().String() + t.OnCluster() + " RENAME COLUMN " + QuoteIdent(from) + " TO " + QuoteIdent(to), nil
}

// DeleteCopyRowsSQL deletes the rows an interrupted copy of a changelog
// table wrote (they carry the copy's version and _op insert) before the
// copy scans the table again. It runs on the server binlog2ch is connected
// to only, without ON CLUSTER, as it always has.
func (t *Target) DeleteCopyRowsSQL(version uint64) string {
	local := t.Ref()
	local.Cluster = nil
	return local.DeleteWhereSQL(QuoteIdent(VersionColumn) + " = " + strconv.FormatUint(version, 10) +
		" AND " + QuoteIdent(OpColumn) + " = " + strconv.Itoa(int(OpInsert)))
}
