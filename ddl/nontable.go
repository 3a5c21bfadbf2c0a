package ddl

import "strings"

// NonTableKind returns the kind of a query event's statement ("CREATE
// TRIGGER", "GRANT", ...) when it is one that cannot change a replicated
// table's rows or columns, so replication can pass it by without parsing
// it (binlog2ch_ddl_total{result="ignored"}), and "" for any other:
//
//   - CREATE [OR REPLACE], ALTER and DROP of a PROCEDURE, FUNCTION
//     (AGGREGATE too), TRIGGER, VIEW, EVENT, PACKAGE [BODY], USER, ROLE or
//     SERVER, with the DEFINER, ALGORITHM and SQL SECURITY clauses servers
//     write. A routine, trigger or event body is never looked at: defining
//     it changes no table, and what it changes when it runs reaches the
//     binlog as its own rows or statements.
//   - GRANT, REVOKE, SET PASSWORD, RENAME USER, FLUSH.
//   - ANALYZE, OPTIMIZE, CHECK and REPAIR TABLE (the table's definition
//     stays; OPTIMIZE's rebuild writes no rows).
//
// Only the statement's first words count, read past comments and through
// the versioned comments mysqldump writes (/*!50003 CREATE*/ /*!50017
// DEFINER=...*/ /*!50003 TRIGGER ...). A versioned comment a supported
// server might not have run (a version above 8.0.1, or MariaDB's /*M!) makes
// the answer "", as does anything not read with certainty: a statement
// wrongly passed by could hide a table change, one wrongly left to the
// parser costs a warning. A query event holds one statement: the server
// logs each statement of a multi-statement query on its own.
//
// Not here, whatever they do: transaction and XA statements and DML
// (handled elsewhere, or by a later issue's policy), and DATABASE
// statements (DROP DATABASE drops tables; CREATE OR REPLACE DATABASE too).
//
// The kind, not the statement, is what may be logged: account statements
// carry passwords (MariaDB logs CREATE USER ... IDENTIFIED BY 'plain text').
func NonTableKind(q string) string {
	l := &stmtLexer{s: q}
	switch verb := l.word(); verb {
	case "GRANT", "REVOKE", "FLUSH":
		return verb
	case "RENAME":
		if l.word() == "USER" {
			return "RENAME USER"
		}
	case "SET":
		if l.word() == "PASSWORD" {
			return "SET PASSWORD"
		}
	case "ANALYZE", "OPTIMIZE", "CHECK", "REPAIR":
		w := l.word()
		if w == "NO_WRITE_TO_BINLOG" || w == "LOCAL" {
			w = l.word()
		}
		if w == "TABLE" {
			return verb + " TABLE"
		}
	case "CREATE", "ALTER":
		if object := l.definesNoTable(verb == "CREATE"); object != "" {
			return verb + " " + object
		}
	case "DROP":
		if w := l.word(); noTableObjects[w] || w == "PACKAGE" {
			return "DROP " + w
		}
	}
	return ""
}

// noTableObjects are the objects whose CREATE, ALTER or DROP changes no
// table.
var noTableObjects = map[string]bool{"PROCEDURE": true, "FUNCTION": true, "TRIGGER": true, "VIEW": true, "EVENT": true,
	"USER": true, "ROLE": true, "SERVER": true}

// definesNoTable reads the rest of CREATE or ALTER up to the object's kind
// and returns it if it is no table ("" otherwise): [OR REPLACE] (CREATE
// only), then ALGORITHM = x, DEFINER = user and SQL SECURITY x in any
// order (ALGORITHM and SQL SECURITY only before VIEW).
func (l *stmtLexer) definesNoTable(create bool) string {
	w := l.word()
	if create && w == "OR" {
		if l.word() != "REPLACE" {
			return ""
		}
		w = l.word()
	}
	viewOnly := false
	for {
		switch w {
		case "ALGORITHM":
			if !l.punct('=') || l.word() == "" {
				return ""
			}
			viewOnly = true
		case "DEFINER":
			if !l.punct('=') || !l.user() {
				return ""
			}
		case "SQL":
			if l.word() != "SECURITY" {
				return ""
			}
			if s := l.word(); s != "DEFINER" && s != "INVOKER" {
				return ""
			}
			viewOnly = true
		default:
			switch {
			case viewOnly && w != "VIEW":
				return ""
			case w == "AGGREGATE":
				if create && l.word() == "FUNCTION" {
					return "FUNCTION"
				}
				return ""
			case w == "PACKAGE" && create, noTableObjects[w]:
				return w
			}
			return ""
		}
		w = l.word()
	}
}

// user reads an account name: CURRENT_USER[()], CURRENT_ROLE, or a name
// (quoted or not) with an optional @host.
func (l *stmtLexer) user() bool {
	t := l.next()
	switch {
	case t.kind == tokWord && (t.text == "CURRENT_USER" || t.text == "CURRENT_ROLE"):
		if l.peek().is(tokPunct, "(") {
			l.next()
			return l.punct(')')
		}
		return true
	case t.kind == tokWord, t.kind == tokQuoted:
	default:
		return false
	}
	if !l.peek().is(tokPunct, "@") {
		return true
	}
	l.next()
	switch t := l.next(); t.kind {
	case tokQuoted:
		return true
	case tokWord: // unquoted: localhost, 127.0.0.1, db.example.com
		for l.peek().is(tokPunct, ".") {
			l.next()
			if l.next().kind != tokWord {
				return false
			}
		}
		return true
	}
	return false
}

type tokKind int

const (
	tokEnd    tokKind = iota
	tokBad            // not read with certainty: unterminated, or a versioned comment that may not have run
	tokWord           // a keyword or unquoted name, upper-cased
	tokQuoted         // a quoted string or name
	tokPunct          // one other character
)

type token struct {
	kind  tokKind
	text  string // words upper-cased, quoted ones unquoted
	raw   string // a word as written
	quote byte   // a quoted token's quote character
	start int    // where it starts in the statement (words, quoted, punctuation)
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }

// walk hands fn each token to the statement's end with the depth of the
// parentheses open after it (a "(" counts itself, a ")" no longer), until
// fn returns false. It reports whether fn stopped it; l.i is then past
// the token fn stopped at.
func (l *stmtLexer) walk(fn func(t token, depth int) bool) bool {
	depth := 0
	for {
		t := l.next()
		switch {
		case t.kind == tokEnd || t.kind == tokBad:
			return false
		case t.is(tokPunct, "("):
			depth++
		case t.is(tokPunct, ")"):
			depth--
		}
		if !fn(t, depth) {
			return true
		}
	}
}

// stmtLexer reads the tokens of a statement's head.
type stmtLexer struct {
	s         string
	i         int
	versioned int // versioned comments open, read as code
}

// word is the next token if it is a word, else "".
func (l *stmtLexer) word() string {
	if t := l.next(); t.kind == tokWord {
		return t.text
	}
	return ""
}

// punct reads the next token and reports whether it is the character c.
func (l *stmtLexer) punct(c byte) bool { return l.next().is(tokPunct, string(c)) }

func (l *stmtLexer) peek() token {
	i, v := l.i, l.versioned
	t := l.next()
	l.i, l.versioned = i, v
	return t
}

func (l *stmtLexer) next() token {
	for l.i < len(l.s) {
		c, rest := l.s[l.i], l.s[l.i:]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.i++
		case c == '#' || strings.HasPrefix(rest, "--") && (len(rest) == 2 || rest[2] <= ' '):
			// To the end of the line ("--" needs a space or control after it).
			if n := strings.IndexByte(rest, '\n'); n >= 0 {
				l.i += n + 1
			} else {
				l.i = len(l.s)
			}
		case strings.HasPrefix(rest, "/*"):
			if !l.comment() {
				return token{kind: tokBad}
			}
		case l.versioned > 0 && strings.HasPrefix(rest, "*/"):
			l.versioned--
			l.i += 2
		case c == '`' || c == '\'' || c == '"':
			return l.quoted(c)
		case isWordByte(c):
			start := l.i
			for l.i < len(l.s) && isWordByte(l.s[l.i]) {
				l.i++
			}
			return token{kind: tokWord, text: strings.ToUpper(l.s[start:l.i]), raw: l.s[start:l.i], start: start}
		default:
			l.i++
			return token{kind: tokPunct, text: string(c), start: l.i - 1}
		}
	}
	return token{kind: tokEnd}
}

// comment passes a comment at l.i, or enters a versioned one whose content
// every supported server runs: /*! with no version or one up to 80001
// (MySQL 8.0.1, the first with binlog_row_metadata; every MariaDB is
// 100000 or more). It reports false for anything else.
func (l *stmtLexer) comment() bool {
	rest := l.s[l.i:]
	if strings.HasPrefix(rest, "/*!") {
		j := 3
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if digits := rest[3:j]; digits != "" && (len(digits) != 5 || digits > "80001") {
			return false
		}
		l.i += j
		l.versioned++
		return true
	}
	if strings.HasPrefix(rest, "/*M!") {
		return false // run by MariaDB (from a version) but not by MySQL
	}
	end := strings.Index(rest[2:], "*/")
	if end < 0 {
		return false
	}
	l.i += 2 + end + 2
	return true
}

// quoted reads a quoted string or name: a doubled quote stands for itself,
// and in strings a backslash escapes the next character.
func (l *stmtLexer) quoted(q byte) token {
	var b strings.Builder
	for i := l.i + 1; i < len(l.s); i++ {
		switch c := l.s[i]; {
		case c == q && i+1 < len(l.s) && l.s[i+1] == q:
			b.WriteByte(q)
			i++
		case c == q:
			start := l.i
			l.i = i + 1
			return token{kind: tokQuoted, text: b.String(), quote: q, start: start}
		case c == '\\' && q != '`' && i+1 < len(l.s):
			b.WriteByte(l.s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return token{kind: tokBad}
}

// isWordByte reports whether c may be part of an unquoted word (bytes of
// multi-byte UTF-8 characters included).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}
