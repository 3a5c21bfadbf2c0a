package state

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// Store keeps the checkpoint.
type Store interface {
	Load(ctx context.Context) (*Checkpoint, error)
	Save(ctx context.Context, cp Checkpoint) error
	String() string
}

// NewStore is the store cfg names; fence is the lease's token (0 without a
// lease) and valid reports whether the lease is still held: a holder that
// lost it must not move the checkpoint.
//
// settings go with the ClickHouse store's inserts: the ones binlog2ch's
// inserts take on this server (async_insert=0 where it has it, so a saved
// checkpoint is in the table when Save returns), nil for none.
func NewStore(cfg *config.Config, ch driver.Conn, fence int64, valid func() bool, settings clickhouse.Settings) Store {
	if cfg.State.Store == config.StoreClickHouse {
		return &chStore{cfg: cfg, ch: ch, fence: fence, valid: valid, settings: settings}
	}
	return fileStore{dir: cfg.StateDir}
}

type fileStore struct{ dir string }

func (f fileStore) Load(context.Context) (*Checkpoint, error)   { return LoadFile(f.dir) }
func (f fileStore) Save(_ context.Context, cp Checkpoint) error { return SaveFile(f.dir, cp) }
func (f fileStore) String() string                              { return f.dir }

// chStore keeps the checkpoint in a replicated ClickHouse table, one row
// per save. The newest row wins by (fence, seq): fence is the lease's
// ZooKeeper creation zxid, larger for every later lease, so a stale holder
// that writes after losing its lease never overrides its successor.
type chStore struct {
	cfg      *config.Config
	ch       driver.Conn
	fence    int64
	valid    func() bool
	settings clickhouse.Settings
	seq      atomic.Uint64
	ready    bool
}

func (s *chStore) String() string {
	return fmt.Sprintf("ClickHouse table %s, name %q", s.cfg.State.Table, s.cfg.State.Name)
}

func (s *chStore) table() string {
	db, table, _ := strings.Cut(s.cfg.State.Table, ".")
	return schema.QuoteIdent(db) + "." + schema.QuoteIdent(table)
}

// create makes the table if missing. In cluster mode every server holds
// a replica of it (see checkpointDDL), so any host reading from any server
// finds the checkpoint.
func (s *chStore) create(ctx context.Context) error {
	if s.ready {
		return nil
	}
	db, table, _ := strings.Cut(s.cfg.State.Table, ".")
	create, addExt := checkpointDDL(db, table, s.cfg.ClickHouse.Cluster)
	for _, q := range create {
		if err := s.ch.Exec(ctx, q); err != nil {
			return fmt.Errorf("checkpoint table %s: %w", s.cfg.State.Table, err)
		}
	}
	// A table made by binlog2ch before ext existed gets it.
	var n uint64
	if err := s.ch.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = 'ext'", db, table).Scan(&n); err != nil {
		return fmt.Errorf("checkpoint table %s: %w", s.cfg.State.Table, err)
	}
	if n == 0 {
		if err := s.ch.Exec(ctx, addExt); err != nil {
			return fmt.Errorf("checkpoint table %s: add column ext: %w", s.cfg.State.Table, err)
		}
	}
	s.ready = true
	return nil
}

// checkpointDDL is the checkpoint table's DDL, the same on every server
// profile (its types are 18.16's): create makes the database and the table
// if missing, addExt adds the column ext to a table made before it existed.
// In cluster mode every server holds a replica of the table under one
// ZooKeeper path for all shards.
func checkpointDDL(db, table, cluster string) (create []string, addExt string) {
	full := schema.QuoteIdent(db) + "." + schema.QuoteIdent(table)
	onCluster, engine := "", "ReplacingMergeTree(seq)"
	if cluster != "" {
		onCluster = " ON CLUSTER " + schema.QuoteIdent(cluster)
		engine = fmt.Sprintf("ReplicatedReplacingMergeTree('/clickhouse/binlog2ch/%s/%s', '{shard}_{replica}', seq)", db, table)
	}
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + schema.QuoteIdent(db) + onCluster,
		"CREATE TABLE IF NOT EXISTS " + full + onCluster + ` (
  name String, fence Int64, seq UInt64,
  file String, pos UInt32, server String, saved_at DateTime, holder String, ext String
) ENGINE = ` + engine + " ORDER BY (name, fence)",
	}, "ALTER TABLE " + full + onCluster + " ADD COLUMN ext String"
}

func (s *chStore) Load(ctx context.Context) (*Checkpoint, error) {
	if err := s.create(ctx); err != nil {
		return nil, err
	}
	// Newest by (fence, seq), with or without merges having run.
	rows, err := s.ch.Query(ctx, "SELECT file, pos, server, saved_at, ext FROM "+s.table()+
		" WHERE name = ? ORDER BY fence DESC, seq DESC LIMIT 1", s.cfg.State.Name)
	if err != nil {
		return nil, fmt.Errorf("read the checkpoint from %s: %w", s, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var cp Checkpoint
	var ext string
	if err := rows.Scan(&cp.File, &cp.Pos, &cp.Server, &cp.SavedAt, &ext); err != nil {
		return nil, fmt.Errorf("read the checkpoint from %s: %w", s, err)
	}
	if ext != "" {
		dec := json.NewDecoder(strings.NewReader(ext))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cp.StreamState); err != nil {
			return nil, fmt.Errorf("checkpoint in %s is corrupt (ext: %v)", s, err)
		}
	}
	if _, err := source.FileIndex(cp.File); err != nil || cp.Pos < 4 {
		return nil, fmt.Errorf("checkpoint in %s is corrupt (position %s)", s, cp.Position)
	}
	cp.SavedAt = cp.SavedAt.UTC()
	return &cp, rows.Err()
}

func (s *chStore) Save(ctx context.Context, cp Checkpoint) error {
	if s.valid != nil && !s.valid() {
		return fmt.Errorf("save checkpoint: %w", ErrLeaseLost)
	}
	if err := s.create(ctx); err != nil {
		return err
	}
	settings := clickhouse.Settings{}
	for k, v := range s.settings {
		settings[k] = v
	}
	if q := s.cfg.State.InsertQuorum; q > 0 {
		settings["insert_quorum"] = q
	}
	if len(settings) > 0 {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(settings))
	}
	ext, err := json.Marshal(cp.StreamState)
	if err != nil {
		return err
	}
	b, err := s.ch.PrepareBatch(ctx, "INSERT INTO "+s.table()+" (name, fence, seq, file, pos, server, saved_at, holder, ext)")
	if err != nil {
		return fmt.Errorf("save checkpoint to %s: %w", s, err)
	}
	if err := b.Append(s.cfg.State.Name, s.fence, s.seq.Add(1), cp.File, cp.Pos, cp.Server, cp.SavedAt, Holder(s.cfg), string(ext)); err != nil {
		_ = b.Abort()
		return fmt.Errorf("save checkpoint to %s: %w", s, err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("save checkpoint to %s: %w", s, err)
	}
	return nil
}

// Read reads the checkpoint from the store cfg names (ch is only used by
// store clickhouse); nil without error when there is none.
func Read(ctx context.Context, cfg *config.Config, ch driver.Conn) (*Checkpoint, error) {
	return NewStore(cfg, ch, 0, nil, nil).Load(ctx)
}
