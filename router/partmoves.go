package router

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/source"
)

// REORGANIZE and COALESCE PARTITION (on_partition_maintenance: apply) move
// rows between partitions, which ClickHouse's table does not have: where
// every row of the old partitions has a place in the new ones, the
// statement changes the layout only (followed in layouts.go) and nothing
// is sent. MariaDB's partition copy drops a row no new partition takes
// (ha_partition::copy_partitions counts it deleted, with no row event):
// it refuses such a RANGE reorganization (ER_REORG_OUTSIDE_RANGE), not a
// LIST one whose new lists leave out a value, so binlog2ch checks the
// coverage itself from the layouts of before and after, and stops where
// it cannot show it.

// applyMove takes a REORGANIZE or COALESCE PARTITION whose layout change
// the router has followed.
func (s *Router) applyMove(ef ddl.Effect, st source.Statement) error {
	m := s.layouts()
	before, ok := m.before[ef.Table]
	if !ok {
		before = m.lookup(ef.Table)
	}
	if why := moveOnly(ef, before, m.lookup(ef.Table)); why != "" {
		return fmt.Errorf("binlog %s: %s: partition maintenance (statement %q) may have deleted rows without row events: %s; MariaDB drops the rows no new partition takes, and binlog2ch cannot show that none were. To make ClickHouse equal again, %s. Or set replication.on_partition_maintenance: recopy, which copies such a table again by itself and goes on",
			st.At, ef.Table, truncate(st.Text, 300), why, Recopy)
	}
	s.m.StatementsWithoutRows.WithLabelValues(config.OnApply).Inc()
	s.log.Info("partition maintenance applied: the rows only moved between partitions, which ClickHouse's table does not have; the layout is followed", "table", ef.Table.String(), "operation", ef.PartitionOp, "partitions", ef.Partitions, "binlog", st.At.String())
	return nil
}

// moveOnly returns why a REORGANIZE or COALESCE may have left a row of the
// old partitions without a partition ("": it cannot have).
func moveOnly(ef ddl.Effect, before, after layoutOf) string {
	if before.why != "" {
		return "the table's partition layout before it is not known (" + before.why + ")"
	}
	if before.parts == nil {
		return "the table was not partitioned as binlog2ch followed its DDL"
	}
	method := strings.ToUpper(before.parts.Method)
	if strings.Contains(method, "HASH") || strings.Contains(method, "KEY") {
		return "" // every row has a partition, however many there are
	}
	if after.why != "" {
		return "its new partition layout is not known (" + after.why + ")"
	}
	if after.parts == nil || ef.PartitionOp != "REORGANIZE" || len(ef.Partitions) == 0 {
		return "a change of a " + method + " table's partitions binlog2ch does not follow"
	}
	// The new partitions stand where the first reorganized one stood.
	first, kept := -1, 0
	var old []string
	for _, p := range before.parts.Parts {
		named := false
		for _, n := range ef.Partitions {
			named = named || strings.EqualFold(n, p.Name)
		}
		switch {
		case named:
			if first < 0 {
				first = kept
			}
			old = append(old, p.Desc)
		default:
			kept++
		}
	}
	added := len(after.parts.Parts) - kept
	if first < 0 || len(old) != len(ef.Partitions) || added < 1 || first+added > len(after.parts.Parts) {
		return "REORGANIZE PARTITION of partitions binlog2ch does not know"
	}
	var next []string
	for _, p := range after.parts.Parts[first : first+added] {
		next = append(next, p.Desc)
	}
	switch {
	case strings.HasPrefix(method, "RANGE"):
		// Bounds ascend: the new partitions cover the old ones' values when
		// their last bound is at or above the old last one.
		if !boundAtLeast(next[len(next)-1], old[len(old)-1]) {
			return fmt.Sprintf("the new partitions end at VALUES LESS THAN (%s), the old ones at (%s), and binlog2ch cannot show that the new cover the old", next[len(next)-1], old[len(old)-1])
		}
		return ""
	case strings.HasPrefix(method, "LIST"):
		have := map[string]bool{}
		for _, d := range next {
			for _, v := range listValues(d) {
				have[v] = true // as written: 'A' and 'a' may be two values
			}
		}
		for _, d := range old {
			for _, v := range listValues(d) {
				if !have[v] {
					return "the new partitions' lists leave out " + v + ", which the old ones held"
				}
			}
		}
		return ""
	}
	return "partitioning by " + method + ", which binlog2ch does not follow"
}

// boundAtLeast reports whether RANGE bound a is certainly at or above b:
// the same text, MAXVALUE, or integers compared.
func boundAtLeast(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b || strings.EqualFold(a, "MAXVALUE") {
		return true
	}
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	return errA == nil && errB == nil && x >= y
}

// listValues splits a LIST partition's VALUES IN text at its top-level
// commas (a LIST COLUMNS tuple, a quoted string stay whole).
func listValues(desc string) []string {
	var out []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(desc); i++ {
		c := desc[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(desc[start:i]))
			start = i + 1
		}
	}
	if v := strings.TrimSpace(desc[start:]); v != "" {
		out = append(out, v)
	}
	return out
}
