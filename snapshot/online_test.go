package snapshot

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// TestCopyStatus: a table is copying only while the running batch's
// progress for it is newer than its entry (a status of an earlier batch,
// or one the batch has not begun, leaves it waiting, with the rows its
// saved progress confirmed); swapping and failed come from the entry; a
// failed attempt's error shows beside the waiting table.
func TestCopyStatus(t *testing.T) {
	since := time.Now().Add(-time.Minute).UTC()
	progress := func(key string, rows uint64) json.RawMessage {
		data, err := json.Marshal(&State{Server: "s", Tables: map[string]*TableProgress{key: {Rows: rows}}})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	entry := func(st string) *state.TableCopy {
		return &state.TableCopy{State: st, Reason: state.ReasonSelected, Since: since}
	}
	saved := map[string]*state.TableCopy{}
	for _, k := range []string{"d.copying", "d.done", "d.earlier", "d.again", "d.unstarted", "d.attempt", "d.listed"} {
		saved[k] = entry(state.CopyCopying)
	}
	saved["d.earlier"].Progress = progress("d.earlier", 12)
	saved["d.swap"] = entry(state.CopySwapping)
	saved["d.bad"] = entry(state.CopyFailed)
	saved["d.bad"].Error = "boom"
	name := func(table string) schema.TableName { return schema.TableName{Database: "d", Table: table} }
	after, before := since.Add(time.Second), since.Add(-time.Second)
	live := []TableStatus{
		{Name: name("copying"), State: StateCopying, Start: after, Confirmed: 40, Estimate: 100},
		{Name: name("done"), State: StateDone, End: after, Confirmed: 150, Estimate: 100},
		{Name: name("earlier"), State: StateInterrupted, Start: before, End: before.Add(time.Millisecond), Confirmed: 12},
		{Name: name("again"), State: StateCopying, Start: before, Confirmed: 30, Estimate: 100},
		{Name: name("unstarted"), State: StateWaiting, Estimate: 100},
		{Name: name("attempt"), State: StateFailed, Start: after, End: after, Err: errors.New("read: connection reset")},
	}
	got := CopyStatus(saved, &live)
	want := map[string]status.Copy{
		"copying":   {State: status.StateCopying, Copied: 40, Estimated: 100},
		"done":      {State: status.StateCopying, Copied: 150, Estimated: 150},
		"earlier":   {State: status.StateWaiting, Copied: 12},
		"again":     {State: status.StateWaiting},
		"unstarted": {State: status.StateWaiting},
		"attempt":   {State: status.StateWaiting, Error: "read: connection reset"},
		"listed":    {State: status.StateWaiting},
		"swap":      {State: status.StateSwapping},
		"bad":       {State: status.StateFailed, Error: "boom"},
	}
	if len(got) != len(want) {
		t.Errorf("%d tables, want %d: %v", len(got), len(want), got)
	}
	for table, w := range want {
		w.Reason, w.Since = state.ReasonSelected, since
		if g, ok := got[name(table)]; !ok || g != w {
			t.Errorf("%s: %+v, want %+v", table, g, w)
		}
	}
	if CheckpointCopies(nil) != nil || CopyStatus(nil, &live) != nil {
		t.Error("no copy state: a status with copies")
	}
	cp := &state.Checkpoint{}
	cp.Tables = map[string]*state.TableCopy{"d.earlier": saved["d.earlier"]}
	if c := CheckpointCopies(cp)[name("earlier")]; c.State != status.StateWaiting || c.Copied != 12 {
		t.Errorf("from a checkpoint: %+v", c)
	}
}

// TestProgressNarrowJoin: a batch's progress narrowed to one table reads
// back as that table's; copies at one position join, others (another
// position, another server, none) do not.
func TestProgressNarrowJoin(t *testing.T) {
	st := &State{Server: "s1", Position: source.Position{File: "b.000002", Pos: 400}, Tables: map[string]*TableProgress{
		"d.a": {Rows: 5}, "d.b": {Rows: 7, Complete: true}}}
	data, err := st.Narrow("d.b")
	if err != nil {
		t.Fatal(err)
	}
	b := ProgressOf(data, "s1")
	if b == nil || len(b.Tables) != 1 || b.Tables["d.b"].Rows != 7 || !b.Tables["d.b"].Complete || b.Position != st.Position {
		t.Fatalf("narrowed progress read back as %+v", b)
	}
	if ProgressOf(data, "s2") != nil || ProgressOf(nil, "s1") != nil || ProgressOf([]byte("{"), "s1") != nil {
		t.Error("progress of another server, none, or a corrupt one read as progress")
	}
	a, _ := st.Narrow("d.a")
	joined := ProgressOf(a, "s1")
	if !joined.Join(b) || len(joined.Tables) != 2 {
		t.Errorf("copies at one position did not join: %+v", joined.Tables)
	}
	other := *b
	other.Position.Pos = 500
	if joined.Join(&other) || joined.Join(nil) {
		t.Error("a copy at another position joined")
	}
}
