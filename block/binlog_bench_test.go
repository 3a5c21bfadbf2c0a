package block

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/loadgen"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
)

var updateBinlog = flag.Bool("update-binlog", false, "capture testdata/binlog/binlog_field_test.json from a real server")

const fieldTestFixture = "../testdata/binlog/binlog_field_test.json"

// binlogFixture is rows events of binlog_field_test as MariaDB wrote them:
// the table map's column types and metadata, and each event's row images.
type binlogFixture struct {
	Types  []byte   `json:"types"`
	Metas  []uint16 `json:"metas"`
	Rows   int      `json:"rows"`
	Events [][]byte `json:"events"`
}

// TestCaptureFieldTestBinlog writes the fixture (go test ./block -run
// CaptureFieldTestBinlog -update-binlog): 1000 generated rows inserted into
// MariaDB, their rows events kept undecoded.
func TestCaptureFieldTestBinlog(t *testing.T) {
	if !*updateBinlog {
		t.Skip("run with -update-binlog to capture the fixture")
	}
	srv := servertest.Need(t)
	my := openMySQL(t, srv, "")
	pos := masterPos(t, my)
	db := servertest.Name("b2c_capture")
	conn, err := my.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gen := loadgen.NewFieldTestGen(7).Compact(8)
	for _, q := range []string{loadgen.SessionSetup, "CREATE DATABASE " + db, "USE " + db, binlog2ch.BinlogFieldTestDDL,
		gen.Insert(db, "binlog_field_test_1", 1000)} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })

	var fx binlogFixture
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 4245, Flavor: gomysql.MariaDBFlavor, Host: srv.MySQL.Host, Port: uint16(srv.MySQL.Port),
		User: srv.MySQL.User, Password: srv.MySQL.Password, Logger: slog.New(slog.DiscardHandler),
		RowsEventDecodeFunc: func(e *replication.RowsEvent, data []byte) error {
			p, err := e.DecodeHeader(data)
			if err == nil && string(e.Table.Table) == "binlog_field_test_1" {
				fx.Events = append(fx.Events, append([]byte(nil), data[p:]...))
				fx.Types, fx.Metas = e.Table.ColumnType, e.Table.ColumnMeta
			}
			return err
		},
	})
	defer syncer.Close()
	stream, err := syncer.StartSync(pos)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The insert's rows events are all decoded before its XID arrives here.
	for seen := false; !seen; {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if re, ok := ev.Event.(*replication.RowsEvent); ok && string(re.Table.Table) == "binlog_field_test_1" {
			seen = true
		}
	}
	for {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.Event.(*replication.XIDEvent); ok {
			break
		}
	}
	fx.Rows = 1000
	data, err := json.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(fieldTestFixture), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fieldTestFixture, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fieldTestBinlog loads the fixture and a block for its table.
func fieldTestBinlog(tb testing.TB) (*binlogFixture, *Block) {
	data, err := os.ReadFile(fieldTestFixture)
	if err != nil {
		tb.Fatalf("%v (capture it with -update-binlog)", err)
	}
	var fx binlogFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		tb.Fatal(err)
	}
	table := schematest.BinlogFieldTest(tb)
	for i := range table.Columns {
		table.Columns[i].BinlogType, table.Columns[i].BinlogMeta = fx.Types[i], fx.Metas[i]
	}
	opts := schema.DefaultOptions()
	opts.InvalidDates = schema.InvalidClamp // the generator spans MySQL's whole DATE range
	target, err := schema.Map(table, "bench", schema.ClickHouse18, opts, schema.TableOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return &fx, NewBlock(target)
}

func decodeFixture(fx *binlogFixture, b *Block) error {
	for _, ev := range fx.Events {
		for data := ev; len(data) > 0; {
			n, err := b.AppendImage(data, 1, schema.OpInsert)
			if err != nil {
				return err
			}
			data = data[n:]
		}
	}
	return nil
}

func TestFieldTestBinlogFixtureDecodes(t *testing.T) {
	fx, b := fieldTestBinlog(t)
	if err := decodeFixture(fx, b); err != nil {
		t.Fatal(err)
	}
	if b.Rows() != fx.Rows {
		t.Fatalf("decoded %d rows, want %d", b.Rows(), fx.Rows)
	}
}

// BenchmarkAppendImage decodes binlog_field_test row images, as MariaDB
// wrote them, into ClickHouse columns: the per-row cost of the daemon's
// decoding (without go-mysql's event parsing).
func BenchmarkAppendImage(b *testing.B) {
	fx, block := fieldTestBinlog(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		block.Reset()
		if err := decodeFixture(fx, block); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fx.Rows), "ns/row")
}

// TestReserveTakesALargerBatch: a block reserved after a batch takes a
// batch an eighth larger without growing a buffer (a writer's batches
// end after the rows event that filled them, a few rows apart; growing
// copied every column of the block again).
func TestReserveTakesALargerBatch(t *testing.T) {
	fx, full := fieldTestBinlog(t)
	if err := decodeFixture(fx, full); err != nil {
		t.Fatal(err)
	}
	next := NewBlock(full.Target())
	next.Reserve(full)
	// Each fixed-width column's capacity (strings go into chunks, which
	// a reused block keeps).
	caps := func() (c []int) {
		for _, col := range next.cols {
			v := reflect.ValueOf(col).Elem()
			for _, f := range []string{"Vals", "Data"} {
				if fv := v.FieldByName(f); fv.IsValid() {
					c = append(c, fv.Cap())
				}
			}
		}
		if len(c) < len(next.cols)/2 {
			t.Fatalf("%d capacities for %d columns", len(c), len(next.cols))
		}
		return c
	}
	before := caps()
	// The fixture's rows, then an eighth more of them.
	if err := decodeFixture(fx, next); err != nil {
		t.Fatal(err)
	}
	extra := fx.Rows / 8
	for _, ev := range fx.Events {
		for data := ev; len(data) > 0 && extra > 0; extra-- {
			n, err := next.AppendImage(data, 1, schema.OpInsert)
			if err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
	}
	if next.Rows() != fx.Rows+fx.Rows/8 {
		t.Fatalf("%d rows, want %d", next.Rows(), fx.Rows+fx.Rows/8)
	}
	if after := caps(); !slices.Equal(before, after) {
		t.Errorf("buffers grew from %v to %v", before, after)
	}
}
