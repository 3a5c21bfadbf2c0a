package block

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

// everyNativeTarget maps a table (id INT, c0 ... cN) of nativeTypes' types,
// leaving out what has no native encoder on that server profile.
func everyNativeTarget(t *testing.T, caps schema.Capabilities, opts schema.Options, nullable bool) (*schema.Target, []int) {
	t.Helper()
	tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}, Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false)}}
	var types []int
	for i, ty := range nativeTypes {
		if caps.LowCardinality && strings.Contains(ty.mysql, "''") {
			// Labels that need escaping become LowCardinality(String)
			// there, which has no native encoder.
			continue
		}
		types = append(types, i)
		tb.Columns = append(tb.Columns, schematest.Col(t, fmt.Sprintf("c%d", i), ty.mysql, nullable))
	}
	target, err := schema.Map(tb, "d", caps, opts, schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return target, types
}

// everyNativeRow is row r of everyNativeTarget's table: the types' values
// in turn, NULL in every third row when nullable.
func everyNativeRow(r int, types []int, nullable bool) []any {
	row := []any{int32(r)}
	for _, i := range types {
		if nullable && r%3 == 2 {
			row = append(row, nil)
		} else {
			row = append(row, nativeTypes[i].values[r%2])
		}
	}
	return row
}

// TestScatterMatchesAppend splits a block of every type by shard three
// ways (encoding a selection of its rows, Scatter, Subset) and checks each
// part encodes exactly as a block the same rows were appended to directly.
func TestScatterMatchesAppend(t *testing.T) {
	for _, profile := range []struct {
		name string
		caps schema.Capabilities
		set  string
	}{{"clickhouse18", schema.ClickHouse18, schema.SetAsString}, {"modern", schema.ClickHouseModern, schema.SetAsArray}} {
		for _, nullable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nullable=%v", profile.name, nullable), func(t *testing.T) {
				opts := schema.DefaultOptions()
				opts.InvalidDates = schema.InvalidClamp
				if !nullable { // set_as array refuses nullable SETs
					opts.SetAs = profile.set
				}
				target, types := everyNativeTarget(t, profile.caps, opts, nullable)
				const rows, shards = 11, 3
				all := NewBlock(target)
				parts := make([]*Block, shards)
				direct := make([]*Block, shards)
				for p := range shards {
					parts[p], direct[p] = NewBlock(target), NewBlock(target)
				}
				// Encoders are built once per block, before it fills (as
				// the writers' blocks are reused): they must follow the
				// buffers as they grow.
				for _, b := range append([]*Block{all}, parts...) {
					b.NativeOK()
				}
				var to []uint32
				sel := make([][]uint32, shards)
				for r := range rows {
					row := everyNativeRow(r, types, nullable)
					p := (r*5 + 1) % shards
					if r == 7 {
						p = 2 // shard 0 gets a single row
					}
					to = append(to, uint32(p))
					sel[p] = append(sel[p], uint32(r))
					for _, b := range []*Block{all, direct[p]} {
						if err := b.Append(row, uint64(r+1), schema.OpInsert); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := all.Scatter(to, parts); err != nil {
					t.Fatal(err)
				}
				for p := range shards {
					if parts[p].Rows() != direct[p].Rows() {
						t.Fatalf("part %d: %d rows, want %d", p, parts[p].Rows(), direct[p].Rows())
					}
					want := nativeEncoding(t, direct[p])
					if got := nativeEncoding(t, parts[p]); !bytes.Equal(got, want) {
						t.Errorf("part %d encodes differently from the rows appended directly", p)
					}
					e := chnative.NewCapture()
					if err := all.EncodeNativeRows(e, sel[p]); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(e.Captured(), want) {
						t.Errorf("rows %v encode differently from the rows appended directly", sel[p])
					}
					sub, err := all.Subset(sel[p])
					if err != nil {
						t.Fatal(err)
					}
					if got := nativeEncoding(t, sub); !bytes.Equal(got, want) {
						t.Errorf("Subset(%v) encodes differently from the rows appended directly", sel[p])
					}
				}
				if err := all.Scatter(to[1:], parts); err == nil {
					t.Error("Scatter took fewer assignments than rows")
				}
			})
		}
	}
}

// TestKeyHashGolden checks the hasher against values ClickHouse 18.16
// computed: SELECT cityHash64(...).
func TestKeyHashGolden(t *testing.T) {
	for _, c := range []struct {
		typ   string
		value any
		want  uint64
	}{
		{"int", int32(-1), 9168733277332772950},                   // cityHash64(toInt32(-1))
		{"int unsigned", uint32(4294967295), 9168733277332772950}, // same bits
		{"tinyint", int8(-1), 8055013221972926055},                // cityHash64(toInt8(-1))
		{"tinyint unsigned", uint8(1), 10577349846663553072},      // cityHash64(toUInt8(1))
		{"smallint", int16(-1), 6547939410751295652},
		{"varchar(10)", "abc", 4220206313085259313},
		{"varchar(10)", "", 11160318154034397263},
		{"binary(5)", "abc", 15954762693552050307}, // FixedString(5), zero-padded
		{"date", "2020-01-02", 4404072809595594999},
		{"double", 1.5, 7287324520655339053},
		{"float", float32(1.5), 17641193269776743632},
	} {
		b := oneColumn(t, c.typ, false, schema.ClickHouse18, schema.DefaultOptions())
		if err := b.Append([]any{int32(1), c.value}, 1, schema.OpInsert); err != nil {
			t.Fatal(err)
		}
		k, err := NewKeyHasher(b.Target(), []KeyArg{{Column: "c"}})
		if err != nil {
			t.Fatal(err)
		}
		h, err := k.Hashes(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h[0] != c.want {
			t.Errorf("cityHash64(%s %v) = %d, ClickHouse %d", c.typ, c.value, h[0], c.want)
		}
	}

	// cityHash64(toUInt8(1), 'abc'): the second argument folded in.
	tb := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0, 1},
		Columns: []schema.Column{schematest.Col(t, "a", "tinyint unsigned", false), schematest.Col(t, "s", "varchar(10)", false)}}
	target, err := schema.Map(tb, "d", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBlock(target)
	if err := b.Append([]any{uint8(1), "abc"}, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	k, err := NewKeyHasher(target, []KeyArg{{Column: "a"}, {Column: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := k.Hashes(b, nil); err != nil || h[0] != 10016680650033117268 {
		t.Errorf("cityHash64(1, 'abc') = %v (%v), ClickHouse 10016680650033117268", h, err)
	}
	if _, err := k.Hashes(oneColumn(t, "int", false, schema.ClickHouse18, schema.DefaultOptions()), nil); err == nil {
		t.Error("a block of another schema was hashed")
	}

	// cityHash64(reinterpretAsString(toDecimal64('1.5', 2))): 18.16's
	// cityHash64 refuses Decimal, so tables shard by the stored bytes.
	b = oneColumn(t, "decimal(10,2)", false, schema.ClickHouse18, schema.DefaultOptions())
	if err := b.Append([]any{int32(1), "1.5"}, 1, schema.OpInsert); err != nil {
		t.Fatal(err)
	}
	if k, err = NewKeyHasher(b.Target(), []KeyArg{{Column: "c", Reinterpret: true}}); err != nil {
		t.Fatal(err)
	}
	if h, err := k.Hashes(b, nil); err != nil || h[0] != 14020259374788037321 {
		t.Errorf("cityHash64(reinterpretAsString(1.50)) = %v (%v), ClickHouse 14020259374788037321", h, err)
	}
}

// TestKeyHasherRefuses: what ClickHouse hashes by rules the hasher does not
// know is left to the Distributed table.
func TestKeyHasherRefuses(t *testing.T) {
	for _, c := range []struct {
		typ      string
		nullable bool
		caps     schema.Capabilities
		opts     func(*schema.Options)
		want     string
	}{
		{"int", true, schema.ClickHouse18, nil, "Nullable(Int32), which binlog2ch does not hash"},
		{"enum('x''q','y')", false, schema.ClickHouseModern, nil, "LowCardinality(String), which binlog2ch does not hash"},
		{"set('a','b')", false, schema.ClickHouseModern, func(o *schema.Options) { o.SetAs = schema.SetAsArray }, "Array(String), which binlog2ch does not hash"},
	} {
		opts := schema.DefaultOptions()
		if c.opts != nil {
			c.opts(&opts)
		}
		b := oneColumn(t, c.typ, c.nullable, c.caps, opts)
		if _, err := NewKeyHasher(b.Target(), []KeyArg{{Column: "c"}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.typ, err, c.want)
		}
	}
	b := oneColumn(t, "int", false, schema.ClickHouse18, schema.DefaultOptions())
	if _, err := NewKeyHasher(b.Target(), []KeyArg{{Column: "nope"}}); err == nil || !strings.Contains(err.Error(), `sharding key column "nope" is not one of the table's columns`) {
		t.Errorf("unknown column: %v", err)
	}
}

// checkKeyHashes compares the hasher with the server's cityHash64 over
// every column of a block inserted into target (rows in id order), and runs
// each column type's probe on the server. Values of Nullable columns are
// compared where they are not NULL (ClickHouse hashes a Nullable value as
// the value). A Decimal column the server cannot hash is compared as what
// tables shard by there: reinterpretAsString of it.
func checkKeyHashes(t *testing.T, ch driver.Conn, target *schema.Target, b *Block) {
	t.Helper()
	for i, c := range target.Columns {
		if c.Meta != schema.MetaNone || c.Type.Kind == schema.CHLowCardinalityString || c.Type.Kind == schema.CHArrayString {
			continue
		}
		raw := false
		err := compareColumnHashes(t, ch, target, b, i, raw)
		if err != nil && c.Type.Kind == schema.CHDecimal && strings.Contains(err.Error(), "Unexpected type") {
			raw = true
			err = compareColumnHashes(t, ch, target, b, i, raw)
		}
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}

		// The probe for this type, as NOT NULL.
		probe := *target
		probe.Columns = append([]schema.TargetColumn(nil), target.Columns...)
		probe.Columns[i].Type.Nullable = false
		k, err := NewKeyHasher(&probe, []KeyArg{{Column: "id"}, {Column: c.Name, Reinterpret: raw}})
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		q, want, err := k.KeyHashProbe()
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		var got []uint64
		if err := ch.QueryRow(context.Background(), q).Scan(&got); err != nil {
			t.Errorf("%s: probe %s: %v", c.Name, q, err)
		} else if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: probe %s: ClickHouse %v, binlog2ch %v", c.Name, q, got, want)
		}
	}
}

// compareColumnHashes compares the hash of column i (or of its
// reinterpretAsString, when raw) row by row with the server's; an error is
// the server refusing the query.
func compareColumnHashes(t *testing.T, ch driver.Conn, target *schema.Target, b *Block, i int, raw bool) error {
	t.Helper()
	c := target.Columns[i]
	want := make([]uint64, b.Rows())
	if err := column.HashArg(b.cols[i], c.Type, raw, true, want); err != nil {
		t.Errorf("%s: %v", c.Name, err)
		return nil
	}
	arg := schema.QuoteIdent(c.Name)
	if raw {
		arg = "reinterpretAsString(" + arg + ")"
	}
	var got []uint64
	var null []uint8
	q := fmt.Sprintf("SELECT groupArray(ifNull(h, 0)), groupArray(isNull(h)) FROM (SELECT cityHash64(%s) AS h FROM %s.%s ORDER BY id)",
		arg, schema.QuoteIdent(target.Database), schema.QuoteIdent(target.Name))
	if err := ch.QueryRow(context.Background(), q).Scan(&got, &null); err != nil {
		return err
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d hashes from ClickHouse, %d rows", c.Name, len(got), len(want))
		return nil
	}
	for r := range got {
		if null[r] == 0 && got[r] != want[r] {
			t.Errorf("%s (%s) row %d: cityHash64(%s) %d, binlog2ch %d", c.Name, c.Type, r, arg, got[r], want[r])
		}
	}
	return nil
}
