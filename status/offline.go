package status

import (
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
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
// what the checkpoint (nil: none saved; copies, its copy state) and the
// initial snapshot's state file (tables, nil when there is none) say.
// Only the tables of either are listed: which tables stream depends on
// the selection and on MySQL, which a stopped daemon's status does not
// ask.
func Offline(why string, cp *Checkpoint, tables []Table, copies map[schema.TableName]Copy, now time.Time) Status {
	at := make(map[schema.TableName]int, len(tables))
	for i := range tables {
		at[schema.TableName{Database: tables[i].Database, Table: tables[i].Table}] = i
	}
	for name, c := range copies {
		if i, ok := at[name]; ok {
			tables[i].Copy = &c
			continue
		}
		tables = append(tables, Table{Database: name.Database, Table: name.Table, Copy: &c})
	}
	settle(tables)
	st := Status{NotRunning: why, GeneratedAt: now.UTC(), Checkpoint: cp, Tables: tables, Query: Query{Sort: SortName}}
	st.Totals = totals(tables)
	st.Tables, st.TablesMatched = st.Query.Apply(tables)
	if st.Tables == nil {
		st.Tables = []Table{}
	}
	return st
}

// CopyOf is a checkpoint's copy entry as the status shows it while no
// copy runs: a table being copied waits for its copy (the next start
// resumes it), with the rows confirmed so far (copied, which the
// caller reads from the entry's progress).
func CopyOf(e *state.TableCopy, copied uint64) Copy {
	c := Copy{State: e.State, Reason: e.Reason, Since: e.Since.UTC(), Error: e.Error, Copied: copied}
	if e.State == state.CopyCopying {
		c.State = StateWaiting
	}
	return c
}
