package chtables

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/schema"
)

var (
	bareColumn = regexp.MustCompile("^`((?:[^`]|``)+)`$")
	funcColumn = regexp.MustCompile("^(?i)(to_days|year)\\(`((?:[^`]|``)+)`\\)$")
)

// PartitionsWhere is the ClickHouse condition selecting the rows of the named
// partitions of target t, or an error saying why it cannot be had: only
// RANGE and LIST partitions (COLUMNS too, on one column) of a column, or of
// YEAR() or TO_DAYS() of a Date or DateTime column, with integer or date
// bounds, translate exactly.
func PartitionsWhere(p *catalog.Partitions, names []string, t *schema.Target) (string, error) {
	expr, typ, err := partitionExpr(p, t)
	if err != nil {
		return "", err
	}
	var conds []string
	for _, name := range names {
		i := -1
		for j, part := range p.Parts {
			if strings.EqualFold(part.Name, name) {
				i = j
			}
		}
		if i < 0 {
			return "", fmt.Errorf("partition %s is not among the table's %d partitions as binlog2ch followed its DDL to this position", name, len(p.Parts))
		}
		c, err := partitionCond(p, i, expr, typ)
		if err != nil {
			return "", err
		}
		conds = append(conds, "("+c+")")
	}
	if len(conds) == 0 {
		return "", fmt.Errorf("no partition named")
	}
	return strings.Join(conds, " OR "), nil
}

// partitionExpr is the partitioning expression over ClickHouse's columns, and
// the type of the column it is of when it is the column itself.
func partitionExpr(p *catalog.Partitions, t *schema.Target) (string, schema.CHType, error) {
	var none schema.CHType
	column := func(quoted string) (string, schema.CHType, error) {
		name := strings.ReplaceAll(quoted, "``", "`")
		for _, c := range t.Columns {
			if c.Name == name && c.Meta == schema.MetaNone {
				return schema.QuoteIdent(name), c.Type, nil
			}
		}
		return "", schema.CHType{}, fmt.Errorf("the partitioning column %s is not in ClickHouse", name)
	}
	switch p.Method {
	case "RANGE", "LIST", "RANGE COLUMNS", "LIST COLUMNS":
	default:
		return "", none, fmt.Errorf("%s partitioning has no bounds binlog2ch can delete by", p.Method)
	}
	if m := bareColumn.FindStringSubmatch(p.Expr); m != nil {
		ident, typ, err := column(m[1])
		if err != nil {
			return "", none, err
		}
		if !intLike(typ) && !dateLike(typ) {
			return "", none, fmt.Errorf("partitioning on a %s column compares otherwise in ClickHouse than in MySQL", typ)
		}
		return ident, typ, nil
	}
	if m := funcColumn.FindStringSubmatch(p.Expr); m != nil && !strings.Contains(p.Method, "COLUMNS") {
		ident, typ, err := column(m[2])
		if err != nil {
			return "", none, err
		}
		if !dateLike(typ) {
			return "", none, fmt.Errorf("%s() of a %s column has no exact ClickHouse counterpart here", m[1], typ)
		}
		if strings.EqualFold(m[1], "year") {
			return "toYear(" + ident + ")", none, nil
		}
		// MySQL's TO_DAYS counts from year 0: 719528 is 1970-01-01.
		return "(toUInt32(toDate(" + ident + ")) + 719528)", none, nil
	}
	return "", none, fmt.Errorf("the partitioning expression %s has no exact ClickHouse counterpart here", p.Expr)
}

func intLike(t schema.CHType) bool {
	switch t.Kind {
	case schema.CHInt8, schema.CHInt16, schema.CHInt32, schema.CHInt64, schema.CHUInt8, schema.CHUInt16, schema.CHUInt32, schema.CHUInt64:
		return true
	}
	return false
}

func dateLike(t schema.CHType) bool {
	switch t.Kind {
	case schema.CHDate, schema.CHDate32, schema.CHDateTime, schema.CHDateTime64:
		return true
	}
	return false
}

// partitionCond is the condition of partition i: for RANGE, below its
// bound and at or above the previous one's; for LIST, in its values.
func partitionCond(p *catalog.Partitions, i int, expr string, typ schema.CHType) (string, error) {
	part := p.Parts[i]
	if strings.HasPrefix(p.Method, "LIST") {
		var in []string
		null := false
		for _, v := range strings.Split(part.Desc, ",") {
			v = strings.TrimSpace(v)
			if strings.EqualFold(v, "NULL") {
				null = true
				continue
			}
			lit, err := partitionLiteral(v, typ)
			if err != nil {
				return "", err
			}
			in = append(in, lit)
		}
		var conds []string
		if len(in) > 0 {
			conds = append(conds, expr+" IN ("+strings.Join(in, ", ")+")")
		}
		if null {
			conds = append(conds, "isNull("+expr+")")
		}
		return strings.Join(conds, " OR "), nil
	}
	var conds []string
	if !strings.EqualFold(part.Desc, "MAXVALUE") {
		lit, err := partitionLiteral(part.Desc, typ)
		if err != nil {
			return "", err
		}
		conds = append(conds, expr+" < "+lit)
	}
	if i == 0 && len(conds) > 0 {
		// MySQL puts the rows whose expression is NULL in the first RANGE
		// partition (NULL is below every value); NULL < x is not true in
		// ClickHouse.
		return "(" + conds[0] + " OR isNull(" + expr + "))", nil
	}
	if i > 0 {
		lit, err := partitionLiteral(p.Parts[i-1].Desc, typ)
		if err != nil {
			return "", err
		}
		conds = append(conds, expr+" >= "+lit)
	}
	if len(conds) == 0 {
		return "1", nil
	}
	return strings.Join(conds, " AND "), nil
}

// partitionLiteral turns a bound as information_schema prints it (10, -3,
// '2024-01-01') into a ClickHouse literal.
func partitionLiteral(v string, typ schema.CHType) (string, error) {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return v, nil
	}
	if _, err := strconv.ParseUint(v, 10, 64); err == nil {
		return v, nil
	}
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		s := strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		if !dateText.MatchString(s) || !dateLike(typ) {
			return "", fmt.Errorf("bound %s is not a date binlog2ch compares exactly", v)
		}
		if (typ.Kind == schema.CHDateTime || typ.Kind == schema.CHDateTime64) && len(s) == len("2006-01-02") {
			s += " 00:00:00"
		}
		return schema.QuoteString(s), nil
	}
	return "", fmt.Errorf("bound %s is not a number or a date", v)
}

var dateText = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?$`)
