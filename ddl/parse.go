// Package ddl is the DDL language as replication reads it: what a query
// event's statement does to tables (Parse, with TiDB's parser; Unparsed,
// from the words of what that parser cannot read), the statements that
// change no table (NonTableKind), and the foreign keys a statement
// declares. It is pure: it must not read a server, hold the stream's state
// or decide what a writer does with an effect.
package ddl

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver" // also the parser's value driver

	"github.com/binlog2ch/binlog2ch/schema"
)

// Kind is a table-level change a writer applies in binlog order.
type Kind int

const (
	Truncate Kind = iota + 1
	Drop
	RenameTable
	RenameColumns
	// AddColumns: ADD COLUMN, applied when read (not at the table's
	// next rows), with the constant DEFAULTs MySQL fills existing rows
	// with.
	AddColumns
	// RowsByStatement: rows changed by a statement the binlog holds as
	// SQL text (binlog_format STATEMENT or MIXED in the session that ran
	// it), not as row events. A multi-table statement names every table it
	// touches, read or written: without resolving aliases, which it writes
	// is not known, and a table it may have written must not be missed.
	RowsByStatement
	// PartitionRows: rows removed or moved by partition maintenance
	// (TRUNCATE, DROP, EXCHANGE, REORGANIZE, COALESCE PARTITION), which
	// writes no row events.
	PartitionRows
	// Create: CREATE TABLE; a ClickHouse table of that name missing
	// since is new, not dropped by hand.
	Create
	// ForeignKeys: ALTER TABLE ... ADD or DROP FOREIGN KEY.
	ForeignKeys
	// Altered: an ALTER TABLE with none of the effects above (its column
	// changes the next table map shows; nothing for a writer to do): a
	// copy of the table under way must start over.
	Altered
	// DropDatabase: DROP DATABASE (Table.Database; Table.Table ""), which
	// drops every table in it and writes no statement per table.
	DropDatabase
	// Partitioning: a change of the table's partitioning (Partitioning;
	// partitions.go), after the statement's other effects on the table.
	Partitioning
	// NotUnderstood: a statement the parser cannot read (Unparsed) that
	// may change Table in ways neither its words nor the table maps show
	// (a column renamed, a default for the existing rows, versioning). Table
	// "" when the words name no table: Mentions are then every name they
	// hold that may be one. Why is a cause known from the words, if any.
	NotUnderstood
)

// Effect is what a DDL statement means for replication. Column adds,
// drops and type changes need no parsing: the next table-map event carries
// the new schema, and the writer follows it. Only what the table map cannot
// show is parsed: table drops, truncates and renames, and column renames
// (which the table map would show as a drop and an add, losing data).
type Effect struct {
	Kind     Kind
	Table    schema.TableName
	NewTable schema.TableName  // RenameTable
	Renames  map[string]string // RenameColumns
	Defaults map[string]string // AddColumns: column -> ClickHouse literal
	Added    []string          // AddColumns: the columns, in statement order
	// Unfilled (AddColumns) are the columns added whose values in the
	// existing rows neither the binlog carries nor a constant DEFAULT
	// gives: a non-constant DEFAULT (CURRENT_TIMESTAMP, (UUID())), a
	// generated column, AUTO_INCREMENT. The table must be copied again.
	Unfilled []string
	// PartitionRows: the operation (TRUNCATE, DROP, REORGANIZE,
	// COALESCE; OTHER, such as EXCHANGE, moves rows elsewhere) and the
	// partitions named ("" op: not read).
	PartitionOp string
	Partitions  []string
	// Create and ForeignKeys: the keys the statement declares (Name
	// "" for the server to name, Parent.Database "" for the child's
	// database); ForeignKeys: the keys it drops, by name. IfNotExists:
	// CREATE TABLE IF NOT EXISTS, which changes nothing when the table is
	// there.
	ForeignKeys     []ForeignKey
	DropForeignKeys []string
	IfNotExists     bool
	// Partitioning (Kind Partitioning): how the partitioning changes.
	Partitioning *PartitionChange
	// NotUnderstood: Mentions. NotUnderstood and RowsByStatement: Why, the
	// cause when the statement shows it.
	Mentions []schema.TableName
	Why      string
}

// Parse returns the effects of one query-event statement; ok is false
// when the parser cannot read it, also once MariaDB's words it refuses are
// rewritten (mariaDBWords).
func Parse(p *parser.Parser, defaultDB, query string) (effects []Effect, ok bool) {
	stmts, _, err := p.Parse(query, "", "")
	if err != nil {
		q, ok := mariaDBWords(query)
		if !ok {
			return nil, false
		}
		if stmts, _, err = p.Parse(q, "", ""); err != nil {
			return nil, false
		}
		query = q
	}
	name := func(t *ast.TableName) schema.TableName {
		db := t.Schema.O
		if db == "" {
			db = defaultDB
		}
		return schema.TableName{Database: db, Table: t.Name.O}
	}
	rowsBy := func(refs ...ast.Node) {
		for _, t := range tablesIn(refs...) {
			effects = append(effects, Effect{Kind: RowsByStatement, Table: name(t)})
		}
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.InsertStmt:
			rowsBy(s.Table) // the target; what a SELECT reads is not written
		case *ast.UpdateStmt:
			rowsBy(s.TableRefs)
		case *ast.DeleteStmt:
			rowsBy(s.TableRefs)
		case *ast.LoadDataStmt:
			rowsBy(s.Table)
		case *ast.CreateTableStmt:
			if s.TemporaryKeyword == ast.TemporaryNone {
				effects = append(effects, Effect{Kind: Create, Table: name(s.Table), IfNotExists: s.IfNotExists, ForeignKeys: createForeignKeys(s, query)})
				effects = append(effects, createPartitioning(s, name)...)
			}
		case *ast.DropTableStmt:
			if s.IsView {
				continue
			}
			for _, t := range s.Tables {
				effects = append(effects, Effect{Kind: Drop, Table: name(t)})
			}
		case *ast.TruncateTableStmt:
			effects = append(effects, Effect{Kind: Truncate, Table: name(s.Table)})
		case *ast.DropDatabaseStmt:
			effects = append(effects, Effect{Kind: DropDatabase, Table: schema.TableName{Database: s.Name.O}})
		case *ast.RenameTableStmt:
			for _, tt := range s.TableToTables {
				effects = append(effects, Effect{Kind: RenameTable, Table: name(tt.OldTable), NewTable: name(tt.NewTable)})
			}
		case *ast.AlterTableStmt:
			t := name(s.Table)
			before := len(effects)
			renames := map[string]string{}
			defaults := map[string]string{}
			var added, unfilled []string
			var rename *schema.TableName
			var fks Effect
			var inline []ForeignKey
			for _, spec := range s.Specs {
				switch spec.Tp {
				case ast.AlterTableAddConstraint:
					if c := spec.Constraint; c != nil && alterIgnore(query) && (c.Tp == ast.ConstraintPrimaryKey || c.Tp == ast.ConstraintUniq ||
						c.Tp == ast.ConstraintUniqKey || c.Tp == ast.ConstraintUniqIndex) {
						effects = append(effects, Effect{Kind: RowsByStatement, Table: t,
							Why: "ALTER IGNORE TABLE adding a unique key deletes the rows that duplicate it, without row events"})
					}
					if c := spec.Constraint; c != nil && c.Tp == ast.ConstraintForeignKey {
						if k, ok := foreignKeyOf(c.Name, c.Keys, c.Refer); ok {
							fks.ForeignKeys = append(fks.ForeignKeys, k)
						}
					}
				case ast.AlterTableDropForeignKey:
					fks.DropForeignKeys = append(fks.DropForeignKeys, spec.Name)
				case ast.AlterTableAddColumns:
					inline = append(inline, inlineForeignKeys(spec.NewColumns)...)
				}
				switch spec.Tp {
				case ast.AlterTableAddColumns:
					// MySQL fills existing rows with the new column's default;
					// ClickHouse does the same when the column is added with it.
					for _, col := range spec.NewColumns {
						added = append(added, col.Name.Name.O)
						for _, opt := range col.Options {
							switch opt.Tp {
							case ast.ColumnOptionDefaultValue:
								if lit, ok := defaultLiteral(opt.Expr); ok {
									defaults[col.Name.Name.O] = lit
								} else if !isNull(opt.Expr) {
									unfilled = append(unfilled, col.Name.Name.O)
								}
							case ast.ColumnOptionGenerated, ast.ColumnOptionAutoIncrement:
								unfilled = append(unfilled, col.Name.Name.O)
							}
						}
					}
				case ast.AlterTableRenameColumn:
					renames[spec.OldColumnName.Name.O] = spec.NewColumnName.Name.O
				case ast.AlterTableChangeColumn:
					if len(spec.NewColumns) > 0 && !strings.EqualFold(spec.OldColumnName.Name.O, spec.NewColumns[0].Name.Name.O) {
						renames[spec.OldColumnName.Name.O] = spec.NewColumns[0].Name.Name.O
					}
				case ast.AlterTableRenameTable:
					n := name(spec.NewTable)
					rename = &n
				case ast.AlterTableTruncatePartition, ast.AlterTableDropPartition, ast.AlterTableExchangePartition,
					ast.AlterTableReorganizePartition, ast.AlterTableCoalescePartitions,
					ast.AlterTableReorganizeFirstPartition, ast.AlterTableReorganizeLastPartition:
					ef := Effect{Kind: PartitionRows, Table: t, PartitionOp: "OTHER"}
					if spec.Tp == ast.AlterTableTruncatePartition || spec.Tp == ast.AlterTableDropPartition {
						ef.PartitionOp = "TRUNCATE"
						if spec.Tp == ast.AlterTableDropPartition {
							ef.PartitionOp = "DROP"
						}
						for _, n := range spec.PartitionNames {
							ef.Partitions = append(ef.Partitions, n.O)
						}
						if spec.OnAllPartitions {
							ef.PartitionOp = "OTHER" // TRUNCATE PARTITION ALL: every row
						}
					}
					switch spec.Tp {
					case ast.AlterTableReorganizePartition:
						ef.PartitionOp = "REORGANIZE"
						for _, n := range spec.PartitionNames {
							ef.Partitions = append(ef.Partitions, n.O)
						}
					case ast.AlterTableCoalescePartitions:
						ef.PartitionOp = "COALESCE"
					}
					effects = append(effects, ef)
					if spec.Tp == ast.AlterTableExchangePartition && spec.NewTable != nil {
						// The other table's rows are swapped too.
						effects = append(effects, Effect{Kind: PartitionRows, Table: name(spec.NewTable)})
					}
				}
			}
			if len(added) > 0 {
				effects = append(effects, Effect{Kind: AddColumns, Table: t, Defaults: defaults, Added: added, Unfilled: unfilled})
			}
			if len(renames) > 0 {
				effects = append(effects, Effect{Kind: RenameColumns, Table: t, Renames: renames})
			}
			if len(fks.ForeignKeys) > 0 || len(inline) > 0 {
				fks.ForeignKeys = declaredForeignKeys(fks.ForeignKeys, inline, query)
			}
			if len(fks.ForeignKeys) > 0 || len(fks.DropForeignKeys) > 0 {
				// Before a RENAME TABLE of the same statement: the keys are
				// the old name's, then move with it.
				fks.Kind, fks.Table = ForeignKeys, t
				effects = append(effects, fks)
			}
			if rename != nil {
				effects = append(effects, Effect{Kind: RenameTable, Table: t, NewTable: *rename})
			}
			if len(effects) == before {
				effects = append(effects, Effect{Kind: Altered, Table: t})
			}
			effects = append(effects, alterPartitioning(s.Specs, t, rename)...)
		}
	}
	return effects, true
}

// createForeignKeys are the keys a CREATE TABLE declares.
func createForeignKeys(s *ast.CreateTableStmt, query string) []ForeignKey {
	var clauses []ForeignKey
	for _, c := range s.Constraints {
		if c.Tp == ast.ConstraintForeignKey {
			if k, ok := foreignKeyOf(c.Name, c.Keys, c.Refer); ok {
				clauses = append(clauses, k)
			}
		}
	}
	return declaredForeignKeys(clauses, inlineForeignKeys(s.Cols), query)
}

// inlineForeignKeys are the keys of columns' REFERENCES, marked Inline:
// MariaDB makes them keys, MySQL before 9.0 ignores them.
func inlineForeignKeys(cols []*ast.ColumnDef) []ForeignKey {
	var keys []ForeignKey
	for _, col := range cols {
		for _, o := range col.Options {
			if o.Tp == ast.ColumnOptionReference && col.Name != nil {
				part := &ast.IndexPartSpecification{Column: col.Name}
				if k, ok := foreignKeyOf("", []*ast.IndexPartSpecification{part}, o.Refer); ok {
					k.Inline = true
					keys = append(keys, k)
				}
			}
		}
	}
	return keys
}

// declaredForeignKeys merges a statement's FOREIGN KEY clauses and column
// REFERENCES into the order of its text, the order InnoDB numbers unnamed
// keys in, and marks the clauses named by their index name.
func declaredForeignKeys(clauses, inline []ForeignKey, query string) []ForeignKey {
	if len(clauses)+len(inline) == 0 {
		return nil
	}
	decls := referenceDecls(query)
	if len(decls) != len(clauses)+len(inline) {
		return append(clauses, inline...) // the words did not tell: clauses first
	}
	keys := make([]ForeignKey, 0, len(decls))
	for _, d := range decls {
		if d.inline {
			keys, inline = append(keys, inline[0]), inline[1:]
			continue
		}
		k := clauses[0]
		clauses = clauses[1:]
		k.IndexName = !d.symbol && k.Name != ""
		keys = append(keys, k)
	}
	return keys
}

// referenceDecl is one REFERENCES of a statement, in text order: a
// column's (inline), or a FOREIGN KEY clause's, with or without a
// CONSTRAINT symbol before it.
type referenceDecl struct{ inline, symbol bool }

// referenceDecls reads a statement's REFERENCES from its words: the
// parser keeps column and table clauses apart, and does not say whether a
// key's name is a CONSTRAINT symbol or the index name.
func referenceDecls(query string) []referenceDecl {
	l := &stmtLexer{s: query}
	var out []referenceDecl
	var prev, prev2 token // the two tokens before
	clause, symbol := false, false
	for {
		t := l.next()
		switch {
		case t.kind == tokEnd || t.kind == tokBad:
			return out
		case t.is(tokWord, "FOREIGN") && !prev.is(tokWord, "DROP"):
			// CONSTRAINT sym FOREIGN: named; CONSTRAINT FOREIGN: not.
			clause, symbol = true, prev2.is(tokWord, "CONSTRAINT") && !prev.is(tokWord, "CONSTRAINT")
		case t.is(tokWord, "REFERENCES"):
			out = append(out, referenceDecl{inline: !clause, symbol: symbol})
			clause, symbol = false, false
		}
		prev2, prev = prev, t
	}
}

// tablesIn lists the tables named in the nodes, subqueries included.
func tablesIn(nodes ...ast.Node) []*ast.TableName {
	var c tableCollector
	for _, n := range nodes {
		if n != nil && !isNilNode(n) {
			n.Accept(&c)
		}
	}
	return c.tables
}

func isNilNode(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.TableRefsClause:
		return n == nil
	case *ast.TableName:
		return n == nil
	}
	return false
}

type tableCollector struct{ tables []*ast.TableName }

func (c *tableCollector) Enter(n ast.Node) (ast.Node, bool) {
	if t, ok := n.(*ast.TableName); ok {
		c.tables = append(c.tables, t)
	}
	return n, false
}

func (c *tableCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// isNull reports whether a DEFAULT is NULL, which ClickHouse's Nullable
// columns are filled with too.
func isNull(e ast.ExprNode) bool {
	for {
		p, ok := e.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	v, ok := e.(*test_driver.ValueExpr)
	return ok && v.Kind() == test_driver.KindNull
}

// defaultLiteral renders a constant DEFAULT as a ClickHouse string literal,
// which ClickHouse casts to the column's type. Expressions such as
// CURRENT_TIMESTAMP have no constant value and are left out.
func defaultLiteral(e ast.ExprNode) (string, bool) {
	neg := false
	for {
		switch x := e.(type) {
		case *ast.ParenthesesExpr:
			e = x.Expr
			continue
		case *ast.UnaryOperationExpr:
			if x.Op == opcode.Minus {
				neg, e = !neg, x.V
				continue
			}
			if x.Op == opcode.Plus {
				e = x.V
				continue
			}
		}
		break
	}
	v, ok := e.(*test_driver.ValueExpr)
	if !ok {
		return "", false
	}
	var s string
	switch v.Kind() {
	case test_driver.KindInt64:
		s = strconv.FormatInt(v.GetInt64(), 10)
	case test_driver.KindUint64:
		s = strconv.FormatUint(v.GetUint64(), 10)
	case test_driver.KindFloat32, test_driver.KindFloat64:
		s = strconv.FormatFloat(v.GetFloat64(), 'f', -1, 64)
	case test_driver.KindMysqlDecimal:
		s = v.GetMysqlDecimal().String()
	case test_driver.KindString, test_driver.KindBytes:
		if neg {
			return "", false // -'text' is an expression, not a constant we mirror
		}
		s = v.GetString()
	default:
		return "", false
	}
	if neg {
		if rest, ok := strings.CutPrefix(s, "-"); ok {
			s = rest
		} else {
			s = "-" + s
		}
	}
	return schema.QuoteString(s), true
}

// alterIgnore reports whether an ALTER TABLE is MariaDB's ALTER [ONLINE]
// IGNORE TABLE, which TiDB's parser reads without saying so: with a new
// unique key it deletes the rows that duplicate it, and logs no rows.
func alterIgnore(query string) bool {
	l := &stmtLexer{s: query}
	if l.word() != "ALTER" {
		return false
	}
	w := l.word()
	if w == "ONLINE" {
		w = l.word()
	}
	return w == "IGNORE"
}
