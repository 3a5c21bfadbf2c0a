package ddl

import "strings"

// mariaDBWords rewrites the MariaDB-only words of a DDL statement that
// TiDB's parser refuses into what it reads, with the same effects for
// replication; ok is false when it has nothing to rewrite. Each rewrite
// sits where MariaDB's documented syntax puts the words (ALTER TABLE,
// DROP TABLE, TRUNCATE, RENAME TABLE, CREATE and DROP INDEX), so a column
// or index of that name is never taken for them; a rewrite that misreads
// leaves a statement the parser still refuses, which is not understood:
//
//   - SET STATEMENT var = value [, ...] FOR stmt: stmt (the variables
//     last for the statement and change no table).
//   - ALTER ONLINE TABLE, ALTER TABLE IF EXISTS t, and WAIT n | NOWAIT after
//     the table names of ALTER, DROP and TRUNCATE TABLE, RENAME TABLE and
//     CREATE and DROP INDEX: how long to wait for a lock, and a table that
//     does not exist, which has nothing to replicate.
//   - RENAME COLUMN IF EXISTS, DROP FOREIGN KEY IF EXISTS, DROP CONSTRAINT
//     IF EXISTS: the plain forms. A column or key that does not exist is
//     renamed or dropped nowhere: the writer renames only a ClickHouse
//     column there is (chtables.RenameColumns), cascade reloads keys it
//     does not know. (CHANGE, MODIFY and DROP COLUMN IF EXISTS the parser
//     reads.)
//   - A column's INVISIBLE: the column is hidden from SELECT * but written
//     to the binlog like any other, and filled with its DEFAULT.
//   - The column types UUID, INET6 and INET4: BINARY(16) and BINARY(4),
//     as the binlog's table maps show them too (schema reads what they
//     are from information_schema).
//   - ALGORITHM = NOCOPY, an index's IGNORED and NOT IGNORED, SPATIAL
//     indexes, CREATE OR REPLACE INDEX: how the server does it, and
//     indexes, which replication does not follow.
func mariaDBWords(q string) (string, bool) {
	r := &rewriter{l: &stmtLexer{s: q}}
	r.statement()
	if len(r.cuts) == 0 {
		return "", false
	}
	var b strings.Builder
	at := 0
	for _, c := range r.cuts {
		b.WriteString(q[at:c.from])
		b.WriteString(" " + c.with + " ")
		at = c.to
	}
	b.WriteString(q[at:])
	return b.String(), true
}

type rewriter struct {
	l    *stmtLexer
	cuts []cut // in statement order
}

// cut replaces q[from:to] with with.
type cut struct {
	from, to int
	with     string
}

// take reads the next token and returns it with where it ends.
func (r *rewriter) take() (token, int) {
	t := r.l.next()
	return t, r.l.i
}

// peekWord reports whether the next token is the word w.
func (r *rewriter) peekWord(w string) bool { return r.l.peek().is(tokWord, w) }

// skip passes the word w if it comes next.
func (r *rewriter) skip(w string) {
	if r.peekWord(w) {
		r.take()
	}
}

// drop removes the next tokens, words ws in turn, if they are there.
func (r *rewriter) drop(ws ...string) bool {
	i, v := r.l.i, r.l.versioned
	var from, to int
	for n, w := range ws {
		t, end := r.take()
		if !t.is(tokWord, w) {
			r.l.i, r.l.versioned = i, v
			return false
		}
		if n == 0 {
			from = t.start
		}
		to = end
	}
	r.cuts = append(r.cuts, cut{from: from, to: to})
	return true
}

// wait drops WAIT n or NOWAIT if they come next.
func (r *rewriter) wait() {
	if r.drop("NOWAIT") {
		return
	}
	i, v := r.l.i, r.l.versioned
	t, _ := r.take()
	if t.is(tokWord, "WAIT") {
		n, end := r.take()
		if n.kind == tokWord && n.text != "" && strings.Trim(n.text, "0123456789") == "" {
			if p := r.l.peek(); p.is(tokPunct, ".") { // WAIT 1.5
				r.take()
				if f, e := r.take(); f.kind == tokWord {
					end = e
				}
			}
			r.cuts = append(r.cuts, cut{from: t.start, to: end})
			return
		}
	}
	r.l.i, r.l.versioned = i, v
}

// name passes a table name; false when there is none.
func (r *rewriter) name() bool {
	_, ok := r.l.tableName("")
	return ok
}

func (r *rewriter) statement() {
	switch r.l.word() {
	case "SET":
		r.setStatement()
	case "ALTER":
		r.alter()
	case "DROP":
		r.dropTable()
	case "TRUNCATE":
		r.skip("TABLE")
		if r.name() {
			r.wait()
		}
	case "RENAME":
		if r.l.word() != "TABLE" {
			return
		}
		for r.name() {
			r.wait()
			if r.l.word() != "TO" || !r.name() || !r.l.peek().is(tokPunct, ",") {
				return
			}
			r.take()
		}
	case "CREATE":
		r.create()
	}
}

// setStatement reads SET STATEMENT ... FOR and the statement after it.
func (r *rewriter) setStatement() {
	if !r.peekWord("STATEMENT") {
		return
	}
	r.l.walk(func(t token, depth int) bool {
		if depth == 0 && t.is(tokWord, "FOR") {
			r.cuts = append(r.cuts, cut{from: 0, to: r.l.i})
			r.statement()
			return false
		}
		return true
	})
}

// nameBefore are the words after which a word is a name, never one of the
// words rewritten.
// fixedBinTypes are MariaDB's column types the parser does not know, with
// the BINARY types they are stored as.
var fixedBinTypes = map[string]string{"UUID": "BINARY(16)", "INET6": "BINARY(16)", "INET4": "BINARY(4)"}

var nameBefore = map[string]bool{"COLUMN": true, "ADD": true, "CHANGE": true, "MODIFY": true, "DROP": true, "AFTER": true,
	"TO": true, "AS": true, "EXISTS": true, "RENAME": true, "KEY": true, "INDEX": true, "ALTER": true, "TABLE": true,
	"ON": true, "CONSTRAINT": true, "FOREIGN": true, "DEFAULT": true, "REFERENCES": true, "COMMENT": true, "LIKE": true}

func (r *rewriter) alter() {
	r.drop("ONLINE")
	r.skip("IGNORE")
	if r.l.word() != "TABLE" {
		return
	}
	r.drop("IF", "EXISTS")
	if !r.name() {
		return
	}
	r.wait()
	r.columnWords(0)
}

// columnWords rewrites the words of ALTER TABLE's specifications (depth
// 0) or CREATE TABLE's definitions (depth 1) to the statement's end.
func (r *rewriter) columnWords(at int) {
	var prev, prev2, prev3 token
	r.l.walk(func(t token, depth int) bool {
		end := r.l.i
		switch {
		case depth != at || t.kind != tokWord:
		case t.text == "EXISTS" && prev.is(tokWord, "IF") && (prev3.is(tokWord, "RENAME") && prev2.is(tokWord, "COLUMN") ||
			prev3.is(tokWord, "FOREIGN") && prev2.is(tokWord, "KEY") || prev3.is(tokWord, "DROP") && prev2.is(tokWord, "CONSTRAINT")):
			// (CHANGE, MODIFY, DROP COLUMN and DROP INDEX IF EXISTS the
			// parser reads.)
			r.cuts = append(r.cuts, cut{from: prev.start, to: end})
		case t.text == "NOCOPY" && (prev.is(tokWord, "ALGORITHM") || prev.is(tokPunct, "=") && prev2.is(tokWord, "ALGORITHM")):
			r.cuts = append(r.cuts, cut{from: t.start, to: end, with: "INPLACE"})
		case t.text == "INVISIBLE" && (prev.kind == tokWord && !nameBefore[prev.text] || prev.is(tokPunct, ")") || prev.kind == tokQuoted && prev.quote != '`') &&
			!prev2.is(tokWord, "INDEX") && !prev2.is(tokWord, "KEY"):
			// A column's, after its type, a default or a comment (or an
			// index's, which the parser reads and replication ignores).
			r.cuts = append(r.cuts, cut{from: t.start, to: end})
		case t.text == "IGNORED" && prev.is(tokWord, "NOT"):
			r.cuts = append(r.cuts, cut{from: prev.start, to: end, with: "VISIBLE"})
		case t.text == "IGNORED" && (prev.is(tokPunct, ")") || prev.kind == tokWord && !nameBefore[prev.text]):
			r.cuts = append(r.cuts, cut{from: t.start, to: end, with: "INVISIBLE"})
		case t.text == "SPATIAL" && prev.is(tokWord, "ADD"):
			r.cuts = append(r.cuts, cut{from: t.start, to: end})
		case fixedBinTypes[t.text] != "" && (prev.kind == tokWord && !nameBefore[prev.text] || prev.kind == tokQuoted && prev.quote == '`') &&
			!r.l.peek().is(tokPunct, "("):
			// A column's type: right after its name.
			r.cuts = append(r.cuts, cut{from: t.start, to: end, with: fixedBinTypes[t.text]})
		}
		prev3, prev2, prev = prev2, prev, t
		return true
	})
}

// dropTable reads DROP [TEMPORARY] TABLE [IF EXISTS] t [, t...] and DROP
// INDEX [IF EXISTS] i ON t.
func (r *rewriter) dropTable() {
	switch r.l.word() {
	case "TEMPORARY":
		if r.l.word() != "TABLE" {
			return
		}
		fallthrough
	case "TABLE":
		r.skip("IF")
		r.skip("EXISTS")
		for r.name() {
			if !r.l.peek().is(tokPunct, ",") {
				r.wait()
				return
			}
			r.take()
		}
	case "INDEX":
		r.index()
	}
}

// index reads the rest of DROP or CREATE INDEX: to ON t, its column list,
// then WAIT or NOWAIT.
func (r *rewriter) index() {
	for {
		t, _ := r.take()
		if t.kind == tokEnd || t.kind == tokBad || t.is(tokPunct, "(") {
			return
		}
		if t.is(tokWord, "ON") {
			break
		}
	}
	if !r.name() {
		return
	}
	if r.l.peek().is(tokPunct, "(") { // CREATE INDEX's columns
		if !r.l.walk(func(t token, depth int) bool { return !t.is(tokPunct, ")") || depth != 0 }) {
			return
		}
	}
	r.wait()
}

// create reads CREATE [OR REPLACE] [UNIQUE|FULLTEXT|SPATIAL] INDEX and
// CREATE [TEMPORARY] TABLE (OR REPLACE TABLE is read as a drop and a
// create from its words: Unparsed).
func (r *rewriter) create() {
	i, v := r.l.i, r.l.versioned
	if t, _ := r.take(); t.is(tokWord, "OR") {
		if p, _ := r.take(); !p.is(tokWord, "REPLACE") {
			return
		}
		if w := r.l.peek(); !(w.is(tokWord, "INDEX") || w.is(tokWord, "UNIQUE") || w.is(tokWord, "FULLTEXT") || w.is(tokWord, "SPATIAL")) {
			return
		}
		r.cuts = append(r.cuts, cut{from: t.start, to: r.l.i})
	} else {
		r.l.i, r.l.versioned = i, v
	}
	if r.peekWord("SPATIAL") {
		r.drop("SPATIAL")
	}
	r.skip("UNIQUE")
	r.skip("FULLTEXT")
	switch r.l.word() {
	case "INDEX":
		r.index()
	case "TEMPORARY":
		if r.l.word() == "TABLE" {
			r.columnWords(1)
		}
	case "TABLE":
		r.columnWords(1)
	}
}
