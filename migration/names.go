// Package migration knows the tables of online schema migrations by
// their names, as gh-ost and pt-online-schema-change name them: which
// table a migration's new or old table belongs to. It must not read a
// server or decide what replication does with them (replicator does).
package migration

// Online schema migrations: gh-ost and pt-online-schema-change fill a new
// table from the old one (INSERT ... SELECT in chunks) and keep it current
// (gh-ost applies the binlog's changes, pt-osc's triggers do), all of it
// row events of the new table in a ROW binlog, then swap it in with a
// RENAME. binlog2ch follows the new and old tables of a table it
// replicates as tables of its own, so the cut-over is a same-database
// rename of two replicated tables (replicator/statements.go) and the table needs no
// copy. What the tools do, from their sources:
//
//   - gh-ost (github/gh-ost), go/base/context.go: getSafeTableName names
//     "_<t>_<suffix>", cutting t so the name fits 64 characters.
//     GetGhostTableName: _<t>_gho. GetOldTableName: _<t>_del, with
//     --timestamp-old-table _<t>_<YYYYMMDDhhmmss>_del, under --revert
//     _<t>_rev_del (and the ghost is then the _<t>_del table).
//     GetChangelogTableName _<t>_ghc and GetCheckpointTableName _<t>_ghk
//     hold heartbeats, state and resume points, no rows of t: not
//     followed. With --force-table-names the names are built on another
//     name: not followed.
//   - gh-ost, go/logic/applier.go: CreateGhostTable ("create table _t_gho
//     like t"), AlterGhost, the row copy (insert ignore ... select) and
//     the binlog's changes applied (replace into, delete, update).
//     CreateAtomicCutOverSentryTable creates _<t>_del ("ghost-cut-over-
//     sentry"), AtomicCutOverMagicLock drops it ("drop table if exists")
//     while AtomicCutoverRename's "rename table t to _t_del, _t_gho to t"
//     waits: the binlog holds CREATE _t_del, DROP _t_del, the RENAME.
//     SwapTablesQuickAndBumpy (--cut-over=two-step) is "alter table t
//     rename _t_del", then "alter table _t_gho rename t". DropOldTable
//     runs only with --ok-to-drop-table.
//   - pt-online-schema-change (percona/percona-toolkit, bin/pt-online-
//     schema-change; Debian's 3.2.1 the same): create_new_table names
//     --new-table-name (default %T_new) with one more leading "_" at each
//     of up to 10 tries (_t_new, __t_new, ...), cut to 64 characters, and
//     creates it from SHOW CREATE TABLE; create_triggers adds AFTER
//     INSERT/UPDATE/DELETE triggers pt_osc_<db>_<t>_ins/_upd/_del that
//     REPLACE INTO and DELETE IGNORE FROM the new table; swap_tables runs
//     "RENAME TABLE t TO _t_old, _t_new TO t", with more leading "_" while
//     the old name is taken (9 tries, then random 6-character prefixes:
//     not followed); the old table is dropped after (DROP TABLE IF
//     EXISTS) unless --no-drop-old-table; drop_swap
//     (--alter-foreign-keys-method) drops t and renames _t_new to t.

import "strings"

// The tools, as metrics and logs name them.
const (
	Ghost = "gh-ost"
	PTOSC = "pt-osc"
)

// Table is what a table's name says of the online schema migration
// it belongs to.
type Table struct {
	Base string // the migrated table, in the same database
	Tool string // Ghost or PTOSC
	// New: the table being filled and swapped in (gh-ost's ghost,
	// pt-osc's new table); otherwise the old table the original is
	// renamed to (or gh-ost's cut-over sentry of that name).
	New bool
}

// Role names the table's part in log lines.
func (m Table) Role() string {
	if m.New {
		return "new"
	}
	return "old"
}

// PTOSCMaxPrefix is how many leading underscores pt-osc's names get at
// most (create_new_table's 10 tries).
const PTOSCMaxPrefix = 10

// Of lists the migrations a table's name may belong to:
// "__t_new" is pt-osc's first try for _t, or its second for t. Names of
// other tables give none.
func Of(table string) []Table {
	if !strings.HasPrefix(table, "_") {
		return nil
	}
	var out []Table
	add := func(base, tool string, isNew bool) {
		if base != "" {
			out = append(out, Table{Base: base, Tool: tool, New: isNew})
		}
	}
	name := table[1:]
	switch {
	case strings.HasSuffix(name, "_gho"):
		add(strings.TrimSuffix(name, "_gho"), Ghost, true)
	case strings.HasSuffix(name, "_del"):
		base := strings.TrimSuffix(name, "_del")
		if b, ok := strings.CutSuffix(base, "_rev"); ok {
			add(ghostTimestamp(b), Ghost, false)
			add(b, Ghost, false)
		}
		add(ghostTimestamp(base), Ghost, false)
		add(base, Ghost, false)
	case strings.HasSuffix(name, "_new"), strings.HasSuffix(name, "_old"):
		isNew := strings.HasSuffix(name, "_new")
		base := table[:len(table)-len("_new")]
		for i := 1; i <= PTOSCMaxPrefix && i < len(base) && base[i-1] == '_'; i++ {
			add(base[i:], PTOSC, isNew)
		}
	}
	return out
}

// ghostTimestamp is t of "t_YYYYMMDDhhmmss" (gh-ost's
// --timestamp-old-table), "" for other names.
func ghostTimestamp(name string) string {
	const digits = 14
	i := len(name) - digits - 1
	if i < 1 || name[i] != '_' {
		return ""
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return name[:i]
}
