package cascade

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Text keys. InnoDB matches a child's key to its parent's by the column's
// collation: under utf8mb4_general_ci 'ABC' and 'abc ' are 'abc', under a
// PAD SPACE _bin collation 'abc ' is. The derivation matches byte for
// byte, so before a cascade's rows are written the Runner looks in
// ClickHouse for the child rows the two matches would tell apart: rows,
// as of before the event, whose key is not the parent's byte for byte but
// may equal it under the collation (a widening of the match that can only
// add rows), and asks MySQL whether each such value equals the parent's
// under the collation (a comparison of two values: it does not depend on
// the tables' state now). Any that does stops replication at the event:
// the cascade cannot be derived exactly. None: the byte match is MySQL's.

// Collation is a text column's character set and collation, as
// information_schema.COLUMNS names them.
type Collation struct{ Charset, Name string }

// noPad: trailing spaces count. In MariaDB the NO PAD collations are those
// named _nopad_ (PAD_ATTRIBUTE only from 12.1); in MySQL 8 the _0900_ ones.
func (c Collation) noPad() bool {
	n := strings.ToLower(c.Name)
	return strings.Contains(n, "nopad") || strings.Contains(n, "_0900_")
}

// exact: the collation compares bytes, trailing spaces included, so the
// byte match is the collation's.
func (c Collation) exact() bool {
	n := strings.ToLower(c.Name)
	return n == "" || n == "binary" || c.noPad() && strings.HasSuffix(n, "_bin")
}

// widen is an expression over a ClickHouse string (UTF-8) that is equal
// for any two values the collation says are equal; "" when binlog2ch knows
// none (every row is then a candidate).
func (c Collation) widen(x string) string {
	n := strings.ToLower(c.Name)
	// Trailing spaces only (trimRight is not in every ClickHouse).
	trimmed := "replaceRegexpOne(" + x + ", ' +$', '')"
	if c.noPad() {
		trimmed = x
	}
	switch {
	case strings.HasSuffix(n, "_bin"):
		// Code points (bytes) compared; PAD SPACE ignores trailing spaces.
		return trimmed
	case strings.Contains(n, "_general_") || strings.HasPrefix(n, "latin1_swedish_"):
		// One weight per character (no expansions, contractions or
		// ignorables): equal strings have as many characters.
		return "lengthUTF8(" + trimmed + ")"
	}
	return ""
}

// maxCandidates bounds the values a cascade asks MySQL to compare.
const maxCandidates = 1000

// Comparer asks the source whether pairs of values are equal under a
// collation.
type Comparer func(ctx context.Context, coll Collation, pairs [][2]string) ([]bool, error)

// MySQLComparer compares on db.
func MySQLComparer(db *sql.DB) Comparer {
	return func(ctx context.Context, coll Collation, pairs [][2]string) ([]bool, error) {
		out := make([]bool, 0, len(pairs))
		cs, name := schema.QuoteIdent(coll.Charset), schema.QuoteIdent(coll.Name)
		expr := "CONVERT(? USING " + cs + ") COLLATE " + name
		for len(pairs) > 0 {
			batch := pairs[:min(len(pairs), 200)]
			pairs = pairs[len(batch):]
			cols := make([]string, len(batch))
			args := make([]any, 0, 2*len(batch))
			for i, p := range batch {
				cols[i] = expr + " = " + expr
				args = append(args, p[0], p[1])
			}
			dest := make([]sql.NullInt64, len(batch))
			ptrs := make([]any, len(batch))
			for i := range dest {
				ptrs[i] = &dest[i]
			}
			if err := db.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", "), args...).Scan(ptrs...); err != nil {
				return nil, fmt.Errorf("compare key values under collation %s in MySQL: %w", coll.Name, err)
			}
			for _, d := range dest {
				out = append(out, d.Valid && d.Int64 == 1)
			}
		}
		return out, nil
	}
}

// LoadCollations reads the collations of the tables' text columns other
// than binary ones, by table and lower-case column name.
func LoadCollations(ctx context.Context, db *sql.DB, tables []schema.TableName) (map[schema.TableName]map[string]Collation, error) {
	out := map[schema.TableName]map[string]Collation{}
	if len(tables) == 0 {
		return out, nil
	}
	conds := make([]string, 0, len(tables))
	args := make([]any, 0, 2*len(tables))
	for _, t := range tables {
		out[t] = map[string]Collation{}
		conds = append(conds, "(TABLE_SCHEMA = ? AND TABLE_NAME = ?)")
		args = append(args, t.Database, t.Table)
	}
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS
		WHERE COLLATION_NAME IS NOT NULL AND COLLATION_NAME <> 'binary' AND (`+strings.Join(conds, " OR ")+")", args...)
	if err != nil {
		return nil, fmt.Errorf("read the collations of the cascade's key columns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var db, table, col, cs, coll string
		if err := rows.Scan(&db, &table, &col, &cs, &coll); err != nil {
			return nil, err
		}
		t := schema.TableName{Database: db, Table: table}
		if out[t] == nil {
			out[t] = map[string]Collation{}
		}
		out[t][strings.ToLower(col)] = Collation{Charset: cs, Name: coll}
	}
	return out, rows.Err()
}

// textColumns are node n's key columns whose collation is not byte-exact.
func (p *Plan) textColumns(n *node) []int {
	var out []int
	for i, c := range n.fk.Columns {
		if coll, ok := p.Collations[n.table][strings.ToLower(c)]; ok && !coll.exact() {
			out = append(out, i)
		}
	}
	return out
}

// checkCollations stops a cascade that MySQL matched by a collation to a
// child row the byte match misses (see above).
func (r *Runner) checkCollations(ctx context.Context, log *slog.Logger, b *builder) error {
	p := b.p
	for _, n := range p.nodes {
		if !b.live[n.id] {
			continue
		}
		text := p.textColumns(n)
		if len(text) == 0 {
			continue
		}
		if n.trace == nil {
			// Matched to the deleted rows of the level above (a subquery):
			// not compared here. Exact only when that level deletes none.
			sub, err := b.deletedRows(n.parent, n.fk.RefColumns)
			if err != nil {
				return &Error{At: p.ev.At, Table: p.ev.Table, Msg: err.Error()}
			}
			var count uint64
			if err := r.ch.CascadeQueryRow(ctx, log, "read a cascade's rows", "SELECT count() FROM ("+sub+")", &count); err != nil {
				return fmt.Errorf("binlog %s: cascade of %s: %w", p.ev.At, p.ev.Table, err)
			}
			if count > 0 {
				coll := p.Collations[n.table][strings.ToLower(n.fk.Columns[text[0]])]
				return &Error{At: p.ev.At, Table: p.ev.Table, Msg: fmt.Sprintf("key %s matches column %s of %s under collation %s (MySQL's match, not byte for byte) to rows the cascade deletes in %s; binlog2ch compares text keys by their collation only against the parent event's own values. Make the column's collation binary (a _bin NO PAD one, or VARBINARY), or exclude %s",
					n.fk, n.fk.Columns[text[0]], n.table, coll.Name, n.parent.table, n.table)}
			}
			continue
		}
		if err := r.checkRootMatch(ctx, log, b, n, text); err != nil {
			return err
		}
	}
	return nil
}

// checkRootMatch compares node n's candidate rows, those the widening
// matches to the parent's old values but the bytes do not, in MySQL.
func (r *Runner) checkRootMatch(ctx context.Context, log *slog.Logger, b *builder, n *node, text []int) error {
	p := b.p
	t := b.tables[n.table]
	cols, err := b.nodeColumns(n)
	if err != nil {
		return &Error{At: p.ev.At, Table: p.ev.Table, Msg: err.Error()}
	}
	var traced []int // key column indexes that carry root components
	var comps []int
	var tcols []chCol
	for i := range cols {
		if n.trace[i] >= 0 {
			traced = append(traced, i)
			comps = append(comps, n.trace[i])
			tcols = append(tcols, cols[i])
		}
	}
	olds, err := b.keySet(n.root, comps, tcols)
	if err != nil {
		return &Error{At: p.ev.At, Table: p.ev.Table, Msg: err.Error()}
	}
	for i, o := range olds {
		if len(comps) == 1 {
			olds[i] = "tuple(" + o + ")"
		}
	}
	// Per old value: every traced column widened-equal (text) or equal;
	// and not the byte match.
	var conds, outs []string
	var colls []Collation
	var names []string
	for k, i := range traced {
		c := schema.QuoteIdent(cols[i].name)
		o := "tupleElement(_b2c_o, " + strconv.Itoa(k+1) + ")"
		coll, isText := p.Collations[n.table][strings.ToLower(n.fk.Columns[i])]
		if !isText || coll.exact() {
			conds = append(conds, c+" = "+o)
			continue
		}
		if w := coll.widen(c); w != "" {
			conds = append(conds, w+" = "+coll.widen(o))
		}
		conds = append(conds, "isNotNull("+c+")")
		outs = append(outs, "toString(assumeNotNull("+c+"))", "toString("+o+")")
		colls = append(colls, coll)
		names = append(names, n.fk.Columns[i])
	}
	for i := range cols {
		if n.trace[i] < 0 {
			conds = append(conds, "isNotNull("+schema.QuoteIdent(cols[i].name)+")")
		}
	}
	var key []string
	for _, i := range traced {
		key = append(key, schema.QuoteIdent(cols[i].name))
	}
	keyTuple := "tuple(" + strings.Join(key, ", ") + ")"
	conds = append(conds, keyTuple+" != _b2c_o")
	// The as-of rows of every key whose row at any version the widening
	// reaches.
	var wide []string
	for k, i := range traced {
		coll, isText := p.Collations[n.table][strings.ToLower(n.fk.Columns[i])]
		if !isText || coll.exact() {
			continue
		}
		if w := coll.widen(schema.QuoteIdent(cols[i].name)); w != "" {
			var ws []string
			for _, o := range olds {
				ws = append(ws, coll.widen("tupleElement("+o+", "+strconv.Itoa(k+1)+")"))
			}
			wide = append(wide, w+" IN ("+strings.Join(ws, ", ")+")")
		}
	}
	filter := "1"
	if len(wide) > 0 {
		filter = strings.Join(wide, " AND ")
	}
	pairs := "tuple(" + strings.Join(outs, ", ") + ")"
	var arrays []string
	for i := range outs {
		arrays = append(arrays, "arrayMap(x -> tupleElement(x, "+strconv.Itoa(i+1)+"), _b2c_a)")
	}
	q := "SELECT " + strings.Join(arrays, ", ") + " FROM (SELECT groupArray(_b2c_p) AS _b2c_a FROM (SELECT DISTINCT " + pairs + " AS _b2c_p FROM (" +
		b.asOf(t, filter) + ") ARRAY JOIN [" + strings.Join(olds, ", ") + "] AS _b2c_o WHERE _b2c_del = 0 AND " + strings.Join(conds, " AND ") +
		" LIMIT " + strconv.Itoa(maxCandidates+1) + "))"
	vals := make([][]string, len(outs))
	dest := make([]any, len(outs))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := r.ch.CascadeQueryRow(ctx, log, "read a cascade's text-key candidates", q, dest...); err != nil {
		return fmt.Errorf("binlog %s: cascade of %s into %s: %w", p.ev.At, p.ev.Table, n.table, err)
	}
	rows := len(vals[0])
	if rows == 0 {
		return nil
	}
	if rows > maxCandidates {
		return &Error{At: p.ev.At, Table: p.ev.Table, Msg: fmt.Sprintf("key %s: %s has more than %d rows whose key column %s may equal the parent's under collation %s without being the same bytes; binlog2ch does not compare so many in MySQL, and cannot tell which rows InnoDB cascaded to. Make the column's collation binary (a _bin NO PAD one, or VARBINARY), or exclude %s",
			n.fk, n.table, maxCandidates, names[0], colls[0].Name, n.table)}
	}
	if p.Compare == nil {
		return &Error{At: p.ev.At, Table: p.ev.Table, Msg: fmt.Sprintf("key %s: no MySQL connection to compare %s's text keys under their collation", n.fk, n.table)}
	}
	// A candidate is MySQL's match when every text column equals.
	match := make([]bool, rows)
	for i := range match {
		match[i] = true
	}
	for k, coll := range colls {
		pp := make([][2]string, rows)
		for i := range pp {
			pp[i] = [2]string{vals[2*k][i], vals[2*k+1][i]}
		}
		eq, err := p.Compare(ctx, coll, pp)
		if err != nil {
			return fmt.Errorf("binlog %s: cascade of %s into %s: %w", p.ev.At, p.ev.Table, n.table, err)
		}
		for i := range match {
			match[i] = match[i] && eq[i]
		}
	}
	for i, m := range match {
		if !m {
			continue
		}
		return &Error{At: p.ev.At, Table: p.ev.Table, Msg: fmt.Sprintf("key %s: %s has a row whose %s is %q where the parent's was %q: MySQL's collation %s makes them equal, so InnoDB cascaded to it, and binlog2ch's derivation matches text keys byte for byte. Make the child's key the parent's exact bytes, or the column's collation binary (a _bin NO PAD one, or VARBINARY), or exclude %s",
			n.fk, n.table, names[0], vals[0][i], vals[1][i], colls[0].Name, n.table)}
	}
	return nil
}
