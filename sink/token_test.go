package sink

import (
	"context"
	"strconv"
	"testing"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
	"github.com/binlog2ch/binlog2ch/chsettings"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/schema/schematest"
	"github.com/binlog2ch/binlog2ch/source"
)

// TestReplayDroppedByToken: a scripted 26.x server that deduplicates by
// insert_deduplication_token, as a 22.2+ one does on a table with a
// deduplication window, forwards the inserts it stores to the real
// ClickHouse (18.16 here). The same binlog rows sent again by a second
// writer (a replay: same versions, same cuts) carry the same tokens, are
// acknowledged and dropped, and the table holds each row once. A table
// copy's rows carry no token, and are stored.
func TestReplayDroppedByToken(t *testing.T) {
	c, logs, _ := newTestSink(t, "")
	srv := servertest.Need(t)
	if srv.ClickHouse.HTTPPort == 0 {
		t.Skip("the scripted server forwards inserts to ClickHouse's HTTP port, which an external server (BINLOG2CH_TEST_CLICKHOUSE) does not name")
	}
	// 18.16 has no token and no non_replicated_deduplication_window: nothing changes there.
	if c.driverToken || c.ins.TokenOK(chnative.Server{Major: 18, Minor: 16}) || c.caps.DedupWindow {
		t.Fatalf("the token would go to 18.16 (settings %v)", c.settings)
	}
	ctx := context.Background()
	db := newTestDB(t, c, "b2c_tok")
	// A changelog table: a row stored twice is counted twice.
	tb := &schema.Table{Database: db, Name: "t",
		Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false), schematest.Col(t, "s", "varchar(20)", false)}}
	target, err := schema.Map(tb, db, c.caps, c.cfg.SchemaOptions(), c.cfg.TableOptions(db, "t"))
	if err != nil {
		t.Fatal(err)
	}
	var cols []chnativetest.Column
	for _, col := range target.Columns {
		cols = append(cols, chnativetest.Column{Name: col.Name, Type: col.Type.String()})
	}
	known := map[string]string{"async_insert": "Bool", "insert_distributed_sync": "Bool", chsettings.TokenName: "String"}
	fake := chnativetest.Start(t, chnativetest.Script{Major: 26, Minor: 9, Patch: 1, Revision: chnativetest.Revision26, ValidateClientInfo: true,
		Settings: known, Header: func(string) []chnativetest.Column { return cols }, DedupByToken: true,
		Forward:     srv.ClickHouse.Host + ":" + strconv.Itoa(srv.ClickHouse.HTTPPort),
		ForwardUser: srv.ClickHouse.User, ForwardPassword: srv.ClickHouse.Password})
	c.settings = chsettings.Known(known)
	c.ins.Opts.Addr = []string{fake.Addr()}

	// run sends three messages of two rows each through a new writer: with
	// batch.max_rows 2, one batch each.
	run := func(snapshot bool, skip uint64) {
		t.Helper()
		w := c.NewWriter(schema.TableName{Database: db, Table: "t"}, 8)
		w.SkipStored(skip)
		for i := 1; i <= 3; i++ {
			m := &Message{Seq: uint64(i), Schema: tb, Op: source.OpInsert, Version: source.RowVersion(1, uint32(100*i), 0), Versions: source.VersionSlots,
				At: source.Position{File: "binlog.000001", Pos: uint32(100 * i)}, Rows: [][]any{{int32(2*i - 1), "x"}, {int32(2 * i), "y"}}}
			if snapshot {
				m.Version, m.Versions, m.Snapshot, m.At.Pos = source.RowVersion(1, 50, 0), 1, true, 50
			}
			w.In() <- m
		}
		close(w.In())
		if err := w.Run(ctx); err != nil {
			t.Fatalf("the writer stopped: %v\n%s", err, logs)
		}
	}
	count := func() uint64 {
		t.Helper()
		var n uint64
		if err := c.conn.QueryRow(ctx, "SELECT count() FROM "+db+".t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	run(false, 0)
	run(false, 0) // the replay
	if n := count(); n != 6 {
		t.Fatalf("ClickHouse holds %d rows after the replay, want 6", n)
	}
	inserts := fake.Inserts()
	if len(inserts) != 6 {
		t.Fatalf("%d inserts, want 6", len(inserts))
	}
	seen := map[string]bool{}
	for i, ins := range inserts {
		tok := ins.Settings[chsettings.TokenName]
		want := "binlog2ch:" + db + ".t:" + strconv.FormatUint(source.RowVersion(1, uint32(100*(i%3+1)), 0), 10) + "-" +
			strconv.FormatUint(source.RowVersion(1, uint32(100*(i%3+1)), 1), 10) + ":2"
		if tok != want || len(ins.Unknown) > 0 {
			t.Errorf("insert %d: token %q, want %q (unknown settings %v)", i, tok, want, ins.Unknown)
		}
		replay := i >= 3
		if ins.Deduplicated != replay || ins.Forwarded == replay {
			t.Errorf("insert %d: deduplicated %v, forwarded %v; a replay: %v", i, ins.Deduplicated, ins.Forwarded, replay)
		}
		if replay && !seen[tok] {
			t.Errorf("insert %d: the replay's token %q is none of the first run's", i, tok)
		}
		seen[tok] = true
	}

	// A restart's replay, the checkpoint recording the first message as
	// stored (sink/replay.go): that one is not sent, the others go with
	// their tokens again and are dropped.
	run(false, source.RowVersion(1, 100, 0))
	if n, ins := count(), fake.Inserts()[6:]; n != 6 || len(ins) != 2 || !ins[0].Deduplicated || !ins[1].Deduplicated {
		t.Fatalf("after a replay skipping the stored message: %d rows (want 6), inserts %+v (want 2, both dropped)", n, ins)
	}

	run(true, 0) // a table copy's rows, all at one version: no token
	if n := count(); n != 12 {
		t.Fatalf("ClickHouse holds %d rows after the copy's, want 12", n)
	}
	for _, ins := range fake.Inserts()[8:] {
		if tok, ok := ins.Settings[chsettings.TokenName]; ok || !ins.Forwarded {
			t.Errorf("a copy's batch went with token %q, forwarded %v", tok, ins.Forwarded)
		}
	}
}

// TestBatchToken: the token's text names the table, the first and last
// versions and the rows; a copy's blocks and an empty one have none (a
// shard's part's is chsettings's TestPartToken).
func TestBatchToken(t *testing.T) {
	tb := &schema.Table{Database: "d", Name: "t", Columns: []schema.Column{schematest.Col(t, "id", "int(11)", false)}}
	target, err := schema.Map(tb, "ch", schema.ClickHouseModern, schema.DefaultOptions(), schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := block.NewBlock(target)
	job := &sendJob{block: b}
	if tok := batchToken(job); tok != "" {
		t.Errorf("an empty block's token: %q", tok)
	}
	for i, v := range []uint64{7, 9, 9, 12} {
		if err := b.Append([]any{int32(i)}, v, schema.OpInsert); err != nil {
			t.Fatal(err)
		}
	}
	if tok := batchToken(job); tok != "binlog2ch:ch.t:7-12:4" {
		t.Errorf("token %q", tok)
	}
	job.copied = true
	if tok := batchToken(job); tok != "" {
		t.Errorf("a copy's block's token: %q", tok)
	}
}
