package partitioning

import (
	"testing"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/ddl"
)

// TestMoveOnly: a REORGANIZE or COALESCE PARTITION is taken for a move of
// rows only where the layouts show every old row a new partition; else
// why not.
func TestMoveOnly(t *testing.T) {
	layout := func(method string, parts ...string) Layout {
		p := &catalog.Partitions{Method: method, Expr: "`id`"}
		for i := 0; i < len(parts); i += 2 {
			p.Parts = append(p.Parts, catalog.Partition{Name: parts[i], Desc: parts[i+1]})
		}
		return Layout{Parts: p}
	}
	reorg := func(names ...string) ddl.Effect {
		return ddl.Effect{Kind: ddl.PartitionRows, PartitionOp: "REORGANIZE", Partitions: names}
	}
	rng := layout("RANGE", "p0", "10", "p1", "20", "p2", "30")
	for _, c := range []struct {
		name          string
		ef            ddl.Effect
		before, after Layout
		ok            bool
	}{
		{"range split, same end", reorg("p1", "p2"), rng, layout("RANGE", "p0", "10", "a", "15", "b", "25", "c", "30"), true},
		{"range last extended", reorg("p2"), rng, layout("RANGE", "p0", "10", "p1", "20", "p2", "40"), true},
		{"range to MAXVALUE", reorg("p2"), rng, layout("RANGE", "p0", "10", "p1", "20", "p2", "MAXVALUE"), true},
		{"range shortened", reorg("p2"), rng, layout("RANGE", "p0", "10", "p1", "20", "p2", "25"), false},
		{"range columns text", reorg("p1"), layout("RANGE COLUMNS", "p0", "'a'", "p1", "'m'"), layout("RANGE COLUMNS", "p0", "'a'", "p1", "'M'"), false},
		{"list superset", reorg("pa"), layout("LIST", "pa", "1,2", "pb", "3"), layout("LIST", "pa1", "1", "pa2", "2,5", "pb", "3"), true},
		{"list tuples", reorg("pa"), layout("LIST COLUMNS", "pa", "(1,'a'),(2,'b')"), layout("LIST COLUMNS", "x", "(2,'b')", "y", "(1,'a')"), true},
		{"list leaves out", reorg("pa"), layout("LIST", "pa", "1,2", "pb", "3"), layout("LIST", "pa1", "1", "pb", "3"), false},
		{"hash coalesce", ddl.Effect{PartitionOp: "COALESCE"}, layout("HASH", "p0", "", "p1", "", "p2", ""), layout("HASH", "p0", "", "p1", ""), true},
		{"hash rebuild", reorg(), layout("KEY", "p0", "", "p1", ""), layout("KEY", "p0", "", "p1", ""), true},
		{"before unknown", reorg("p1"), Layout{Why: "not kept"}, rng, false},
		{"after unknown", reorg("p1"), rng, Layout{Why: "inexact"}, false},
		{"not partitioned", reorg("p1"), Layout{}, rng, false},
		{"unknown partition", reorg("p9"), rng, rng, false},
	} {
		why := MoveOnly(c.ef, c.before, c.after)
		if (why == "") != c.ok {
			t.Errorf("%s: MoveOnly = %q, want ok %v", c.name, why, c.ok)
		}
	}
}
