package state

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/source"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// TestClickHouseStoreKeepsExt: the ClickHouse store keeps what a
// checkpoint holds beside its position (GTIDs, history, versions) in its
// ext column, and a checkpoint table made before that column existed gets
// it, its old checkpoint still read.
func TestClickHouseStoreKeepsExt(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	ch, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()}, Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	db := servertest.Name("b2c_state")
	t.Cleanup(func() { _ = ch.Exec(ctx, "DROP DATABASE IF EXISTS "+db) })
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".cp (name String, fence Int64, seq UInt64, file String, pos UInt32, server String, saved_at DateTime, holder String) ENGINE = ReplacingMergeTree(seq) ORDER BY (name, fence)",
	} {
		if err := ch.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A checkpoint an older binlog2ch saved (18.16 takes inserts in
	// batches only).
	b, err := ch.PrepareBatch(ctx, "INSERT INTO "+db+".cp (name, fence, seq, file, pos, server, saved_at, holder)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append("r", int64(0), uint64(1), "binlog.000007", uint32(1234), "server_id:7", time.Unix(1_700_000_000, 0), "h"); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf(`mysql: {addr: "127.0.0.1:3306", user: u, server_id: 7}
clickhouse: {addr: [%q]}
tables: {include: ["d.*"]}
state_dir: state
`, srv.ClickHouse.Addr())), "t.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// The store alone (the lease config requires is not what is tested).
	cfg.State.Store, cfg.State.Table, cfg.State.Name = config.StoreClickHouse, db+".cp", "r"
	store := NewStore(cfg, ch, 0, nil, nil)
	old, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old == nil || old.Position != (source.Position{File: "binlog.000007", Pos: 1234}) || !reflect.DeepEqual(old.StreamState, StreamState{}) {
		t.Fatalf("the old checkpoint reads as %+v", old)
	}
	want := Checkpoint{Position: source.Position{File: "binlog.000009", Pos: 99}, Server: "server_id:8", SavedAt: time.Unix(1_800_000_000, 0).UTC(),
		StreamState: StreamState{GTID: "0-8-12", ReadGTID: "0-8-14", History: source.History{FileCreated: 5, LastType: 16, LastTime: 6, LastSize: 31},
			Offset: 21, Ceiling: 46, TableGTIDs: gtid.Tables{"d.t": {"0": 14}}}}
	// A later lease's holder saves it (store clickhouse runs with a lease).
	if err := NewStore(cfg, ch, 1, nil, nil).Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := NewStore(cfg, ch, 0, nil, nil).Load(ctx)
	if err != nil || got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v, %v\nwant %+v", got, err, want)
	}
}
