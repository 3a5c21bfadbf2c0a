package chtables

import (
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestPartitionsWhere: the ClickHouse condition of each partition, from
// information_schema's texts as MariaDB 10.11 prints them; what has no
// exact translation is an error saying why.
func TestPartitionsWhere(t *testing.T) {
	target := &schema.Target{Columns: []schema.TargetColumn{
		{Name: "id", Type: schema.CHType{Kind: schema.CHInt32}},
		{Name: "d", Type: schema.CHType{Kind: schema.CHDate}},
		{Name: "dt", Type: schema.CHType{Kind: schema.CHDateTime}},
		{Name: "s", Type: schema.CHType{Kind: schema.CHString}},
		{Name: "_version", Type: schema.CHType{Kind: schema.CHUInt64}, Meta: schema.MetaVersion},
	}}
	rng := func(expr string, descs ...string) *catalog.Partitions {
		p := &catalog.Partitions{Method: "RANGE", Expr: expr}
		for i, d := range descs {
			p.Parts = append(p.Parts, catalog.Partition{Name: "p" + string(rune('0'+i)), Desc: d})
		}
		return p
	}
	for _, c := range []struct {
		p     *catalog.Partitions
		names []string
		want  string
	}{
		{rng("`id`", "10", "20", "MAXVALUE"), []string{"p0"}, "((`id` < 10 OR isNull(`id`)))"},
		{rng("`id`", "10", "20", "MAXVALUE"), []string{"P1", "p2"}, "(`id` < 20 AND `id` >= 10) OR (`id` >= 20)"},
		{&catalog.Partitions{Method: "RANGE COLUMNS", Expr: "`d`", Parts: []catalog.Partition{{Name: "a", Desc: "'2024-01-01'"}, {Name: "b", Desc: "MAXVALUE"}}}, []string{"b"}, "(`d` >= '2024-01-01')"},
		{&catalog.Partitions{Method: "RANGE COLUMNS", Expr: "`dt`", Parts: []catalog.Partition{{Name: "a", Desc: "'2024-01-01'"}}}, []string{"a"}, "((`dt` < '2024-01-01 00:00:00' OR isNull(`dt`)))"},
		{rng("to_days(`d`)", "739251", "MAXVALUE"), []string{"p0"}, "(((toUInt32(toDate(`d`)) + 719528) < 739251 OR isNull((toUInt32(toDate(`d`)) + 719528))))"},
		{rng("year(`dt`)", "2024", "2025"), []string{"p1"}, "(toYear(`dt`) < 2025 AND toYear(`dt`) >= 2024)"},
		{&catalog.Partitions{Method: "LIST", Expr: "`id`", Parts: []catalog.Partition{{Name: "a", Desc: "1,2"}, {Name: "b", Desc: "NULL,3"}}}, []string{"b"}, "(`id` IN (3) OR isNull(`id`))"},
		// No exact translation.
		{&catalog.Partitions{Method: "HASH", Expr: "`id`", Parts: []catalog.Partition{{Name: "p0", Desc: ""}}}, []string{"p0"}, "error: HASH partitioning has no bounds"},
		{rng("`s`", "'m'"), []string{"p0"}, "error: partitioning on a String column"},
		{rng("(`id` div 10)", "5"), []string{"p0"}, "error: the partitioning expression"},
		{rng("`id`", "10"), []string{"gone"}, "error: partition gone is not among"},
		{&catalog.Partitions{Method: "RANGE COLUMNS", Expr: "`id`,`d`", Parts: []catalog.Partition{{Name: "a", Desc: "10,'2024-01-01'"}}}, []string{"a"}, "error: the partitioning expression"},
	} {
		got, err := PartitionsWhere(c.p, c.names, target)
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s %v: got %q, want %q", c.p.Method, c.p.Expr, c.names, got, c.want)
		}
	}
	p := rng("`id`", "10", "20", "MAXVALUE")
	p.Drop([]string{"p1"})
	if got, _ := PartitionsWhere(p, []string{"p2"}, target); got != "(`id` >= 10)" {
		t.Errorf("after DROP PARTITION p1, p2 is %q; want it to start where p1 did", got)
	}
}
