package status

import (
	"time"

	"github.com/binlog2ch/binlog2ch/state"
)

// CheckpointOf is a saved checkpoint as the status shows it; store names
// where it is kept (state.Store's String).
func CheckpointOf(cp *state.Checkpoint, store string) *Checkpoint {
	if cp == nil {
		return nil
	}
	return &Checkpoint{Position: cp.Position.String(), GTID: cp.GTID, SavedAt: cp.SavedAt.UTC(), Server: cp.Server, Store: store}
}

// Offline is the status of a daemon that did not answer: why not, and
// what the checkpoint (nil: none saved) and the initial snapshot's state
// file (tables, nil when there is none) say.
func Offline(why string, cp *Checkpoint, tables []Table, now time.Time) Status {
	st := Status{NotRunning: why, GeneratedAt: now.UTC(), Checkpoint: cp, Tables: tables, Query: Query{Sort: SortName}}
	st.Totals = totals(tables)
	st.Tables, st.TablesMatched = st.Query.Apply(tables)
	if st.Tables == nil {
		st.Tables = []Table{}
	}
	return st
}
