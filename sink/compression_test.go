package sink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestCompression writes rows through a table's writer with each
// clickhouse.compression into the real test server (18.16 here), among
// them a value of 3 MiB whose block spans several frames (or, with none,
// goes plain): every row lands equal, through chnative, with no fallback
// to clickhouse-go. clickhouse-go's connection, opened with the same
// method, reads them back and inserts a batch of its own.
func TestCompression(t *testing.T) {
	for _, method := range []string{config.CompressionLZ4, config.CompressionZSTD, config.CompressionNone, config.CompressionLZ4Adaptive, config.CompressionAuto} {
		t.Run(method, func(t *testing.T) {
			c, logs, m := newTestSink(t, ", compression: "+method)
			if got, want := c.ins.Opts.Compression, map[string]chnative.Compression{"lz4": chnative.CompressionLZ4,
				"zstd": chnative.CompressionZSTD, "none": chnative.CompressionNone, "lz4-adaptive": chnative.CompressionLZ4Adaptive,
				"auto": chnative.CompressionAuto}[method]; got != want {
				t.Fatalf("the native inserter compresses with %s, want %s", got, want)
			}
			ctx := context.Background()
			db := newTestDB(t, c, "b2c_comp")
			tb := &schema.Table{Database: db, Name: "t", PrimaryKey: []int{0},
				Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "s", "longtext", false)}}
			want := map[int32]string{}
			w := c.NewWriter(schema.TableName{Database: db, Table: "t"}, 8)
			for i := 1; i <= 5; i++ {
				rows := [][]any{{int32(2*i - 1), fmt.Sprintf("row %d", 2*i-1)}, {int32(2 * i), strings.Repeat(fmt.Sprint(i), 10*i)}}
				if i == 3 {
					rows[1][1] = strings.Repeat("0123456789abcdef", 3<<20/16)
				}
				if i == 4 { // bytes LZ4 cannot shrink: NONE frames with lz4
					r := rand.New(rand.NewPCG(4, 4))
					b := make([]byte, 3<<20)
					for j := range b {
						b[j] = byte(r.Uint32())
					}
					rows[1][1] = string(b)
				}
				for _, r := range rows {
					want[r[0].(int32)] = r[1].(string)
				}
				w.In() <- &Message{Seq: uint64(i), Schema: tb, Op: source.OpInsert, Version: source.RowVersion(1, uint32(100*i), 0), Versions: source.VersionSlots,
					At: source.Position{File: "binlog.000001", Pos: uint32(100 * i)}, Rows: rows}
			}
			close(w.In())
			if err := w.Run(ctx); err != nil {
				t.Fatalf("the writer stopped: %v\n%s", err, logs)
			}
			if w.Flushed() != 5 {
				t.Fatalf("flushed %d of 5", w.Flushed())
			}
			if strings.Contains(logs.String(), "inserting through clickhouse-go") {
				t.Fatalf("a batch fell back to clickhouse-go\n%s", logs)
			}
			for _, r := range metrics.FallbackReasons {
				var got dto.Metric
				if err := m.NativeFallbacks.WithLabelValues(r).Write(&got); err != nil || got.GetCounter().GetValue() != 0 {
					t.Errorf("binlog2ch_native_fallbacks_total{reason=%q} = %v", r, got.GetCounter().GetValue())
				}
			}
			// The incompressible value's frames went uncompressed with lz4
			// (LZ4 did not shrink them) and lz4-adaptive (its probe saw
			// they would not shrink), never with zstd or none.
			frames := map[string]float64{}
			for _, r := range []string{metrics.FramesIncompressible, metrics.FramesProbe} {
				var got dto.Metric
				if err := m.UncompressedFrames.WithLabelValues(r).Write(&got); err != nil {
					t.Fatal(err)
				}
				frames[r] = got.GetCounter().GetValue()
			}
			probe, plain := frames[metrics.FramesProbe], frames[metrics.FramesIncompressible]
			var ok bool
			switch method {
			case config.CompressionLZ4:
				ok = probe == 0 && plain >= 3
			case config.CompressionLZ4Adaptive:
				ok = probe >= 2 // and small frames too small to probe
			default:
				ok = probe == 0 && plain == 0
			}
			if !ok {
				t.Errorf("binlog2ch_clickhouse_uncompressed_frames_total: %v", frames)
			}
			// The insert connections opened, by what they used: auto
			// decided none for the test server, on this host.
			used := method
			if method == config.CompressionAuto {
				used = config.CompressionNone
			}
			for _, label := range []string{"lz4", "zstd", "none", "lz4-adaptive"} {
				var got dto.Metric
				if err := m.InsertConnections.WithLabelValues(label).Write(&got); err != nil {
					t.Fatal(err)
				}
				if n := got.GetCounter().GetValue(); (label == used) != (n > 0) {
					t.Errorf("binlog2ch_clickhouse_insert_connections_total{compression=%q} = %v with %s", label, n, method)
				}
			}
			// clickhouse-go's own insert, with the same compression.
			batch, err := c.conn.PrepareBatch(ctx, "INSERT INTO "+db+".t (id, s)")
			if err != nil {
				t.Fatal(err)
			}
			for id := int32(100); id < 103; id++ {
				want[id] = strings.Repeat("x", int(id))
				if err := batch.Append(id, want[id]); err != nil {
					t.Fatal(err)
				}
			}
			if err := batch.Send(); err != nil {
				t.Fatalf("clickhouse-go's insert with %s: %v", method, err)
			}
			rows, err := c.conn.Query(ctx, "SELECT id, s FROM "+db+".t ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			got := map[int32]string{}
			for rows.Next() {
				var id int32
				var s string
				if err := rows.Scan(&id, &s); err != nil {
					t.Fatal(err)
				}
				if _, dup := got[id]; dup {
					t.Errorf("row %d twice", id)
				}
				got[id] = s
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("%d rows in ClickHouse, want %d", len(got), len(want))
			}
			for id, s := range want {
				if got[id] != s {
					t.Errorf("row %d holds %d bytes %.20q, want %d bytes %.20q", id, len(got[id]), got[id], len(s), s)
				}
			}
		})
	}
}
