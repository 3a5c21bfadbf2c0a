package ddl

import (
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Unparsed reads from the words of a statement the parser could
// not read (MariaDB syntax TiDB's parser lacks: INSERT ... RETURNING,
// CREATE OR REPLACE TABLE, ALTER TABLE ... CONVERT PARTITION) what it may
// do to tables that row events will not show:
//   - DML (INSERT, REPLACE, UPDATE, DELETE, LOAD DATA) changes rows
//     without row events: RowsByStatement for every table named after
//     INTO, UPDATE, FROM, JOIN or TABLE, read or written (more than it
//     writes, never fewer); one with an empty name when none could be
//     read, which stops replication whatever the tables.
//   - CONVERT PARTITION ... TO TABLE and CONVERT TABLE ... TO PARTITION
//     move rows between a table and a partition: PartitionRows for both.
//   - CREATE OR REPLACE TABLE drops the table it replaces: Drop (the new
//     table's rows, CREATE ... SELECT's too, come as row events).
//     CREATE OR REPLACE DATABASE drops every table in it: DropDatabase.
//
// Anything else is NotUnderstood, for each table it names: a table's
// ALTER, CREATE, DROP, TRUNCATE or RENAME, CREATE or DROP INDEX ... ON it
// (a TEMPORARY table's: nothing), but a CREATE TABLE with neither
// versioning nor foreign keys is a Create (a type the parser lacks, such
// as INET6: the table maps carry the columns). A statement whose words name no table
// gives one NotUnderstood with the names it mentions. Statements that
// show system versioning (SYSTEM VERSIONING, SYSTEM_TIME, ROW START or
// END) carry it as the Why, also a CREATE OR REPLACE TABLE's.
func Unparsed(defaultDB, q string) []Effect {
	l := &stmtLexer{s: q}
	switch verb := l.word(); verb {
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD":
		return l.dmlTables(defaultDB, verb)
	case "ALTER":
		if effects := l.convertPartition(defaultDB); len(effects) > 0 {
			return effects
		}
	case "CREATE":
		if l.word() == "OR" && l.word() == "REPLACE" {
			switch w := l.word(); w {
			case "TEMPORARY":
				return nil // temporary tables are not replicated
			case "TABLE":
				if l.peek().is(tokWord, "IF") {
					return nil // OR REPLACE with IF NOT EXISTS is refused by the server
				}
				if t, ok := l.tableName(defaultDB); ok {
					effects := []Effect{{Kind: Drop, Table: t}}
					if why := versioning(q); why != "" {
						effects = append(effects, Effect{Kind: NotUnderstood, Table: t, Why: why})
					}
					return effects
				}
			case "DATABASE", "SCHEMA":
				if !l.peek().is(tokWord, "IF") {
					if t, ok := l.tableName(""); ok && t.Database == "" {
						return []Effect{{Kind: DropDatabase, Table: schema.TableName{Database: t.Table}}}
					}
				}
			}
		}
	}
	return notUnderstood(defaultDB, q)
}

// Versioned is the Why of a statement that makes or changes a
// system-versioned table.
const Versioned = "system versioning"

// versioning returns Versioned when the words show system versioning.
func versioning(q string) string {
	l := &stmtLexer{s: q}
	var prev token
	for {
		t := l.next()
		switch {
		case t.kind == tokEnd || t.kind == tokBad:
			return ""
		case t.is(tokWord, "VERSIONING") && prev.is(tokWord, "SYSTEM"), t.is(tokWord, "SYSTEM_TIME"),
			(t.is(tokWord, "START") || t.is(tokWord, "END")) && prev.is(tokWord, "ROW"):
			return Versioned
		}
		prev = t
	}
}

// notUnderstood names the tables of a statement (see Unparsed).
func notUnderstood(defaultDB, q string) []Effect {
	l := &stmtLexer{s: q}
	var named []schema.TableName
	name := func() bool {
		t, ok := l.tableName(defaultDB)
		if ok {
			named = append(named, t)
		}
		return ok
	}
	skip := func(ws ...string) {
		for _, w := range ws {
			if l.peek().is(tokWord, w) {
				l.next()
			}
		}
	}
	onTable := func() { // [CREATE|DROP] ... INDEX ... ON t
		for {
			t := l.next()
			if t.kind == tokEnd || t.kind == tokBad {
				return
			}
			if t.is(tokWord, "ON") {
				name()
				return
			}
		}
	}
	switch l.word() {
	case "ALTER":
		skip("ONLINE", "IGNORE")
		if l.word() == "TABLE" {
			skip("IF", "EXISTS")
			if name() {
				l.renamedTo(defaultDB, &named)
			}
		}
	case "CREATE":
		skip("OR", "REPLACE")
		if l.peek().is(tokWord, "TEMPORARY") {
			return nil
		}
		skip("UNIQUE", "FULLTEXT", "SPATIAL", "VECTOR")
		switch l.word() {
		case "TABLE":
			ifNot := l.peek().is(tokWord, "IF")
			skip("IF", "NOT", "EXISTS")
			if t, ok := l.tableName(defaultDB); ok && versioning(q) == "" && len(referenceDecls(q)) == 0 {
				// A new table (a type the parser lacks): the table map
				// has its columns, as it has a parsed CREATE's. Only its
				// foreign keys, which cascade follows, would be missed.
				return []Effect{{Kind: Create, Table: t, IfNotExists: ifNot}}
			} else if ok {
				named = append(named, t)
			}
		case "INDEX":
			onTable()
		}
	case "DROP":
		switch l.word() {
		case "TEMPORARY":
			return nil
		case "TABLE", "TABLES":
			skip("IF", "EXISTS")
			for name() && l.peek().is(tokPunct, ",") {
				l.next()
			}
		case "INDEX":
			onTable()
		}
	case "TRUNCATE":
		skip("TABLE")
		name()
	case "RENAME":
		if w := l.word(); w == "TABLE" || w == "TABLES" {
			skip("IF", "EXISTS")
			for name() {
				for !l.peek().is(tokWord, "TO") && l.peek().kind != tokEnd && l.peek().kind != tokBad {
					l.next() // WAIT n, NOWAIT
				}
				l.next()
				if !name() || !l.peek().is(tokPunct, ",") {
					break
				}
				l.next()
			}
		}
	}
	why := versioning(q)
	if len(named) == 0 {
		return []Effect{{Kind: NotUnderstood, Mentions: mentions(defaultDB, q), Why: why}}
	}
	effects := make([]Effect, 0, len(named))
	for _, t := range named {
		effects = append(effects, Effect{Kind: NotUnderstood, Table: t, Why: why})
	}
	return effects
}

// renamedTo adds the tables an ALTER TABLE's remaining words rename it to
// or name after TABLE (EXCHANGE PARTITION ... WITH TABLE t).
func (l *stmtLexer) renamedTo(defaultDB string, named *[]schema.TableName) {
	l.walk(func(t token, depth int) bool {
		if depth != 0 || !(t.is(tokWord, "RENAME") || t.is(tokWord, "TABLE")) {
			return true
		}
		if t.text == "RENAME" {
			if p := l.peek(); p.is(tokWord, "COLUMN") || p.is(tokWord, "INDEX") || p.is(tokWord, "KEY") {
				return true
			}
			if p := l.peek(); p.is(tokWord, "TO") || p.is(tokWord, "AS") {
				l.next()
			}
		}
		if n, ok := l.tableName(defaultDB); ok {
			*named = append(*named, n)
		}
		return true
	})
}

// mentions are the names a statement's words hold that may be tables:
// each unquoted word that is no reserved word, and each backquoted name,
// in the default database or, before a dot, the database of the next.
func mentions(defaultDB, q string) []schema.TableName {
	reservedOnce.Do(func() {
		reserved = map[string]bool{}
		for _, k := range parser.Keywords {
			if k.Reserved {
				reserved[strings.ToUpper(k.Word)] = true
			}
		}
	})
	l := &stmtLexer{s: q}
	var out []schema.TableName
	add := func(t schema.TableName) {
		for _, o := range out {
			if o == t {
				return
			}
		}
		out = append(out, t)
	}
	for {
		t := l.peek()
		if t.kind == tokEnd || t.kind == tokBad {
			return out
		}
		if t.kind == tokWord && !reserved[t.text] && strings.Trim(t.text, "0123456789") != "" || t.kind == tokQuoted && t.quote == '`' {
			n, _ := l.tableName(defaultDB)
			add(n)
			continue
		}
		l.next()
	}
}

var (
	reservedOnce sync.Once
	reserved     map[string]bool
)

// dmlTables names the tables of a DML statement (see Unparsed).
func (l *stmtLexer) dmlTables(defaultDB, verb string) []Effect {
	var effects []Effect
	add := func(t schema.TableName) {
		for _, e := range effects {
			if e.Table == t {
				return
			}
		}
		effects = append(effects, Effect{Kind: RowsByStatement, Table: t})
	}
	modifiers := map[string]bool{"LOW_PRIORITY": true, "IGNORE": true, "QUICK": true, "DELAYED": true, "HIGH_PRIORITY": true}
	readList := func() {
		if l.peek().is(tokWord, "TABLE") { // LOAD DATA ... INTO TABLE t
			l.next()
		}
		for {
			t, ok := l.tableName(defaultDB)
			if !ok {
				return
			}
			add(t)
			// An alias, then maybe another table of a comma list.
			if p := l.peek(); p.is(tokWord, "AS") {
				l.next()
				l.next()
			} else if p.kind == tokWord && !tableListEnd[p.text] || p.kind == tokQuoted {
				l.next()
			}
			if !l.peek().is(tokPunct, ",") {
				return
			}
			l.next()
		}
	}
	if verb == "UPDATE" {
		for modifiers[l.peek().text] {
			l.next()
		}
		readList()
	}
	for {
		t := l.next()
		if t.kind == tokEnd || t.kind == tokBad {
			break
		}
		if t.kind == tokWord && (t.text == "INTO" || t.text == "FROM" || t.text == "JOIN" || t.text == "TABLE") {
			readList()
		}
	}
	if len(effects) == 0 {
		effects = append(effects, Effect{Kind: RowsByStatement})
	}
	return effects
}

// tableListEnd are words that follow a table in a list and are no alias.
var tableListEnd = map[string]bool{"SET": true, "WHERE": true, "VALUES": true, "VALUE": true, "SELECT": true, "JOIN": true,
	"LEFT": true, "RIGHT": true, "INNER": true, "CROSS": true, "STRAIGHT_JOIN": true, "NATURAL": true, "ON": true, "USING": true,
	"PARTITION": true, "ORDER": true, "LIMIT": true, "RETURNING": true, "FROM": true, "DEFAULT": true, "CHARACTER": true,
	"FIELDS": true, "COLUMNS": true, "LINES": true, "IGNORE": true, "WITH": true, "USE": true, "FORCE": true, "FOR": true}

// convertPartition reads ALTER [ONLINE] [IGNORE] TABLE t ... for MariaDB's
// CONVERT PARTITION p TO TABLE t2 and CONVERT TABLE t2 TO PARTITION p.
func (l *stmtLexer) convertPartition(defaultDB string) []Effect {
	w := l.word()
	for w == "ONLINE" || w == "IGNORE" {
		w = l.word()
	}
	if w != "TABLE" {
		return nil
	}
	t, ok := l.tableName(defaultDB)
	if !ok {
		return nil
	}
	var effects []Effect
	for {
		tok := l.next()
		if tok.kind == tokEnd || tok.kind == tokBad {
			return effects
		}
		if !tok.is(tokWord, "CONVERT") {
			continue
		}
		switch l.word() {
		case "PARTITION": // CONVERT PARTITION p TO TABLE t2
			l.next()
			if l.word() == "TO" && l.word() == "TABLE" {
				effects = append(effects, Effect{Kind: PartitionRows, Table: t})
				if t2, ok := l.tableName(defaultDB); ok {
					effects = append(effects, Effect{Kind: PartitionRows, Table: t2})
				}
			}
		case "TABLE": // CONVERT TABLE t2 TO PARTITION p
			effects = append(effects, Effect{Kind: PartitionRows, Table: t})
			if t2, ok := l.tableName(defaultDB); ok {
				effects = append(effects, Effect{Kind: PartitionRows, Table: t2})
			}
		}
	}
}

// tableName reads [db.]table, names unquoted or in backticks, as written
// (names are case-sensitive on most servers).
func (l *stmtLexer) tableName(defaultDB string) (schema.TableName, bool) {
	ident := func() (string, bool) {
		switch t := l.peek(); {
		case t.kind == tokWord:
			l.next()
			return t.raw, true
		case t.kind == tokQuoted && t.quote == '`':
			l.next()
			return t.text, true
		}
		return "", false
	}
	first, ok := ident()
	if !ok {
		return schema.TableName{}, false
	}
	if l.peek().is(tokPunct, ".") {
		l.next()
		second, ok := ident()
		if !ok {
			return schema.TableName{}, false
		}
		return schema.TableName{Database: first, Table: second}, true
	}
	return schema.TableName{Database: defaultDB, Table: first}, true
}
