package router

import (
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Each checkpoint records how far the tables stored past it were stored
// (state.StreamState.Stored), and a restart's first writer of each such
// table skips the rows events up to there (sink/replay.go), so that a
// replay sends no second copy of rows ClickHouse holds.

// storedAtStart are the records of the checkpoint the stream starts from,
// by table, until each table's writer takes its own. A table in the copy
// state gets none: its ClickHouse table is being made again.
func storedAtStart(from *state.Checkpoint) map[schema.TableName]uint64 {
	out := map[schema.TableName]uint64{}
	if from == nil {
		return out
	}
	for k, v := range from.Stored {
		t, ok := schema.ParseTableName(k)
		if !ok || from.Tables[k] != nil {
			continue
		}
		out[t] = v
	}
	return out
}

// takeStored gives a new writer of t the record the start's checkpoint
// holds for it, once: a later writer of the name (after a DROP and
// CREATE) writes a table made since.
func (s *Router) takeStored(t schema.TableName) (uint64, bool) {
	v, ok := s.stored[t]
	if ok {
		delete(s.stored, t)
	}
	return v, ok
}

// forgetStored drops the records of the tables a statement changes before
// their writers take them: the statement, read again, may change what
// those tables hold in ClickHouse (a writer that took its record ends its
// skip at the statement's message itself).
func (s *Router) forgetStored(st source.Statement) {
	if len(s.stored) == 0 {
		return
	}
	if !st.Parsed {
		clear(s.stored)
		return
	}
	for _, ef := range st.Effects {
		if ef.Kind == ddl.DropDatabase {
			for t := range s.stored {
				if t.Database == ef.Table.Database {
					delete(s.stored, t)
				}
			}
		}
		delete(s.stored, ef.Table)
		delete(s.stored, ef.NewTable)
	}
}

// storedPast is the record a checkpoint at commit point p saves: each
// table whose writer stored rows events after p, with the first version
// of its last stored one, and the start's records no writer took, while
// they are past p.
func (s *Router) storedPast(p commitPoint) map[string]uint64 {
	var from uint64
	if idx, err := source.FileIndex(p.pos.File); err == nil {
		if f, ok := source.VersionFile(idx, p.offset); ok {
			from = source.RowVersion(f, p.pos.Pos, 0)
		}
	}
	var out map[string]uint64
	add := func(t schema.TableName, v uint64) {
		if v == 0 || v < from {
			return
		}
		if out == nil {
			out = map[string]uint64{}
		}
		out[t.String()] = v
	}
	for t, v := range s.stored {
		add(t, v)
	}
	for t, rt := range s.writers {
		if rt.w.Flushed() > p.seq {
			add(t, rt.w.StoredVersion())
		}
	}
	return out
}
