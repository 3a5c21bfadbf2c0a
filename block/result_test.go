package block

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/column"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/loadgen"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

var updateResults = flag.Bool("update-results", false, "capture testdata/results/*.json from a real server")

const resultsDir = "../testdata/results"

// resultFixture is a result set as MariaDB sent it for a table copy's
// SELECT (block.SelectExpr per column, binary protocol): the columns and
// the rows framed as mysqlproto frames them. For every_type it also holds
// the table's definition and the binlog row images of the same rows, so
// the two decoders can be compared without a server.
type resultFixture struct {
	Columns []mysqlproto.Column `json:"columns"`
	Count   int                 `json:"count"`
	Rows    []byte              `json:"rows"`

	Table  *schema.Table `json:"table,omitempty"`
	Types  []byte        `json:"types,omitempty"`
	Metas  []uint16      `json:"metas,omitempty"`
	Images [][]byte      `json:"images,omitempty"`
}

// selectList is the SELECT list of a table copy.
func selectList(t *schema.Table) string {
	var list []string
	for i := range t.Columns {
		list = append(list, SelectExpr(&t.Columns[i], "`"+t.Columns[i].Name+"`"))
	}
	return strings.Join(list, ", ")
}

// readResult reads a table in key order as a table copy does: the same
// SELECT list, over mysqlproto, in the binary protocol.
func readResult(t testing.TB, srv *localserver.Servers, db string, table *schema.Table) ([]mysqlproto.Column, []byte, int) {
	return readResultIn(t, srv, db, table, true)
}

// readResultIn is readResult in the binary protocol or, for comparison,
// the text protocol.
func readResultIn(t testing.TB, srv *localserver.Servers, db string, table *schema.Table, binary bool) ([]mysqlproto.Column, []byte, int) {
	t.Helper()
	ctx := context.Background()
	c, err := mysqlproto.Dial(ctx, mysqlproto.Options{Addr: srv.MySQL.Addr(), User: srv.MySQL.User, Password: srv.MySQL.Password,
		Session: []string{"SET time_zone = '+00:00'"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var res *mysqlproto.Result
	if binary {
		stmt, err := c.Prepare(ctx, "SELECT "+selectList(table)+" FROM `"+db+"`.`"+table.Name+"` WHERE `"+table.Columns[0].Name+"` > ? ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		if res, err = stmt.Query(ctx, int64(-1)); err != nil {
			t.Fatal(err)
		}
	} else if res, err = c.Query(ctx, "SELECT "+selectList(table)+" FROM `"+db+"`.`"+table.Name+"` ORDER BY 1"); err != nil {
		t.Fatal(err)
	}
	var rows []byte
	n := 0
	for !res.Done() {
		var k int
		if rows, k, err = res.ReadRows(ctx, rows, len(rows)+1<<20); err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return res.Columns, rows, n
}

func writeFixture(t *testing.T, name string, fx *resultFixture) {
	t.Helper()
	data, err := json.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(resultsDir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func loadFixture(tb testing.TB, name string) *resultFixture {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(resultsDir, name))
	if err != nil {
		tb.Fatalf("%v (capture it with go test ./block -run CaptureResultRows -update-results)", err)
	}
	var fx resultFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		tb.Fatal(err)
	}
	return &fx
}

// TestCaptureResultRows writes the fixtures (go test ./block -run
// CaptureResultRows -update-results): 300 binlog_field_test rows with
// loadgen's default values, and every_type's rows with their binlog
// images, read from MariaDB as a table copy reads them.
func TestCaptureResultRows(t *testing.T) {
	if !*updateResults {
		t.Skip("run with -update-results to capture the fixtures")
	}
	srv := servertest.Need(t)
	ctx := context.Background()
	my := openMySQL(t, srv, "")
	pos := masterPos(t, my)
	db := servertest.Name("b2c_results")
	conn, err := my.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gen := loadgen.NewFieldTestGen(7)
	for _, q := range []string{loadgen.SessionSetup, "SET SESSION sql_mode = ''", "CREATE DATABASE " + db, "USE " + db,
		binlog2ch.BinlogFieldTestDDL, gen.Insert(db, "binlog_field_test_1", 300),
		everyTypeDDL, "INSERT INTO every_type VALUES " + strings.Join(everyTypeRows, ",\n")} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })

	var fx, text resultFixture
	fx.Columns, fx.Rows, fx.Count = readResult(t, srv, db, schematest.BinlogFieldTest(t))
	writeFixture(t, "binlog_field_test.json", &fx)
	text.Columns, text.Rows, text.Count = readResultIn(t, srv, db, schematest.BinlogFieldTest(t), false)
	writeFixture(t, "binlog_field_test_text.json", &text)

	table, err := schema.LoadTable(ctx, my, db, "every_type")
	if err != nil {
		t.Fatal(err)
	}
	images, tableMap := rawImages(t, srv, gomysql.MariaDBFlavor, pos, db)
	ev := resultFixture{Table: table, Types: tableMap.ColumnType, Metas: tableMap.ColumnMeta, Images: images}
	ev.Columns, ev.Rows, ev.Count = readResult(t, srv, db, table)
	writeFixture(t, "every_type.json", &ev)
}

// fieldTestResult loads the binlog_field_test fixture and a block for it.
func fieldTestResult(tb testing.TB, caps schema.Capabilities) (*resultFixture, *Block) {
	fx := loadFixture(tb, "binlog_field_test.json")
	opts := schema.DefaultOptions()
	target, err := schema.Map(schematest.BinlogFieldTest(tb), "bench", caps, opts, schema.TableOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return fx, NewBlock(target)
}

func TestFieldTestResultFixtureDecodes(t *testing.T) {
	for _, caps := range []schema.Capabilities{schema.ClickHouse18, schema.ClickHouseModern} {
		fx, b := fieldTestResult(t, caps)
		n, err := b.AppendResultRows(fx.Columns, fx.Rows, 1, schema.OpInsert)
		if err != nil {
			t.Fatal(err)
		}
		if n != fx.Count || b.Rows() != fx.Count || fx.Count != 300 {
			t.Fatalf("decoded %d rows into %d, want %d (300)", n, b.Rows(), fx.Count)
		}
	}
}

// BenchmarkAppendResultRows decodes binlog_field_test rows with loadgen's
// default values (about 600 bytes of strings and blobs a row), as MariaDB
// sent them to a table copy, into ClickHouse columns: the per-row cost of
// the copy's decoding.
func BenchmarkAppendResultRows(b *testing.B) {
	fx, block := fieldTestResult(b, schema.ClickHouse18)
	b.SetBytes(int64(len(fx.Rows)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		block.Reset()
		if _, err := block.AppendResultRows(fx.Columns, fx.Rows, 1, schema.OpInsert); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fx.Count), "ns/row")
}

// everyTypeTargets are every_type's targets the fixture is decoded into:
// both server profiles, each invalid_dates policy that takes its zero and
// invalid dates, and the other mapping options.
func everyTypeTargets(t testing.TB, table *schema.Table) []*schema.Target {
	var targets []*schema.Target
	for _, caps := range []schema.Capabilities{schema.ClickHouse18, schema.ClickHouseModern} {
		for _, policy := range []string{schema.InvalidClamp, schema.InvalidNull} {
			opts := schema.DefaultOptions()
			opts.InvalidDates = policy
			others := opts
			others.TimeAs = schema.TimeAsInt64Micros
			others.EnumAs = schema.EnumAsString
			for _, o := range []schema.Options{opts, others} {
				target, err := schema.Map(table, "d", caps, o, schema.TableOptions{})
				if err != nil {
					t.Fatal(err)
				}
				targets = append(targets, target)
			}
		}
	}
	return targets
}

// TestResultRowsMatchBinlog decodes every_type's rows as MariaDB sent them
// to a table copy and as it wrote them to the binlog, into the same
// targets, and compares the Native encodings byte for byte: the copy
// writes exactly what replication writes, for every type and edge value
// (maxima, minima, NULLs, zero and invalid dates).
func TestResultRowsMatchBinlog(t *testing.T) {
	fx := loadFixture(t, "every_type.json")
	table := *fx.Table
	table.Columns = append([]schema.Column(nil), fx.Table.Columns...)
	for i := range table.Columns {
		table.Columns[i].BinlogType, table.Columns[i].BinlogMeta = fx.Types[i], fx.Metas[i]
	}
	if fx.Count != len(everyTypeRows) {
		t.Fatalf("the fixture holds %d rows, every_type %d", fx.Count, len(everyTypeRows))
	}
	for _, target := range everyTypeTargets(t, &table) {
		fromBinlog, fromResult := NewBlock(target), NewBlock(target)
		v := uint64(1)
		for _, data := range fx.Images {
			for len(data) > 0 {
				n, err := fromBinlog.AppendImage(data, v, schema.OpInsert)
				if err != nil {
					t.Fatal(err)
				}
				data = data[n:]
				v++
			}
		}
		// One version for all: the binlog rows get 1..n, so compare the
		// columns, not the versions.
		if _, err := fromResult.AppendResultRows(fx.Columns, fx.Rows, 1, schema.OpInsert); err != nil {
			t.Fatal(err)
		}
		if fromResult.Fixups != fromBinlog.Fixups {
			t.Errorf("%s: fix-ups %v from the result, %v from the binlog", target.Name, fromResult.Fixups, fromBinlog.Fixups)
		}
		for i, c := range target.Columns {
			if c.Meta != schema.MetaNone {
				continue
			}
			if got, want := nativeColumnBytes(t, fromResult, i), nativeColumnBytes(t, fromBinlog, i); got != want {
				t.Errorf("%s (%s, %s): column %s %s: the result decodes to\n%q\nthe binlog to\n%q", target.Name, target.Caps.Version, target.Options.InvalidDates, c.Name, c.Type, trunc(got), trunc(want))
			}
		}
	}
}

// nativeColumnBytes is column i of a block in the Native format (its
// buffer's values, for a type without a native encoder).
func nativeColumnBytes(t *testing.T, b *Block, i int) string {
	t.Helper()
	if b.NativeOK(); b.native[i] == nil {
		return fmt.Sprintf("%#v", b.cols[i])
	}
	e := chnative.NewCapture()
	if err := b.native[i](e, nil); err != nil {
		t.Fatal(err)
	}
	return string(e.Captured())
}

// TestResultRowErrors: a value the decoder cannot take stops with an error
// naming the table, the column and the value, and leaves the block as it
// was; so does a row cut short.
func TestResultRowErrors(t *testing.T) {
	fx := loadFixture(t, "every_type.json")
	target, err := schema.Map(fx.Table, "d", schema.ClickHouse18, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBlock(target)
	// Row 1 (maxima) goes in; row 2 holds 1000-01-01, outside Date, which
	// the default policy refuses.
	row1, rest, _ := mysqlproto.NextRow(fx.Rows)
	row2, _, _ := mysqlproto.NextRow(rest)
	two := mysqlproto.AppendRow(mysqlproto.AppendRow(nil, row1), row2)
	n, err := b.AppendResultRows(fx.Columns, two, 1, schema.OpInsert)
	var ce *ConvertError
	if n != 0 || !errors.As(err, &ce) || ce.Column != "dtn" || !strings.Contains(err.Error(), "every_type.dtn (date): date outside the ClickHouse type's range") || !strings.Contains(err.Error(), `"9999-12-31"`) {
		t.Fatalf("got %d rows, %v", n, err)
	}
	if b.Rows() != 0 {
		t.Fatalf("a failed row left %d rows", b.Rows())
	}
	// Every cut of a row is refused, and leaves nothing behind.
	for cut := 0; cut < len(row1); cut++ {
		if _, err := b.AppendResultRows(fx.Columns, mysqlproto.AppendRow(nil, row1[:cut]), 1, schema.OpInsert); err == nil {
			t.Fatalf("a row cut to %d of %d bytes decoded", cut, len(row1))
		}
		if b.Rows() != 0 {
			t.Fatalf("a row cut to %d bytes left %d rows", cut, b.Rows())
		}
	}
	// The wrong type for a column is refused before any row.
	cols := append([]mysqlproto.Column(nil), fx.Columns...)
	cols[1].Type = gomysql.MYSQL_TYPE_VAR_STRING
	if _, err := b.AppendResultRows(cols, fx.Rows, 1, schema.OpInsert); err == nil || !strings.Contains(err.Error(), "every_type.ti") {
		t.Fatalf("a string for a TINYINT: %v", err)
	}
}

// FuzzAppendResultRow feeds the decoder mutations of rows MariaDB sent:
// it must never panic, and a row it refuses leaves the block unchanged.
func FuzzAppendResultRow(f *testing.F) {
	fx := loadFixture(f, "every_type.json")
	for rows := fx.Rows; len(rows) > 0; {
		row, rest, ok := mysqlproto.NextRow(rows)
		if !ok {
			f.Fatal("fixture rows cut short")
		}
		f.Add(row)
		rows = rest
	}
	targets := everyTypeTargets(f, fx.Table)
	f.Fuzz(func(t *testing.T, row []byte) {
		framed := mysqlproto.AppendRow(nil, row)
		for _, target := range targets {
			b := NewBlock(target)
			n, err := b.AppendResultRows(fx.Columns, framed, 1, schema.OpInsert)
			if err != nil && (n != 0 || b.Rows() != 0) {
				t.Fatalf("%s: a refused row left %d rows (%d appended)", target.Name, b.Rows(), n)
			}
			if err == nil && b.Rows() != 1 {
				t.Fatalf("%s: a decoded row made %d rows", target.Name, b.Rows())
			}
			fuzzCheckBlock(t, b)
		}
	})
}

// TestResultDateTimeFastPath: DATETIME values of every shape (valid,
// zero, invalid, out of range, a month past 12 no server sends) decode
// through the DateTime fast path exactly as through putParts.
func TestResultDateTimeFastPath(t *testing.T) {
	table := &schema.Table{Database: "d", Name: "t", PrimaryKey: []int{0}}
	for _, c := range [][2]string{{"id", "int"}, {"dtm", "datetime"}} {
		col, err := schema.ParseColumnType(c[1], c[1])
		if err != nil {
			t.Fatal(err)
		}
		col.Name = c[0]
		table.Columns = append(table.Columns, col)
	}
	cols := []mysqlproto.Column{{Type: gomysql.MYSQL_TYPE_LONG}, {Type: gomysql.MYSQL_TYPE_DATETIME}}
	values := [][]byte{
		{0}, {4, 0xe8, 0x07, 2, 29}, {4, 0xe9, 0x07, 2, 29}, {7, 0xe8, 0x07, 12, 31, 23, 59, 59},
		{11, 0xe8, 0x07, 1, 1, 0, 0, 1, 0x3f, 0x42, 0x0f, 0}, {7, 0xe8, 0x07, 13, 1, 0, 0, 0},
		{7, 0xe8, 0x07, 0, 1, 0, 0, 0}, {7, 0xe8, 0x07, 1, 0, 0, 0, 0}, {7, 0xe8, 0x07, 1, 1, 24, 0, 0},
		{7, 0x40, 0x08, 1, 1, 0, 0, 0}, {7, 0xa0, 0x07, 1, 1, 0, 0, 0}, {4, 0xb2, 0x07, 1, 1}, {7, 0xe8, 0x07, 4, 31, 0, 0, 0},
	}
	for _, policy := range []string{schema.InvalidClamp, schema.InvalidNull, schema.InvalidError} {
		opts := schema.DefaultOptions()
		opts.InvalidDates = policy
		target, err := schema.Map(table, "d", schema.ClickHouse18, opts, schema.TableOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range values {
			row := append([]byte{0, 0, byte(i), 0, 0, 0}, v...)
			fast, slow := NewBlock(target), NewBlock(target)
			_, ferr := fast.AppendResultRows(cols, mysqlproto.AppendRow(nil, row), 1, schema.OpInsert)
			parts, _, perr := wireTemporal(v)
			if perr != nil {
				t.Fatal(perr)
			}
			slow.pending = [numFixups]uint64{}
			serr := slow.dateTimeBufs[&table.Columns[1]].putParts(parts)
			if serr == nil {
				for k, n := range slow.pending {
					slow.Fixups[k] += n
				}
				slow.cols[0].(*column.Num[int32]).Add(int32(i))
				for _, m := range slow.meta {
					m(1, schema.OpInsert)
				}
			}
			if (ferr == nil) != (serr == nil) {
				t.Fatalf("%s, value %x: fast path %v, putParts %v", policy, v, ferr, serr)
			}
			if ferr == nil && (nativeColumnBytes(t, fast, 1) != nativeColumnBytes(t, slow, 1) || fast.Fixups != slow.Fixups) {
				t.Errorf("%s, value %x: the fast path decodes otherwise", policy, v)
			}
		}
	}
}
