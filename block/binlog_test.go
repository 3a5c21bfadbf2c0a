package block

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestCivilFromDays(t *testing.T) {
	for days := int64(-800000); days < 3000000; days += 97 {
		y, m, d := mysqltime.CivilFromDays(days)
		if back := mysqltime.DaysFromCivil(y, m, d); back != days {
			t.Fatalf("mysqltime.CivilFromDays(%d) = %d-%d-%d, which is day %d", days, y, m, d, back)
		}
	}
}

// rawTable has a column of every type the binlog decoder handles.
func rawTable(t testing.TB) *schema.Table {
	cols := []struct {
		typ      string
		binType  byte
		meta     uint16
		nullable bool
	}{
		{"int(11)", mysql.MYSQL_TYPE_LONG, 0, false},
		{"tinyint(4)", mysql.MYSQL_TYPE_TINY, 0, true},
		{"smallint(5) unsigned", mysql.MYSQL_TYPE_SHORT, 0, true},
		{"mediumint(9)", mysql.MYSQL_TYPE_INT24, 0, true},
		{"bigint(20) unsigned", mysql.MYSQL_TYPE_LONGLONG, 0, true},
		{"float", mysql.MYSQL_TYPE_FLOAT, 4, true},
		{"double", mysql.MYSQL_TYPE_DOUBLE, 8, true},
		{"decimal(14,4)", mysql.MYSQL_TYPE_NEWDECIMAL, 14<<8 | 4, true},
		{"year(4)", mysql.MYSQL_TYPE_YEAR, 0, true},
		{"bit(12)", mysql.MYSQL_TYPE_BIT, 1<<8 | 4, true},
		{"date", mysql.MYSQL_TYPE_DATE, 0, true},
		{"datetime(3)", mysql.MYSQL_TYPE_DATETIME2, 3, true},
		{"timestamp(6)", mysql.MYSQL_TYPE_TIMESTAMP2, 6, true},
		{"time(2)", mysql.MYSQL_TYPE_TIME2, 2, true},
		{"varchar(300)", mysql.MYSQL_TYPE_VARCHAR, 1200, true},
		{"binary(4)", mysql.MYSQL_TYPE_STRING, uint16(mysql.MYSQL_TYPE_STRING)<<8 | 4, true},
		{"enum('a','b')", mysql.MYSQL_TYPE_STRING, uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1, true},
		{"set('a','b')", mysql.MYSQL_TYPE_STRING, uint16(mysql.MYSQL_TYPE_SET)<<8 | 1, true},
		{"blob", mysql.MYSQL_TYPE_BLOB, 2, true},
		{"geometry", mysql.MYSQL_TYPE_GEOMETRY, 4, true},
	}
	tb := &schema.Table{Database: "d", Name: "raw", PrimaryKey: []int{0}}
	for i, c := range cols {
		col := schematest.Col(t, "c"+string(rune('a'+i)), c.typ, c.nullable)
		col.BinlogType, col.BinlogMeta = c.binType, c.meta
		tb.Columns = append(tb.Columns, col)
	}
	return tb
}

// FuzzAppendImage feeds arbitrary bytes to the binlog row decoder: it must
// never panic, and a rejected image must leave the block unchanged.
func FuzzAppendImage(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{0xfe, 0xff, 0x0f, 7, 0, 0, 0})
	f.Add(make([]byte, 200))
	targets := []*schema.Target{}
	for _, caps := range []schema.Capabilities{schema.ClickHouse18, schema.ClickHouseModern} {
		for _, policy := range []string{schema.InvalidError, schema.InvalidClamp, schema.InvalidNull} {
			opts := schema.DefaultOptions()
			opts.InvalidDates = policy
			target, err := schema.Map(rawTable(f), "d", caps, opts, schema.TableOptions{})
			if err != nil {
				f.Fatal(err)
			}
			targets = append(targets, target)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, target := range targets {
			b := NewBlock(target)
			if !b.RawOK() {
				t.Fatal("raw table not decodable")
			}
			for len(data) > 0 {
				before := b.Rows()
				n, err := b.AppendImage(data, 1, schema.OpInsert)
				if err != nil {
					if b.Rows() != before {
						t.Fatalf("rejected image changed the block from %d to %d rows", before, b.Rows())
					}
					break
				}
				if n <= 0 || n > len(data) {
					t.Fatalf("image length %d of %d bytes", n, len(data))
				}
				data = data[n:]
			}
			fuzzCheckBlock(t, b)
		}
	})
}

// encodeDecimal writes a value as MySQL's binary DECIMAL (decimal2bin):
// intg and frac are its digits, as many as the type has before and after
// the point; groups of nine digits in four bytes, big-endian, a partial
// group in the bytes its digits need, the sign in the first bit and a
// negative value's bits flipped.
func encodeDecimal(neg bool, intg, frac string) []byte {
	dig2bytes := [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	var out []byte
	put := func(s string) {
		v, _ := strconv.ParseUint(s, 10, 64)
		for i := dig2bytes[len(s)] - 1; i >= 0; i-- {
			out = append(out, byte(v>>(8*i)))
		}
	}
	if x := len(intg) % 9; x > 0 {
		put(intg[:x])
		intg = intg[x:]
	}
	for ; len(intg) > 0; intg = intg[9:] {
		put(intg[:9])
	}
	for ; len(frac) >= 9; frac = frac[9:] {
		put(frac[:9])
	}
	if len(frac) > 0 {
		put(frac)
	}
	out[0] ^= 0x80
	if neg {
		for i := range out {
			out[i] = ^out[i]
		}
	}
	return out
}

// TestRawDecimal decodes random binary DECIMALs of many precisions and
// scales straight into Decimal columns (and a wider override's, rescaled)
// and checks each against its digits and against the text renderer the
// String columns use; a group larger than its digits is refused.
func TestRawDecimal(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	digits := func(n int) string {
		b := make([]byte, n)
		zeros := rnd.IntN(n + 1) // leading zeros, to make short values
		for i := range b {
			b[i] = '0'
			if i >= zeros {
				b[i] = byte('0' + rnd.IntN(10))
			}
		}
		return string(b)
	}
	for _, ps := range [][2]int{{1, 0}, {2, 2}, {5, 2}, {9, 2}, {9, 9}, {10, 0}, {14, 4}, {18, 0}, {18, 9}, {19, 0},
		{20, 10}, {27, 9}, {38, 10}, {38, 38}, {40, 5}, {65, 30}, {65, 0}} {
		p, s := ps[0], ps[1]
		for _, widen := range []int{0, 3} {
			if p+widen > 76 {
				continue
			}
			col := schematest.Col(t, "c", fmt.Sprintf("decimal(%d,%d)", p, s), false)
			col.BinlogType, col.BinlogMeta = mysql.MYSQL_TYPE_NEWDECIMAL, uint16(p<<8|s)
			tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{col}}
			to := schema.TableOptions{}
			if widen > 0 {
				to.Types = map[string]string{"c": fmt.Sprintf("Decimal(%d, %d)", p+widen, s+widen)}
			}
			for _, caps := range []schema.Capabilities{schema.ClickHouse18, schema.ClickHouseModern} {
				target, err := schema.Map(tb, "d", caps, schema.DefaultOptions(), to)
				if err != nil {
					if widen > 0 && p+widen > 38 {
						continue // a wide override on a server without Decimal256
					}
					t.Fatal(err)
				}
				b := NewBlock(target)
				var want []string
				for range 200 {
					neg := rnd.IntN(2) == 0
					i, f := digits(p-s), digits(s)
					image := append([]byte{0}, encodeDecimal(neg, i, f)...)
					text := strings.TrimLeft(i, "0")
					if text == "" {
						text = "0"
					}
					if s > 0 {
						text += "." + f
					}
					zero := strings.Trim(i+f, "0") == ""
					if neg && !zero {
						text = "-" + text
					}
					if widen > 0 {
						text += strings.Repeat("0", widen)
						if s == 0 {
							text = text[:len(text)-widen] + "." + strings.Repeat("0", widen)
						}
					}
					n, err := b.AppendImage(image, 1, schema.OpInsert)
					if err != nil || n != len(image) {
						t.Fatalf("DECIMAL(%d,%d) % x: %d bytes, %v", p, s, image[1:], n, err)
					}
					want = append(want, text)
				}
				switch buf := b.cols[0].(type) {
				case *column.Dec:
					for r, w := range want {
						if got := string(buf.AppendText(nil, r)); got != w {
							t.Errorf("DECIMAL(%d,%d) as %s: row %d reads %s, want %s", p, s, target.Columns[0].Type, r, got, w)
						}
					}
				case *column.Str:
					if target.Columns[0].Type.Kind == schema.CHDecimal {
						t.Fatalf("DECIMAL(%d,%d) as %s held as text", p, s, target.Columns[0].Type)
					}
					for r, got := range buf.Strings() {
						if got != want[r] {
							t.Errorf("DECIMAL(%d,%d) as text: row %d reads %s, want %s", p, s, r, got, want[r])
						}
					}
				}
			}
		}
	}
	// A group larger than its digits: DECIMAL(5,2)'s fraction byte 100.
	col := schematest.Col(t, "c", "decimal(5,2)", false)
	col.BinlogType, col.BinlogMeta = mysql.MYSQL_TYPE_NEWDECIMAL, 5<<8|2
	target, err := schema.Map(&schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{col}}, "d", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBlock(target)
	if _, err := b.AppendImage([]byte{0, 0x80, 0x01, 100}, 1, schema.OpInsert); err == nil || !strings.Contains(err.Error(), "corrupt") || b.Rows() != 0 {
		t.Errorf("a corrupt DECIMAL: %v, %d rows", err, b.Rows())
	}
	// As text (a String override): refused the same.
	target, err = schema.Map(&schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{col}}, "d", schema.ClickHouse18, schema.DefaultOptions(),
		schema.TableOptions{Types: map[string]string{"c": "String"}})
	if err != nil {
		t.Fatal(err)
	}
	b = NewBlock(target)
	if _, ok := b.cols[0].(*column.Str); !ok {
		t.Fatalf("a String override held in %T", b.cols[0])
	}
	if _, err := b.AppendImage([]byte{0, 0x80, 0x01, 100}, 1, schema.OpInsert); err == nil || !strings.Contains(err.Error(), "corrupt") || b.Rows() != 0 {
		t.Errorf("a corrupt DECIMAL as text: %v, %d rows", err, b.Rows())
	}
}
