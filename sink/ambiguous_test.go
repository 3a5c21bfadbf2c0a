package sink

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestAmbiguousInsert: the first block of a table meets, after it went out
// whole, an answer chnative cannot read (ProfileEvents below its revision).
// The scripted server stands in for the native inserts; with forward it
// first stores the block in the real ClickHouse (18.16 here), as a real
// server may, without it the block goes nowhere. A changelog table then
// holds each row once either way: counted present, the block is not sent
// again; counted absent, it is. A ReplacingMergeTree table's block goes
// again, and FINAL reads it once. The outcome is counted in
// binlog2ch_ambiguous_inserts_total and in the table's status.
func TestAmbiguousInsert(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keyed    bool
		forward  bool
		outcome  string
		stored   uint64 // rows in ClickHouse without FINAL
		mentions string // in the WARN (the error when stopped)
		snapshot bool   // the rows are a table copy's, all at its version
	}{
		{"changelog, the block landed", false, true, metrics.AmbiguousPresent, 6, "holds every row", false},
		{"changelog, the block did not land", false, false, metrics.AmbiguousResent, 6, "holds none of its rows", false},
		{"ReplacingMergeTree, the block landed", true, true, metrics.AmbiguousResent, 8, "ReplacingMergeTree", false},
		// A copy's blocks share one version: the count cannot tell.
		{"changelog, a copy's block landed", false, true, metrics.AmbiguousStopped, 2, "rows come from a table copy", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, logs, m := newTestSink(t, "")
			srv := servertest.Need(t)
			if srv.ClickHouse.HTTPPort == 0 {
				t.Skip("the scripted server forwards inserts to ClickHouse's HTTP port, which an external server (BINLOG2CH_TEST_CLICKHOUSE) does not name")
			}
			ctx := context.Background()
			db := newTestDB(t, c, "b2c_amb")
			tb := &schema.Table{Database: db, Name: "t",
				Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "s", "varchar(20)", false)}}
			if tc.keyed {
				tb.PrimaryKey = []int{0}
			}
			target, err := schema.Map(tb, db, c.caps, c.cfg.SchemaOptions(), c.cfg.TableOptions(db, "t"))
			if err != nil {
				t.Fatal(err)
			}
			if changelog := target.Mode == schema.ModeChangelog; changelog == tc.keyed {
				t.Fatalf("mode %s for a table keyed %v", target.Mode, tc.keyed)
			}
			var cols []chnativetest.Column
			for _, col := range target.Columns {
				cols = append(cols, chnativetest.Column{Name: col.Name, Type: col.Type.String()})
			}
			script := chnativetest.Script{Major: 26, Minor: 9, Patch: 1, Revision: chnativetest.Revision26, ValidateClientInfo: true,
				Settings:  map[string]string{"async_insert": "Bool", "insert_distributed_sync": "Bool"},
				Header:    func(string) []chnativetest.Column { return cols },
				AfterData: []chnativetest.Packet{chnativetest.Raw(14, []byte{0})}}
			if tc.forward {
				script.Forward = srv.ClickHouse.Host + ":" + strconv.Itoa(srv.ClickHouse.HTTPPort)
				script.ForwardUser, script.ForwardPassword = srv.ClickHouse.User, srv.ClickHouse.Password
			}
			fake := chnativetest.Start(t, script)
			c.settings = chsettings.Known{"async_insert": "Bool", "insert_distributed_sync": "Bool"}
			c.ins.Opts.Addr = []string{fake.Addr()}

			name := schema.TableName{Database: db, Table: "t"}
			w := c.NewWriter(name, 8)
			for i := 1; i <= 3; i++ {
				m := &Message{Seq: uint64(i), Schema: tb, Op: source.OpInsert, Version: source.RowVersion(1, uint32(100*i), 0), Versions: source.VersionSlots,
					At: source.Position{File: "binlog.000001", Pos: uint32(100 * i)}, Rows: [][]any{{int32(2*i - 1), "x"}, {int32(2 * i), "y"}}}
				if tc.snapshot {
					m.Version, m.Versions, m.Snapshot, m.At.Pos = source.RowVersion(1, 50, 0), 1, true, 50
				}
				w.In() <- m
			}
			close(w.In())
			errc := make(chan error, 1)
			go func() { errc <- w.Run(ctx) }()
			err = <-errc
			if tc.outcome == metrics.AmbiguousStopped {
				var amb *AmbiguousInsertError
				if !errors.As(err, &amb) {
					t.Fatalf("the writer stopped with %v, want an AmbiguousInsertError\n%s", err, logs)
				}
				for _, want := range []string{db + ".t", "binlog.000001:50", tc.mentions, "fullsync -recreate -tables " + db + ".t"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not say %q: %v", want, err)
					}
				}
			} else if err != nil {
				t.Fatalf("the writer stopped: %v\n%s", err, logs)
			}
			fake.Close()
			inserts := fake.Inserts()
			if len(inserts) != 1 || len(inserts[0].Blocks) != 1 || inserts[0].Forwarded != tc.forward || inserts[0].QueryID == "" {
				t.Fatalf("the scripted server got %+v", inserts)
			}

			var stored, ids, distinct uint64
			if err := c.conn.QueryRow(ctx, "SELECT count(), uniqExact(id), uniqExact(id, _version) FROM "+db+".t").Scan(&stored, &ids, &distinct); err != nil {
				t.Fatal(err)
			}
			wantIDs := min(tc.stored, 6)
			if stored != tc.stored || ids != wantIDs || (!tc.snapshot && distinct != 6) {
				t.Errorf("ClickHouse holds %d rows, %d ids, %d (id, version) pairs; want %d, %d, 6\n%s", stored, ids, distinct, tc.stored, wantIDs, logs)
			}
			if tc.keyed {
				var final uint64
				if err := c.conn.QueryRow(ctx, "SELECT count() FROM "+db+".t FINAL WHERE _is_deleted = 0").Scan(&final); err != nil || final != 6 {
					t.Errorf("FINAL reads %d rows (%v), want 6", final, err)
				}
			}
			if !strings.Contains(logs.String(), tc.mentions) {
				t.Errorf("no WARN saying %q\n%s", tc.mentions, logs)
			}
			for _, o := range metrics.AmbiguousOutcomes {
				want := 0.0
				if o == tc.outcome {
					want = 1
				}
				var got dto.Metric
				if err := m.AmbiguousInserts.WithLabelValues(o).Write(&got); err != nil || got.GetCounter().GetValue() != want {
					t.Errorf("binlog2ch_ambiguous_inserts_total{outcome=%q} = %v, want %v", o, got.GetCounter().GetValue(), want)
				}
			}
			if st := m.ForTable(name).State(); len(st.Ambiguous) != 1 || st.Ambiguous[tc.outcome] != 1 {
				t.Errorf("the table's status counts %v, want %s 1", st.Ambiguous, tc.outcome)
			}
		})
	}
}
