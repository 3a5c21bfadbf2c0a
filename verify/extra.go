package verify

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/router"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
)

// ExtraTable is a ClickHouse table of binlog2ch's in a replicated database
// that no replicated MySQL table writes: one whose MySQL table was dropped
// or renamed out of the set, or is excluded now. Its rows are no longer
// kept in step with MySQL, so whoever reads it reads stale rows.
type ExtraTable struct {
	ClickHouseDatabase string `json:"clickhouse_database"`
	ClickHouseTable    string `json:"clickhouse_table"`
	Engine             string `json:"engine"`
	// MySQL is the MySQL table it is the copy of by its name (db.table).
	MySQL string `json:"mysql"`
	// InMySQL is set when MySQL has that table but the config does not
	// replicate it.
	InMySQL bool   `json:"in_mysql"`
	Reason  string `json:"reason"`
	// Also lists the table's Distributed table and current-state view,
	// left over with it.
	Also []string `json:"also,omitempty"`
}

func (x *ExtraTable) name() string { return x.ClickHouseDatabase + "." + x.ClickHouseTable }

// chTable is a row of system.tables.
type chTable struct {
	name, engine string
	versioned    bool // has binlog2ch's version column
}

// extraTables lists the ClickHouse tables of binlog2ch's in the databases
// the config replicates into that no replicated MySQL table writes, within
// patterns (none: all). A table is binlog2ch's when the registry in
// state_dir lists it or it has the version column binlog2ch adds (so a
// verify without the daemon's state_dir still finds them); a table of the
// user's own in the same database is neither and is left alone.
func (v *verifier) extraTables(ctx context.Context, patterns []string) ([]*ExtraTable, error) {
	all, err := catalog.AllTables(ctx, v.my)
	if err != nil {
		return nil, err
	}
	// The MySQL databases replicated, by their ClickHouse database: those
	// with tables, and those the config names though MySQL has none left
	// (their ClickHouse tables are all extra).
	byCH := map[string][]string{}
	seenDB := map[string]bool{}
	addDB := func(db string) {
		if seenDB[db] || schema.SystemDatabase(db) || !v.cfg.SelectsDatabase(db) {
			return
		}
		seenDB[db] = true
		ch := v.cfg.ClickHouseDatabase(db)
		byCH[ch] = append(byCH[ch], db)
	}
	for _, t := range all {
		addDB(t.Database)
	}
	for db := range v.cfg.ClickHouse.DatabaseMap {
		addDB(db)
	}
	for _, p := range v.cfg.Tables.Include {
		if db, _, _ := strings.Cut(p, "."); !strings.ContainsAny(db, `*?[\`) {
			addDB(db)
		}
	}
	// What each ClickHouse name is the table of, and the names binlog2ch
	// writes or keeps for a replicated table.
	// The router's predicate: online schema migrations' new and old tables
	// of a selected table are replicated too.
	sel := router.NewSelection(v.cfg)
	mysqlOf := map[string]schema.TableName{}
	expected := map[string]bool{}
	opts := v.cfg.SchemaOptions()
	for _, t := range all {
		if !seenDB[t.Database] {
			continue
		}
		db, name := v.tableOf(t)
		mysqlOf[db+"."+name] = t
		if !sel.Replicates(t) {
			continue
		}
		expected[db+"."+name] = true
		expected[db+"."+name+schema.ViewSuffix] = true
		if d := opts.DistributedName(name); d != "" {
			expected[db+"."+d] = true
		}
	}
	if v.cfg.State.Store == config.StoreClickHouse {
		expected[v.cfg.State.Table] = true
	}
	reg, err := chtables.LoadRegistry(v.cfg.StateDir)
	if err != nil {
		// The version column still tells binlog2ch's tables.
		v.log.Warn("verify: cannot read the registry of the tables binlog2ch created; telling its tables by their columns", "error", err)
		reg = nil
	}

	chDBs := make([]string, 0, len(byCH))
	for db := range byCH {
		chDBs = append(chDBs, db)
	}
	sort.Strings(chDBs)
	var out []*ExtraTable
	for _, chdb := range chDBs {
		tables, err := v.clickhouseTables(ctx, chdb)
		if err != nil {
			return nil, err
		}
		registered := reg.Registered(chdb)
		found := map[string]*ExtraTable{}
		var extras []*ExtraTable
		for _, t := range tables {
			if expected[chdb+"."+t.name] || isWorkTable(t.name) {
				continue
			}
			if !t.versioned && !slices.Contains(registered, t.name) || strings.HasSuffix(t.engine, "View") {
				continue // not a copy of a MySQL table: the user's own
			}
			x := &ExtraTable{ClickHouseDatabase: chdb, ClickHouseTable: t.name, Engine: t.engine}
			found[t.name] = x
			extras = append(extras, x)
		}
		// A leftover table's Distributed table and view are reported with
		// it, not as tables of their own.
		keep := extras[:0]
		for _, x := range extras {
			if local, ok := v.localOf(x, found); ok {
				local.Also = append(local.Also, x.name())
				continue
			}
			keep = append(keep, x)
		}
		for _, t := range tables {
			if base, ok := strings.CutSuffix(t.name, schema.ViewSuffix); ok && found[base] != nil && found[t.name] == nil {
				found[base].Also = append(found[base].Also, chdb+"."+t.name)
			}
		}
		for _, x := range keep {
			names := v.mysqlNames(chdb, x.ClickHouseTable, byCH[chdb], mysqlOf)
			if len(patterns) > 0 && !slices.ContainsFunc(names, func(n schema.TableName) bool {
				return config.MatchPatterns(patterns, n.Database, n.Table)
			}) {
				continue
			}
			v.explain(x, names[0], mysqlOf)
			out = append(out, x)
		}
	}
	return out, nil
}

// tableOf is the ClickHouse table MySQL table t replicates into.
func (v *verifier) tableOf(t schema.TableName) (db, name string) {
	db, name = v.cfg.ClickHouseDatabase(t.Database), t.Table
	if o := v.cfg.TableOptions(t.Database, t.Table); o.Name != "" {
		name = o.Name
	}
	return db, name
}

// isWorkTable reports whether name is one of an online copy's tables:
// the shadow being filled, or the old table a swap set aside.
func isWorkTable(name string) bool {
	return strings.HasSuffix(name, snapshot.ShadowName("")) || strings.HasSuffix(name, chtables.OldSuffix)
}

// localOf is the extra table whose Distributed table x is, in a cluster.
func (v *verifier) localOf(x *ExtraTable, found map[string]*ExtraTable) (*ExtraTable, bool) {
	if x.Engine != "Distributed" {
		return nil, false
	}
	opts := v.cfg.SchemaOptions()
	for name, local := range found {
		if local != x && opts.DistributedName(name) == x.ClickHouseTable {
			return local, true
		}
	}
	return nil, false
}

// mysqlNames are the MySQL tables ClickHouse table chdb.name is the copy
// of by its name: the one MySQL has, or else one per MySQL database
// replicated into chdb (tables.overrides' names undone).
func (v *verifier) mysqlNames(chdb, name string, dbs []string, mysqlOf map[string]schema.TableName) []schema.TableName {
	if t, ok := mysqlOf[chdb+"."+name]; ok {
		return []schema.TableName{t}
	}
	sort.Strings(dbs)
	out := make([]schema.TableName, 0, len(dbs))
	for _, db := range dbs {
		t := schema.TableName{Database: db, Table: name}
		for key, o := range v.cfg.Tables.Overrides {
			if d, table, _ := strings.Cut(key, "."); d == db && o.Name == name {
				t.Table = table
			}
		}
		out = append(out, t)
	}
	return out
}

// explain sets what x is the leftover of, and what to do about it.
func (v *verifier) explain(x *ExtraTable, my schema.TableName, mysqlOf map[string]schema.TableName) {
	x.MySQL = my.String()
	drop := fmt.Sprintf("DROP TABLE %s.%s", schema.QuoteIdent(x.ClickHouseDatabase), schema.QuoteIdent(x.ClickHouseTable))
	if v.cfg.ClickHouse.Cluster != "" {
		drop += " ON CLUSTER " + schema.QuoteIdent(v.cfg.ClickHouse.Cluster)
	}
	if len(x.Also) > 0 {
		drop += " (and " + strings.Join(x.Also, ", ") + ")"
	}
	if t, ok := mysqlOf[x.name()]; ok && t == my {
		x.InMySQL = true
		why := "no tables.include pattern selects it"
		for i, p := range v.cfg.Tables.Exclude {
			if config.MatchPatterns([]string{p}, my.Database, my.Table) {
				why = fmt.Sprintf("tables.exclude[%d] %q excludes it", i, p)
				break
			}
		}
		x.Reason = fmt.Sprintf("MySQL table %s is not replicated (%s), so binlog2ch no longer writes this copy of it: drop it in ClickHouse (%s) if its rows are not needed, or select the table again in tables.include/exclude (binlog2ch then copies it afresh)", my, why, drop)
		return
	}
	x.Reason = fmt.Sprintf("MySQL has no table %s: it was renamed out of the replicated set (the daemon's log names the new name) or dropped while binlog2ch was not following, and its ClickHouse table stayed, no longer written. Drop it in ClickHouse (%s) if its rows are not needed, or select the MySQL table's new name in tables.include (binlog2ch copies it afresh, into a table of that name)", my, drop)
}

// clickhouseTables lists database db's tables in ClickHouse.
func (v *verifier) clickhouseTables(ctx context.Context, db string) ([]chTable, error) {
	rows, err := v.ch.Query(ctx, "SELECT name, engine, name IN (SELECT table FROM system.columns WHERE database = ? AND name = ?) FROM system.tables WHERE database = ? ORDER BY name",
		db, schema.VersionColumn, db)
	if err != nil {
		return nil, fmt.Errorf("ClickHouse: list the tables of database %s: %w", db, err)
	}
	defer rows.Close()
	var out []chTable
	for rows.Next() {
		var t chTable
		var versioned uint8
		if err := rows.Scan(&t.name, &t.engine, &versioned); err != nil {
			return nil, fmt.Errorf("ClickHouse: list the tables of database %s: %w", db, err)
		}
		t.versioned = versioned == 1
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ClickHouse: list the tables of database %s: %w", db, err)
	}
	return out, nil
}
