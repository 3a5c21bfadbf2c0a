package sink

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// syncBuffer is a log destination the writer's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestSink connects to the test ClickHouse (18.16 here) as the daemon
// does, with batches of 2 rows sent one at a time.
func newTestSink(t *testing.T, extra string) (*ClickHouse, *syncBuffer, *metrics.Metrics) {
	return newTestSinkWith(t, extra, `{include: ["*.*"]}`, "")
}

// newTestSinkWith is newTestSink with this tables section, and these keys
// added to the batch section.
func newTestSinkWith(t *testing.T, extra, tables, batch string) (*ClickHouse, *syncBuffer, *metrics.Metrics) {
	t.Helper()
	srv := servertest.Need(t)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`mysql: {addr: "127.0.0.1:3306", user: u, server_id: 7}
clickhouse: {addr: [%q], user: %q, password: %q%s}
tables: %s
batch: {max_rows: 2, max_inflight: 1%s}
state_dir: %q
`, srv.ClickHouse.Addr(), srv.ClickHouse.User, srv.ClickHouse.Password, extra, tables, batch, t.TempDir())), "t.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m := metrics.New()
	c, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), m,
		func(context.Context, schema.TableName) (*schema.Table, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, logs, m
}

// newTestDB creates a database named from prefix on the test server,
// dropped after the test.
func newTestDB(t *testing.T, c *ClickHouse, prefix string) string {
	t.Helper()
	db := servertest.Name(prefix)
	createTestDB(t, c, db)
	return db
}

// createTestDB creates database db, dropped after the test.
func createTestDB(t *testing.T, c *ClickHouse, db string) {
	t.Helper()
	if err := c.conn.Exec(context.Background(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.conn.Exec(context.Background(), "DROP DATABASE "+db) })
}

// TestSettingsFromServer: the settings that go with inserts are those the
// server lists in system.settings, in a type sent as a varint; on 18.16
// (no type column, no async_insert) the squashing minimums that streams
// need, and insert_distributed_sync only in a cluster. Their choice per server version is chsettings's TestChoose.
func TestSettingsFromServer(t *testing.T) {
	c, _, _ := newTestSink(t, "")
	if typ, ok := c.settings["insert_distributed_sync"]; !ok || typ != "" {
		t.Fatalf("18.16's settings read as %v", c.settings)
	}
	if _, ok := c.settings["async_insert"]; ok {
		t.Fatalf("18.16 has no async_insert, read %v", c.settings)
	}
	squash := []chnative.Setting{{Name: chsettings.MinRowsName, Value: 1 << 30}, {Name: chsettings.MinBytesName, Value: 1 << 40}}
	if s := c.nativeSettings(chnative.Server{Major: 18, Minor: 16}); !slices.Equal(s, squash) || len(c.driverSettings) != 2 || !c.streamOK {
		t.Fatalf("outside a cluster: native %v, clickhouse-go %v, streams %v", s, c.driverSettings, c.streamOK)
	}
	cl, _, _ := newTestSink(t, ", cluster: c")
	if s := cl.nativeSettings(chnative.Server{Major: 18, Minor: 16}); !slices.Equal(s, append([]chnative.Setting{{Name: "insert_distributed_sync", Value: 1}}, squash...)) ||
		len(cl.driverSettings) != 3 || cl.driverSettings["insert_distributed_sync"] != 1 {
		t.Fatalf("in a cluster: native %v, clickhouse-go %v", s, cl.driverSettings)
	}

}

// TestFallbackReasons: the metric's reasons are chnative's and the sink's,
// each a series from the start.
func TestFallbackReasons(t *testing.T) {
	for _, r := range []string{chnative.ReasonUnknownPacket, chnative.ReasonCompression, chnative.ReasonHeaderType} {
		if !slices.Contains(metrics.FallbackReasons, r) {
			t.Errorf("chnative's reason %s is not a value of binlog2ch_native_fallbacks_total's reason", r)
		}
	}
}

// TestNativeFallback runs a writer whose native inserts reach a scripted
// current server while clickhouse-go reaches the real one (18.16 here):
// a server answer chnative cannot follow, or a header it must not write
// to, sends the table to clickhouse-go, with one WARN naming the reason
// and the counter, and every row reaches ClickHouse; the daemon goes on.
func TestNativeFallback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*chnativetest.Script, []chnativetest.Column)
		reason string // "": chnative takes every batch
		sent   bool   // the first batch went out whole before the surprise
	}{
		{"ZSTD blocks", func(s *chnativetest.Script, _ []chnativetest.Column) { s.Compression = chnativetest.MethodZSTD }, "", false},
		{"an unknown compression method", func(s *chnativetest.Script, _ []chnativetest.Column) { s.Compression = 0x42 }, metrics.FallbackCompression, false},
		{"ProfileEvents below its revision, after the data", func(s *chnativetest.Script, _ []chnativetest.Column) {
			s.AfterData = []chnativetest.Packet{chnativetest.Raw(14, []byte{0})}
		}, metrics.FallbackUnknownPacket, true},
		{"a header that is not type names", func(s *chnativetest.Script, cols []chnativetest.Column) {
			bad := slices.Clone(cols)
			bad[1].Type = "\x02\x00"
			s.Header = func(string) []chnativetest.Column { return bad }
		}, metrics.FallbackHeaderType, false},
		{"a header type without a native encoder", func(s *chnativetest.Script, cols []chnativetest.Column) {
			// What the wire says differs from the mapping while the table's
			// own columns (18.16's here) do not: clickhouse-go converts.
			lc := slices.Clone(cols)
			lc[1].Type = "LowCardinality(String)"
			s.Header = func(string) []chnativetest.Column { return lc }
		}, metrics.FallbackHeaderMismatch, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// LZ4 named: auto would send plain Native to the scripted server
			// on 127.0.0.1, whose blocks' framing these cases are about.
			c, logs, m := newTestSink(t, ", compression: lz4")
			ctx := context.Background()
			db := newTestDB(t, c, "b2c_sink")
			tb := &schema.Table{Database: db, Name: "t", PrimaryKey: []int{0},
				Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "s", "varchar(20)", false)}}
			target, err := schema.Map(tb, db, c.caps, c.cfg.SchemaOptions(), c.cfg.TableOptions(db, "t"))
			if err != nil {
				t.Fatal(err)
			}
			var cols []chnativetest.Column
			for _, col := range target.Columns {
				cols = append(cols, chnativetest.Column{Name: col.Name, Type: col.Type.String()})
			}
			script := chnativetest.Script{Major: 26, Minor: 9, Patch: 1, Revision: chnativetest.Revision26, ValidateClientInfo: true,
				Settings: map[string]string{"async_insert": "Bool", "insert_distributed_sync": "Bool"},
				Header:   func(string) []chnativetest.Column { return cols }}
			tc.edit(&script, cols)
			fake := chnativetest.Start(t, script)
			// The native inserts' settings are 26.x's, as if read from its
			// system.settings; clickhouse-go's stay those of the server it
			// reaches (18.16 refuses async_insert).
			c.settings = chsettings.Known{"async_insert": "Bool", "insert_distributed_sync": "Bool"}
			c.ins.Opts.Addr = []string{fake.Addr()}

			w := c.NewWriter(schema.TableName{Database: db, Table: "t"}, 8)
			for i := 1; i <= 2; i++ {
				w.In() <- &Message{Seq: uint64(i), Schema: tb, Op: source.OpInsert, Version: source.RowVersion(1, uint32(100*i), 0), Versions: source.VersionSlots,
					At: source.Position{File: "binlog.000001", Pos: uint32(100 * i)}, Rows: [][]any{{int32(2*i - 1), "x"}, {int32(2 * i), "y"}}}
			}
			close(w.In())
			if err := w.Run(ctx); err != nil {
				t.Fatalf("the writer stopped: %v\n%s", err, logs)
			}
			if w.Flushed() != 2 {
				t.Fatalf("flushed %d", w.Flushed())
			}

			var inCH uint64
			if err := c.conn.QueryRow(ctx, "SELECT count() FROM "+db+".t").Scan(&inCH); err != nil {
				t.Fatal(err)
			}
			fake.Close()
			inserts := fake.Inserts()
			warns := 0
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "level=WARN") && strings.Contains(l, "inserting through clickhouse-go") {
					warns++
				}
			}
			if tc.reason == "" {
				// Every batch through chnative, into the scripted server.
				if inCH != 0 || len(inserts) != 2 || warns != 0 {
					t.Fatalf("%d rows in ClickHouse, %d native inserts, %d WARNs\n%s", inCH, len(inserts), warns, logs)
				}
				for _, ins := range inserts {
					if len(ins.Blocks) != 1 || ins.Blocks[0].Rows != 2 || ins.Settings["async_insert"] != "0" || len(ins.Unknown) > 0 {
						t.Errorf("the scripted server got %+v", ins)
					}
				}
				return
			}
			// The first batch met the answer; both went through
			// clickhouse-go, the second without trying chnative again.
			if inCH != 4 || len(inserts) != 1 {
				t.Fatalf("%d rows in ClickHouse (want 4), %d native inserts (want 1)\n%s", inCH, len(inserts), logs)
			}
			if got := len(inserts[0].Blocks) == 1; got != tc.sent {
				t.Errorf("the scripted server got the block: %v, want %v", got, tc.sent)
			}
			if warns != 1 || !strings.Contains(logs.String(), "reason="+tc.reason) {
				t.Errorf("want one WARN naming %s, got\n%s", tc.reason, logs)
			}
			for _, r := range metrics.FallbackReasons {
				want := 0.0
				if r == tc.reason {
					want = 1
				}
				var got dto.Metric
				if err := m.NativeFallbacks.WithLabelValues(r).Write(&got); err != nil || got.GetCounter().GetValue() != want {
					t.Errorf("binlog2ch_native_fallbacks_total{reason=%q} = %v, want %v", r, got.GetCounter().GetValue(), want)
				}
			}
		})
	}
}
