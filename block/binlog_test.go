package block

import (
	"testing"

	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestAppendDecimal uses the example of MySQL's documentation of the binary
// DECIMAL format (DECIMAL(14,4)).
func TestAppendDecimal(t *testing.T) {
	for _, c := range []struct {
		p           []byte
		prec, scale int
		want        string
	}{
		{[]byte{0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2}, 14, 4, "1234567890.1234"},
		{[]byte{0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D}, 14, 4, "-1234567890.1234"},
		{[]byte{0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, 14, 4, "0.0000"},
		{[]byte{0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05}, 14, 4, "0.0005"},
		{[]byte{0x80, 0x01}, 3, 0, "1"},
	} {
		if got := string(appendDecimal(nil, c.p, c.prec, c.scale)); got != c.want {
			t.Errorf("DECIMAL(%d,%d) % X: got %s, want %s", c.prec, c.scale, c.p, got, c.want)
		}
		if n := decimalSize(c.prec, c.scale); n != len(c.p) {
			t.Errorf("decimalSize(%d,%d) = %d, want %d", c.prec, c.scale, n, len(c.p))
		}
	}
}

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
