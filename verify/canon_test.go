package verify

import (
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Unit tests of what needs no server; verify_test.go runs the expressions.

func TestKeyRangeConditions(t *testing.T) {
	src := &schema.Table{Database: "d", Name: "t", Columns: []schema.Column{
		{Name: "a", Kind: schema.KindInt}, {Name: "b", Kind: schema.KindDate}, {Name: "s", Kind: schema.KindChar},
	}, PrimaryKey: []int{0, 1, 2}}
	target, err := schema.Map(src, "d", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &plan{src: src, target: target}
	for _, i := range src.PrimaryKey {
		if keyOrderSafe(&src.Columns[i], target.Columns[target.SourceToTarget[i]].Type) {
			p.prefix = append(p.prefix, i)
		} else {
			break
		}
	}
	if len(p.prefix) != 2 {
		t.Fatalf("prefix %v: text orders differently on the two servers and must end it", p.prefix)
	}
	my, ch, err := p.where(bound{lower: []string{"1", "2024-01-01"}, upper: []string{"5", "2024-02-01"}})
	if err != nil {
		t.Fatal(err)
	}
	wantMy := "((`a` > 1) OR (`a` = 1 AND `b` > '2024-01-01')) AND ((`a` < 5) OR (`a` = 5 AND `b` < '2024-02-01') OR (`a` = 5 AND `b` = '2024-02-01'))"
	if my != wantMy {
		t.Errorf("MySQL:\n got %s\nwant %s", my, wantMy)
	}
	if !strings.Contains(ch, "`b` > toDate('2024-01-01')") || !strings.Contains(ch, "`a` = 5 AND `b` = toDate('2024-02-01')") {
		t.Errorf("ClickHouse: %s", ch)
	}
	if my, ch, _ := p.where(bound{}); my != "1" || ch != "1" {
		t.Errorf("unbounded: %s, %s", my, ch)
	}
	if _, _, err := p.where(bound{lower: []string{"1; DROP TABLE t", "2024-01-01"}}); err == nil {
		t.Error("a non-integer key value became a literal")
	}
}

func TestShowValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		f    form
		want string
	}{
		{"N", formHex, "NULL"},
		{"", formHex, `""`},
		{"6974277320C3BC", formHex, `"it's ü"`},
		{"00FF", formHex, "0x00FF"},
		{"0cc175b9c0f1b6a831c399e269772661", formMD5, "md5:0cc175b9c0f1b6a831c399e269772661"},
		{"2024-01-01", formText, "2024-01-01"},
	} {
		if got := showValue(c.in, c.f); got != c.want {
			t.Errorf("showValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	p := &plan{key: []column{{name: "id"}, {name: "s", form: formHex}}}
	if got := p.showKey("7,61"); got != `id=7, s="a"` {
		t.Errorf("showKey: %s", got)
	}
}

// A NULL's mark must not be a possible canonical text of a value.
func TestNullMarkIsNotAValue(t *testing.T) {
	for _, kind := range []schema.MySQLKind{schema.KindInt, schema.KindChar, schema.KindDouble, schema.KindDecimal, schema.KindEnum, schema.KindSet, schema.KindBinary} {
		c := schema.Column{Name: "c", Kind: kind, Precision: 40, Scale: 2, Length: 2, Labels: []string{"N"}}
		col, err := canonical(&c, schema.CHType{Kind: schema.CHString, Nullable: true}, schema.ClickHouse18)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(col.mysql, "IF(`c` IS NULL, 'N', ") || !strings.HasPrefix(col.ch, "if(isNull(`c`), 'N', ") {
			t.Errorf("%v: %s | %s", kind, col.mysql, col.ch)
		}
		// The label "N" itself is rendered as hex (4E), not as N.
		if kind == schema.KindEnum && !strings.Contains(col.mysql, "HEX(") {
			t.Errorf("ENUM labels not hex: %s", col.mysql)
		}
	}
}
