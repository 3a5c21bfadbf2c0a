package ddl

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/binlog2ch/binlog2ch/schema"
)

// A table's partitioning as statements change it, for partition
// maintenance applied by bounds: the layout must be the one of the
// statement's time, so it is read from the binlog's DDL, not from
// information_schema (which shows the layout of now).

// PartitionChangeOp is how a statement changes a table's partitioning.
type PartitionChangeOp int

const (
	// PartitionsDefine: CREATE TABLE or ALTER TABLE ... PARTITION BY;
	// Layout is the table's whole layout.
	PartitionsDefine PartitionChangeOp = iota + 1
	// PartitionsRemove: ALTER TABLE ... REMOVE PARTITIONING.
	PartitionsRemove
	// PartitionsLike: CREATE TABLE ... LIKE Like, which copies its
	// partitioning.
	PartitionsLike
	// PartitionsAdd: ADD PARTITION; Layout.Parts are the partitions added
	// (none for HASH or KEY's ADD PARTITION PARTITIONS Count).
	PartitionsAdd
	// PartitionsReorganize: REORGANIZE PARTITION Names INTO Layout.Parts.
	PartitionsReorganize
	// PartitionsCoalesce: COALESCE PARTITION Count (HASH, KEY).
	PartitionsCoalesce
)

// PartitionChange is one statement's change of a table's partitioning
// (Effect.Partitioning, Kind Partitioning). DROP PARTITION is not one: the
// PartitionRows effect names the partitions.
type PartitionChange struct {
	Op     PartitionChangeOp
	Layout PartitionLayout
	Names  []string         // Reorganize: the partitions replaced
	Count  int              // Add, Coalesce: HASH or KEY partitions added or removed
	Like   schema.TableName // Like
	// Inexact says why the new layout cannot be told from the statement
	// as information_schema would show it ("" when it can).
	Inexact string
}

// PartitionLayout is a partitioning as information_schema.PARTITIONS
// shows it: PARTITION_METHOD, PARTITION_EXPRESSION, and each partition's
// name and PARTITION_DESCRIPTION.
type PartitionLayout struct {
	Method, Expr string
	Parts        []PartitionDef
}

// PartitionDef is a partition's name and VALUES text.
type PartitionDef struct{ Name, Desc string }

// createPartitioning is a CREATE TABLE's partitioning effect, if it has one.
func createPartitioning(s *ast.CreateTableStmt, name func(*ast.TableName) schema.TableName) []Effect {
	t := name(s.Table)
	switch {
	case s.ReferTable != nil:
		return []Effect{{Kind: Partitioning, Table: t, Partitioning: &PartitionChange{Op: PartitionsLike, Like: name(s.ReferTable)}}}
	case s.Partition != nil:
		pc := partitionOptions(s.Partition)
		return []Effect{{Kind: Partitioning, Table: t, Partitioning: &pc}}
	}
	return nil
}

// alterPartitioning is the partitioning effects of an ALTER TABLE's specs,
// on the table's new name when the statement renames it (its RenameTable
// effect comes first).
func alterPartitioning(specs []*ast.AlterTableSpec, t schema.TableName, renamed *schema.TableName) []Effect {
	if renamed != nil {
		t = *renamed
	}
	var out []Effect
	add := func(pc PartitionChange) {
		out = append(out, Effect{Kind: Partitioning, Table: t, Partitioning: &pc})
	}
	for _, spec := range specs {
		switch spec.Tp {
		case ast.AlterTablePartition:
			if spec.Partition != nil {
				add(partitionOptions(spec.Partition))
			} else {
				add(PartitionChange{Op: PartitionsDefine, Inexact: "PARTITION BY without a partitioning"})
			}
		case ast.AlterTableRemovePartitioning:
			add(PartitionChange{Op: PartitionsRemove})
		case ast.AlterTableAddPartitions:
			pc := PartitionChange{Op: PartitionsAdd, Count: int(spec.Num)}
			pc.Layout.Parts, pc.Inexact = partitionDefs(spec.PartDefinitions)
			add(pc)
		case ast.AlterTableReorganizePartition:
			pc := PartitionChange{Op: PartitionsReorganize}
			for _, n := range spec.PartitionNames {
				pc.Names = append(pc.Names, n.O)
			}
			pc.Layout.Parts, pc.Inexact = partitionDefs(spec.PartDefinitions)
			add(pc)
		case ast.AlterTableCoalescePartitions:
			add(PartitionChange{Op: PartitionsCoalesce, Count: int(spec.Num)})
		case ast.AlterTableDropFirstPartition, ast.AlterTableAddLastPartition,
			ast.AlterTableReorganizeFirstPartition, ast.AlterTableReorganizeLastPartition:
			// TiDB's own syntax; a MySQL or MariaDB binlog has none of it.
			add(PartitionChange{Op: PartitionsDefine, Inexact: "TiDB's FIRST/LAST PARTITION syntax"})
		}
	}
	return out
}

// partitionOptions is a PARTITION BY clause's layout.
func partitionOptions(p *ast.PartitionOptions) PartitionChange {
	pc := PartitionChange{Op: PartitionsDefine}
	m := &pc.Layout
	var cols []string
	for _, c := range p.ColumnNames {
		cols = append(cols, quoteName(c.Name.O))
	}
	switch p.Tp {
	case ast.PartitionTypeRange, ast.PartitionTypeList:
		m.Method = p.Tp.String()
		if len(cols) > 0 {
			m.Method += " COLUMNS"
			m.Expr = strings.Join(cols, ",")
		} else if m.Expr = partitionExpr(p.Expr); m.Expr == "" {
			pc.Inexact = "a partitioning expression other than a column, TO_DAYS() or YEAR() of one"
		}
	case ast.PartitionTypeHash, ast.PartitionTypeKey:
		// No bounds to delete by: the method is what matters.
		m.Method = p.Tp.String()
		if p.Linear {
			m.Method = "LINEAR " + m.Method
		}
		m.Expr = strings.Join(cols, ",")
		if p.Expr != nil {
			m.Expr = partitionExpr(p.Expr)
		}
		if len(p.Definitions) == 0 {
			n := max(int(p.Num), 1)
			for i := range n {
				m.Parts = append(m.Parts, PartitionDef{Name: "p" + strconv.Itoa(i)})
			}
			return pc
		}
	default:
		return PartitionChange{Op: PartitionsDefine, Inexact: "partitioning by " + p.Tp.String()}
	}
	parts, inexact := partitionDefs(p.Definitions)
	m.Parts = parts
	if pc.Inexact == "" {
		pc.Inexact = inexact
	}
	return pc
}

// partitionExpr is a RANGE or LIST expression as information_schema
// prints it, "" when it is none binlog2ch reads exactly.
func partitionExpr(e ast.ExprNode) string {
	switch x := e.(type) {
	case *ast.ColumnNameExpr:
		return quoteName(x.Name.Name.O)
	case *ast.FuncCallExpr:
		if fn := x.FnName.L; (fn == "to_days" || fn == "year") && len(x.Args) == 1 {
			if c, ok := x.Args[0].(*ast.ColumnNameExpr); ok {
				return fn + "(" + quoteName(c.Name.Name.O) + ")"
			}
		}
	}
	return ""
}

func quoteName(n string) string { return "`" + strings.ReplaceAll(n, "`", "``") + "`" }

// partitionDefs are partition definitions with their VALUES as
// information_schema prints them; inexact says why one cannot be read.
func partitionDefs(defs []*ast.PartitionDefinition) ([]PartitionDef, string) {
	var out []PartitionDef
	inexact := ""
	for _, d := range defs {
		desc, err := partitionValues(d.Clause)
		if err != nil && inexact == "" {
			inexact = fmt.Sprintf("partition %s: %v", d.Name.O, err)
		}
		out = append(out, PartitionDef{Name: d.Name.O, Desc: desc})
	}
	return out, inexact
}

// partitionValues is a VALUES LESS THAN or VALUES IN clause's text as
// PARTITION_DESCRIPTION holds it.
func partitionValues(c ast.PartitionDefinitionClause) (string, error) {
	switch c := c.(type) {
	case *ast.PartitionDefinitionClauseNone:
		return "", nil // HASH and KEY partitions
	case *ast.PartitionDefinitionClauseLessThan:
		var vs []string
		for _, e := range c.Exprs {
			v, err := boundText(e, true)
			if err != nil {
				return "", err
			}
			vs = append(vs, v)
		}
		return strings.Join(vs, ","), nil
	case *ast.PartitionDefinitionClauseIn:
		if len(c.Values) == 0 {
			return "", fmt.Errorf("a DEFAULT partition")
		}
		var vs []string
		null := false
		for _, tuple := range c.Values {
			if len(tuple) != 1 {
				return "", fmt.Errorf("values of several columns")
			}
			v, err := boundText(tuple[0], false)
			if err != nil {
				return "", err
			}
			if v == "NULL" {
				null = true // the server prints it first
				continue
			}
			vs = append(vs, v)
		}
		if null {
			vs = append([]string{"NULL"}, vs...)
		}
		return strings.Join(vs, ","), nil
	}
	return "", fmt.Errorf("a partition clause other than VALUES LESS THAN or VALUES IN")
}

var dateLiteral = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})( \d{2}:\d{2}:\d{2})?$`)

// boundText is one bound: an integer, MAXVALUE, NULL, a quoted string,
// or TO_DAYS() of a date, which the server stores evaluated.
func boundText(e ast.ExprNode, lessThan bool) (string, error) {
	neg := false
	for {
		if u, ok := e.(*ast.UnaryOperationExpr); ok && (u.Op == opcode.Minus || u.Op == opcode.Plus) {
			neg = neg != (u.Op == opcode.Minus)
			e = u.V
			continue
		}
		if p, ok := e.(*ast.ParenthesesExpr); ok {
			e = p.Expr
			continue
		}
		break
	}
	switch x := e.(type) {
	case *ast.MaxValueExpr:
		if lessThan && !neg {
			return "MAXVALUE", nil
		}
	case *ast.FuncCallExpr:
		if x.FnName.L == "to_days" && len(x.Args) == 1 && !neg {
			if v, ok := x.Args[0].(*test_driver.ValueExpr); ok && (v.Kind() == test_driver.KindString || v.Kind() == test_driver.KindBytes) {
				if d, ok := toDays(v.GetString()); ok {
					return strconv.FormatInt(d, 10), nil
				}
			}
		}
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindInt64:
			n := x.GetInt64()
			if neg {
				n = -n
			}
			return strconv.FormatInt(n, 10), nil
		case test_driver.KindUint64:
			if !neg {
				return strconv.FormatUint(x.GetUint64(), 10), nil
			}
		case test_driver.KindNull:
			if !lessThan && !neg {
				return "NULL", nil
			}
		case test_driver.KindString, test_driver.KindBytes:
			if s := x.GetString(); !neg && dateLiteral.MatchString(s) {
				// Only dates: the server prints other strings with its
				// own escapes and character set introducers.
				return "'" + s + "'", nil
			}
		}
	}
	var b strings.Builder
	_ = e.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &b))
	return "", fmt.Errorf("the bound %s is not an integer, a date or TO_DAYS() of a date", b.String())
}

// toDays is MySQL's TO_DAYS of a date text: days since year 0, 719528
// being 1970-01-01 (proleptic Gregorian, as MySQL counts).
func toDays(s string) (int64, bool) {
	m := dateLiteral.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	y, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	d, _ := strconv.Atoi(m[3])
	t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
	if y < 1000 || t.Year() != y || int(t.Month()) != mo || t.Day() != d {
		return 0, false // out of range, or not a date (2024-02-30)
	}
	return t.Unix()/86400 + 719528, true
}

// UnparsedPartitioning names the tables whose partitioning a statement
// the parser cannot read may change: an ALTER TABLE whose words include
// PARTITION or PARTITIONING, and any CREATE TABLE (its PARTITION BY is
// not read). A name without a database has Database "": the statement's
// default database is not known here.
func UnparsedPartitioning(q string) []schema.TableName {
	l := &stmtLexer{s: q}
	switch l.word() {
	case "ALTER":
		w := l.word()
		for w == "ONLINE" || w == "IGNORE" {
			w = l.word()
		}
		if w != "TABLE" {
			return nil
		}
		t, ok := l.tableName("")
		if !ok {
			return nil
		}
		for {
			tok := l.next()
			if tok.kind == tokEnd {
				return nil
			}
			// A word not read with certainty may be PARTITION.
			if tok.kind == tokBad || tok.is(tokWord, "PARTITION") || tok.is(tokWord, "PARTITIONING") {
				return []schema.TableName{t}
			}
		}
	case "CREATE":
		for w := l.word(); w != ""; w = l.word() {
			if w == "TEMPORARY" {
				return nil
			}
			if w == "TABLE" {
				if l.peek().is(tokWord, "IF") {
					l.word()
					l.word()
					l.word()
				}
				if t, ok := l.tableName(""); ok {
					return []schema.TableName{t}
				}
				return nil
			}
		}
	}
	return nil
}
