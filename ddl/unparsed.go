package ddl

import "github.com/binlog2ch/binlog2ch/schema"

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
//
// Anything else gives nothing: the table maps carry column changes.
func Unparsed(defaultDB, q string) []Effect {
	l := &stmtLexer{s: q}
	switch verb := l.word(); verb {
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD":
		return l.dmlTables(defaultDB, verb)
	case "ALTER":
		return l.convertPartition(defaultDB)
	case "CREATE":
		if l.word() == "OR" && l.word() == "REPLACE" {
			w := l.word()
			if w == "TEMPORARY" {
				return nil // temporary tables are not replicated
			}
			if w == "TABLE" {
				if l.peek().is(tokWord, "IF") {
					return nil // OR REPLACE with IF NOT EXISTS is refused by the server
				}
				if t, ok := l.tableName(defaultDB); ok {
					return []Effect{{Kind: Drop, Table: t}}
				}
			}
		}
	}
	return nil
}

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
