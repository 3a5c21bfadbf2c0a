package sink

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestStreamedBatches sends full batches that follow each other through a
// writer into the real server (18.16 here): the first goes alone (the
// native inserter proves itself on it), every later one into one INSERT,
// which the server stores as one part. A stream whose connection is cut
// after its third batch is resumed on another and stores every row once;
// a changelog table's batches never stream.
func TestStreamedBatches(t *testing.T) {
	const batches = 12
	for _, tc := range []struct {
		name      string
		changelog bool
		cut       bool
	}{
		{"stream", false, false},
		{"cut mid-stream", false, true},
		{"changelog", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := servertest.Name("b2c_stream")
			tables := `{include: ["*.*"]}`
			if tc.changelog {
				tables = fmt.Sprintf(`{include: ["*.*"], overrides: {%s.t: {mode: changelog}}}`, db)
			}
			// No stream ends for its time: flush_interval an hour.
			c, logs, m := newTestSinkWith(t, "", tables, ", flush_interval: 1h, max_insert_rows: 1048576")
			ctx := context.Background()
			createTestDB(t, c, db)
			cuts := 0
			if tc.cut {
				c.afterStreamBlock = func(s *chnative.Stream, blocks int) {
					if blocks == 3 && cuts == 0 {
						cuts++
						s.Abort() // a reset, as a network's
					}
				}
			}
			tb := &schema.Table{Database: db, Name: "t", PrimaryKey: []int{0},
				Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "s", "varchar(20)", false)}}
			w := c.NewWriter(schema.TableName{Database: db, Table: "t"}, batches)
			sum := sendBatches(w, tb, batches)
			if err := w.Run(ctx); err != nil {
				t.Fatalf("the writer stopped: %v\n%s", err, logs)
			}
			if w.Flushed() != batches {
				t.Fatalf("flushed %d of %d", w.Flushed(), batches)
			}
			if tc.cut && cuts != 1 {
				t.Fatalf("the stream was cut %d times", cuts)
			}
			counter := func(c interface{ Write(*dto.Metric) error }) float64 {
				var got dto.Metric
				if err := c.Write(&got); err != nil {
					t.Fatal(err)
				}
				return got.GetCounter().GetValue()
			}
			streams, streamed := counter(m.InsertStreams), counter(m.StreamedBatches)
			checkOnce(t, c, db, batches, sum, logs)
			// The parts inserted (level 0), merged or not.
			var parts uint64
			if err := c.conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM system.parts WHERE database = '%s' AND table = 't' AND level = 0", db)).Scan(&parts); err != nil {
				t.Fatal(err)
			}
			if tc.changelog {
				if streams != 0 || parts != batches {
					t.Fatalf("a changelog table: %v streams, %d parts for %d batches", streams, parts, batches)
				}
				return
			}
			if streams != 1 || streamed != batches-1 || parts != 2 {
				t.Fatalf("%v streams of %v batches, %d parts; want 1 of %d, 2 parts (the first batch alone)\n%s", streams, streamed, parts, batches-1, logs)
			}
			if tc.cut && !strings.Contains(logs.String(), "succeeded after retrying") {
				t.Fatalf("the cut stream was not retried\n%s", logs)
			}
		})
	}
}

// TestStreamsNeedTheMinimums: a connection that does not send the
// squashing minimums (its settings chosen from what another server knows)
// sends each batch alone.
func TestStreamsNeedTheMinimums(t *testing.T) {
	c, logs, m := newTestSinkWith(t, "", `{include: ["*.*"]}`, ", flush_interval: 1h, max_insert_rows: 1048576")
	c.ins.Opts.Settings = func(chnative.Server) []chnative.Setting { return nil }
	ctx := context.Background()
	db := newTestDB(t, c, "b2c_stream")
	tb := &schema.Table{Database: db, Name: "t", PrimaryKey: []int{0},
		Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false)}}
	w := c.NewWriter(schema.TableName{Database: db, Table: "t"}, 8)
	for i := 1; i <= 6; i++ {
		w.In() <- &Message{Seq: uint64(i), Schema: tb, Op: source.OpInsert, Version: source.RowVersion(1, uint32(100*i), 0), Versions: source.VersionSlots,
			At: source.Position{File: "binlog.000001", Pos: uint32(100 * i)}, Rows: [][]any{{int32(2*i - 1)}, {int32(2 * i)}}}
	}
	close(w.In())
	if err := w.Run(ctx); err != nil {
		t.Fatalf("the writer stopped: %v\n%s", err, logs)
	}
	var got dto.Metric
	if err := m.InsertStreams.Write(&got); err != nil || got.GetCounter().GetValue() != 0 {
		t.Fatalf("%v streams without the minimums", got.GetCounter().GetValue())
	}
	var n, parts uint64
	if err := c.conn.QueryRow(ctx, "SELECT count() FROM "+db+".t").Scan(&n); err != nil || n != 12 {
		t.Fatalf("%d rows, %v", n, err)
	}
	if err := c.conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM system.parts WHERE database = '%s' AND table = 't' AND level = 0", db)).Scan(&parts); err != nil || parts != 6 {
		t.Fatalf("%d parts, %v", parts, err)
	}
}

// TestStreamEndsOverlap: while a stream's end waits for the server (held
// here), the next stream takes the writer's batches; the flushed mark
// passes neither stream's batches before the first is stored, and every
// row is stored once, also when the held stream's connection is cut and
// its recording sent again on another while the next one fills.
func TestStreamEndsOverlap(t *testing.T) {
	const batches = 12
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprint("cut ", cut), func(t *testing.T) {
			sc := newStreamCase(t, "b2c_overlap", batches, 1)
			c, logs, w := sc.c, sc.logs, sc.w
			release := make(chan struct{})
			var ends, streams atomic.Int32
			var flushedMeanwhile atomic.Uint64
			c.beforeStreamEnd = func(s *chnative.Stream) {
				if ends.Add(1) != 1 {
					return
				}
				if cut {
					s.Abort() // a reset, as a network's: the end fails
				}
				select {
				case <-release:
				case <-time.After(time.Minute): // only if the next stream never comes
					t.Error("no stream took batches while the first one's end was held")
				}
			}
			c.afterStreamBlock = func(_ *chnative.Stream, blocks int) {
				if blocks == 1 && streams.Add(1) == 2 {
					// The second stream has its first batch: the first
					// is still ending, so nothing past the lone first
					// batch is flushed.
					flushedMeanwhile.Store(w.Flushed())
					close(release)
				}
			}
			sum := sc.run(t)
			if streams.Load() < 2 {
				t.Fatalf("%d streams, want the batches in several\n%s", streams.Load(), logs)
			}
			if got := flushedMeanwhile.Load(); got > 1 {
				t.Errorf("flushed up to %d while the first stream was ending", got)
			}
			if cut && !strings.Contains(logs.String(), "succeeded after retrying") {
				t.Fatalf("the cut stream's end was not retried\n%s", logs)
			}
			sc.checkOnce(t, sum)
		})
	}
}

// streamCase is a writer of db.t (id, s) on a sink whose batches are two
// rows and whose streams up to three batches (max_insert_rows: 6).
type streamCase struct {
	c       *ClickHouse
	logs    *syncBuffer
	db      string
	tb      *schema.Table
	w       *Writer
	batches int
}

func newStreamCase(t *testing.T, prefix string, batches, inflight int) *streamCase {
	c, logs, _ := newTestSinkWith(t, "", `{include: ["*.*"]}`, ", flush_interval: 1h, max_insert_rows: 6")
	c.cfg.Batch.MaxInFlight = inflight // 2: room for a third block, were it made
	db := newTestDB(t, c, prefix)
	tb := &schema.Table{Database: db, Name: "t", PrimaryKey: []int{0},
		Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "s", "varchar(20)", false)}}
	return &streamCase{c: c, logs: logs, db: db, tb: tb, w: c.NewWriter(schema.TableName{Database: db, Table: "t"}, batches), batches: batches}
}

// run sends the case's batches (sendBatches) and runs the writer until it
// has flushed them all; it returns the rows' sum of ids.
func (sc *streamCase) run(t *testing.T) int64 {
	t.Helper()
	sum := sendBatches(sc.w, sc.tb, sc.batches)
	if err := sc.w.Run(context.Background()); err != nil {
		t.Fatalf("the writer stopped: %v\n%s", err, sc.logs)
	}
	if sc.w.Flushed() != uint64(sc.batches) {
		t.Fatalf("flushed %d of %d", sc.w.Flushed(), sc.batches)
	}
	return sum
}

func (sc *streamCase) checkOnce(t *testing.T, sum int64) {
	t.Helper()
	checkOnce(t, sc.c, sc.db, sc.batches, sum, sc.logs)
}

// sendBatches queues batches of two rows each for w and closes its
// queue; it returns the sum of the rows' ids.
func sendBatches(w *Writer, tb *schema.Table, batches int) (sum int64) {
	for i := 1; i <= batches; i++ {
		rows := [][]any{{int32(2*i - 1), fmt.Sprint("a", i)}, {int32(2 * i), fmt.Sprint("b", i)}}
		sum += int64(4*i - 1)
		w.In() <- &Message{Seq: uint64(i), Schema: tb, Op: source.OpInsert, Version: source.RowVersion(1, uint32(100*i), 0), Versions: source.VersionSlots,
			At: source.Position{File: "binlog.000001", Pos: uint32(100 * i)}, Rows: rows}
	}
	close(w.In())
	return sum
}

// checkOnce: sendBatches' rows are in db.t once each, not a row twice
// (count() without FINAL).
func checkOnce(t *testing.T, c *ClickHouse, db string, batches int, sum int64, logs fmt.Stringer) {
	t.Helper()
	var n uint64
	var got int64
	if err := c.conn.QueryRow(context.Background(), "SELECT count(), toInt64(sum(id)) FROM "+db+".t").Scan(&n, &got); err != nil {
		t.Fatal(err)
	}
	if n != 2*uint64(batches) || got != sum {
		t.Fatalf("%d rows summing to %d in ClickHouse, want %d summing to %d\n%s", n, got, 2*batches, sum, logs)
	}
}

// TestTwoBlocksWhileProving: while a table's first batch proves the native
// path, the batches after it wait for it (they will stream) instead of
// filling a third block, which a stream has no use for. The first batch's
// insert is held until the writer waits for a block.
func TestTwoBlocksWhileProving(t *testing.T) {
	const batches = 6
	sc := newStreamCase(t, "b2c_proving", batches, 2)
	c := sc.c
	waited := make(chan struct{})
	var waits, first atomic.Int32
	c.blockWait = func(blocks int) {
		if waits.Add(1) == 1 { // the first batch is still held
			first.Store(int32(blocks))
			close(waited)
		}
	}
	var sends atomic.Int32
	c.beforeSendOne = func() {
		if sends.Add(1) == 1 {
			<-waited
		}
	}
	sum := sc.run(t)
	if got := first.Load(); got != 2 {
		t.Errorf("the writer waited for the first batch holding %d blocks, want 2", got)
	}
	sc.checkOnce(t, sum)
}

// TestTwoBlocksWhileStreaming: a full batch that starts a stream goes with
// two blocks too, not a third made while the last stream's block is still
// being encoded. The first stream's last batch (the 4th: the 1st went
// alone) is held in the stream until the writer, handing off the 5th,
// either waits for its block or makes a third.
func TestTwoBlocksWhileStreaming(t *testing.T) {
	const batches = 12
	sc := newStreamCase(t, "b2c_twoblocks", batches, 2)
	c, w := sc.c, sc.w
	var most atomic.Int32
	var once sync.Once
	fifth := make(chan struct{})
	// Both hooks run in the writer's goroutine: w.lastSeq is its own.
	c.newBlock = func(blocks int) {
		if int32(blocks) > most.Load() {
			most.Store(int32(blocks))
		}
		if blocks > 2 {
			once.Do(func() { close(fifth) })
		}
	}
	c.blockWait = func(int) {
		if w.lastSeq >= 5 {
			once.Do(func() { close(fifth) })
		}
	}
	var held atomic.Bool
	c.afterStreamBlock = func(_ *chnative.Stream, blocks int) {
		if blocks == 3 && !held.Swap(true) {
			<-fifth
		}
	}
	sum := sc.run(t)
	if !held.Load() {
		t.Fatalf("no stream of three batches\n%s", sc.logs)
	}
	if got := most.Load(); got > 2 {
		t.Errorf("the writer made %d blocks, want 2", got)
	}
	sc.checkOnce(t, sum)
}
