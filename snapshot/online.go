package snapshot

import (
	"encoding/json"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// The daemon's online copies keep a State per table in the checkpoint's
// copy state (state.TableCopy.Progress); this is what their status shows.

// CopyStatus is the copy state as the status shows it: a table the
// running batch copies (its latest progress, ps, is newer than the entry)
// is copying, with the rows it confirmed of MySQL's estimate; one the
// batch has not begun, or that waits for the next, is waiting.
func CopyStatus(saved map[string]*state.TableCopy, ps *[]TableStatus) map[schema.TableName]status.Copy {
	if len(saved) == 0 {
		return nil
	}
	live := map[schema.TableName]*TableStatus{}
	if ps != nil {
		for i := range *ps {
			live[(*ps)[i].Name] = &(*ps)[i]
		}
	}
	out := make(map[schema.TableName]status.Copy, len(saved))
	for k, e := range saved {
		name, ok := schema.ParseTableName(k)
		if !ok {
			continue
		}
		c := status.CopyOf(e, confirmedRows(k, e.Progress))
		// The progress kept is the last batch's: a table of an earlier
		// batch (started over, failed, or asked for again since) has an
		// entry newer than its status there.
		if ts := live[name]; ts != nil && e.State == state.CopyCopying && !latest(ts).Before(e.Since) {
			switch ts.State {
			case StateCopying, StateDone:
				c.State, c.Copied, c.Estimated = status.StateCopying, ts.Confirmed, max(ts.Estimate, ts.Confirmed)
			case StateFailed:
				if ts.Err != nil {
					c.Error = ts.Err.Error()
				}
			}
		}
		out[name] = c
	}
	return out
}

// latest is when a table's copy last changed state.
func latest(ts *TableStatus) time.Time {
	if ts.End.After(ts.Start) {
		return ts.End
	}
	return ts.Start
}

// confirmedRows reads the rows of table key a copy's saved progress
// (State) has confirmed in ClickHouse: 0 without any.
func confirmedRows(key string, progress json.RawMessage) uint64 {
	if len(progress) == 0 {
		return 0
	}
	var st State
	if json.Unmarshal(progress, &st) != nil {
		return 0
	}
	if p := st.Tables[key]; p != nil {
		return p.Rows
	}
	return 0
}

// CheckpointCopies is a checkpoint's copy state as the status of a
// stopped daemon shows it (`binlog2ch status`): nothing copies, so a
// table being copied waits, with the rows its saved progress confirmed.
func CheckpointCopies(cp *state.Checkpoint) map[schema.TableName]status.Copy {
	if cp == nil {
		return nil
	}
	return CopyStatus(cp.Tables, nil)
}

// ProgressOf reads a copy state entry's progress: nil without one, and
// for one begun on another server than server (it starts over).
func ProgressOf(progress json.RawMessage, server string) *State {
	var st State
	if len(progress) == 0 || json.Unmarshal(progress, &st) != nil || st.Server != server {
		return nil
	}
	if st.Tables == nil {
		st.Tables = map[string]*TableProgress{}
	}
	return &st
}

// Narrow is st with only table key's progress: that table's entry in the
// copy state.
func (st *State) Narrow(key string) (json.RawMessage, error) {
	one := *st
	one.Tables = map[string]*TableProgress{}
	if p := st.Tables[key]; p != nil {
		one.Tables[key] = p
	}
	return json.Marshal(&one)
}

// Join adds o's tables' progress to st when both are copies at one
// position, which then resume as one copy; it reports whether they are.
func (st *State) Join(o *State) bool {
	if o == nil || o.Server != st.Server || o.Position != st.Position || o.FileOffset != st.FileOffset {
		return false
	}
	for k, p := range o.Tables {
		st.Tables[k] = p
	}
	return true
}
