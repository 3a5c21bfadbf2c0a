package replicator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/state"
)

// Failed tables (replication.on_table_error: skip_table): a table whose
// writer fails with an error of its own is marked failed in the copy
// state (state.CopyFailed), its writer goes, and its rows events are
// skipped (neither sent nor counted against the checkpoint, which moves
// on) until a copy of it starts: a resync, or the next start, which
// copies failed tables online. The table is behind meanwhile; the copy
// makes it whole, its versions above every skipped event's.
//
// A writer's goroutine reports its error (writerFailed); the router
// marks the table at its next Tick, or at once where it waits on that
// writer (takeFailures). Errors that are not one table's stop the daemon
// as without the option.

// writerFailures are the failures writers reported and the router has not
// taken yet.
type writerFailures struct {
	mu      sync.Mutex
	list    []writerFailure
	pending atomic.Bool // list is not empty
}

type writerFailure struct {
	w   *sink.Writer
	err error
}

// skipTables reports whether replication.on_table_error is skip_table.
func (s *router) skipTables() bool {
	return s.r.cfg.Replication.OnTableError == config.OnSkipTable
}

// tableOwnError reports whether a writer's error is its table's own, one
// no other table shares: a value that cannot be converted, a type or
// character set without a mapping, a column rename the server cannot do,
// its ClickHouse table changed by hand. Anything else (ClickHouse or
// MySQL unreachable, which is retried anyway, a ClickHouse error the sink
// does not trace to the table, a shutdown) is not: the daemon stops.
func tableOwnError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var changed *chtables.TargetChangedError
	var convert *block.ConvertError
	var typ *schema.UnsupportedTypeError
	var cs *schema.UnsupportedCharsetError
	var rename *schema.RenameColumnError
	return errors.As(err, &changed) || errors.As(err, &convert) || errors.As(err, &typ) || errors.As(err, &cs) || errors.As(err, &rename)
}

// writerFailed is called from a writer's goroutine when its Run returned
// err. It reports whether the router takes the failure (the table is to
// be marked failed); if not, the caller stops the daemon.
func (s *router) writerFailed(w *sink.Writer, exited chan struct{}, err error, stopping bool) bool {
	take := !stopping && s.skipTables() && tableOwnError(err)
	s.failures.mu.Lock()
	close(exited) // whoever waits on the writer stops waiting
	if take {
		s.failures.list = append(s.failures.list, writerFailure{w: w, err: err})
		s.failures.pending.Store(true)
	}
	s.failures.mu.Unlock()
	if take {
		s.stream.Wake()
	}
	return take
}

// takeFailures marks failed the tables whose writers reported a failure.
// It runs in the router's goroutine (or in run's, once the stream has
// stopped). A writer the router no longer holds under a name (its table
// dropped or renamed away since) cannot be marked: its DDL may be lost,
// so the daemon stops.
func (s *router) takeFailures() error {
	if !s.failures.pending.Load() {
		return nil
	}
	s.failures.mu.Lock()
	list := s.failures.list
	s.failures.list = nil
	s.failures.pending.Store(false)
	s.failures.mu.Unlock()
	for _, f := range list {
		var rt *tableWriter
		var name schema.TableName
		for n, x := range s.writers {
			if x.w == f.w {
				rt, name = x, n
			}
		}
		if rt == nil {
			return fmt.Errorf("writer %s: %w; its table was dropped or renamed since, so it is not skipped (replication.on_table_error: skip_table)", f.w.Name(), f.err)
		}
		if s.cascadeChild(name) {
			return fmt.Errorf("writer %s: %w; not skipped (replication.on_table_error: skip_table): foreign-key cascades write into it, and derive other tables' rows from it", name, f.err)
		}
		s.markFailed(name, rt, f.err)
	}
	return nil
}

// cascadeChild reports whether a replicated table's rows cascade into t:
// the cascades then write t's rows themselves, not through its writer.
func (s *router) cascadeChild(t schema.TableName) bool {
	if s.fkeys == nil {
		return false
	}
	for _, k := range s.fkeys.Of(t) {
		if k.Cascades() && s.r.replicates(k.Parent) {
			return true
		}
	}
	return false
}

// markFailed marks t failed: its writer goes without counting against
// the checkpoint any more, and its events are skipped from now on.
func (s *router) markFailed(t schema.TableName, rt *tableWriter, err error) {
	r, c, key := s.r, s.copies, t.String()
	if !rt.closed {
		close(rt.w.In())
		rt.closed = true
	}
	delete(s.writers, t)
	s.retire(t, rt.w, rt.dispatched)
	for i, x := range s.all {
		if x == rt {
			s.all = append(s.all[:i], s.all[i+1:]...)
			break
		}
	}
	// The rows events it never took stay counted in the router's queue
	// bound: they are given back.
	s.queued.Add(-(rt.sentBytes - rt.takenBytes.Load()))
	rt.marks = nil
	rt.tm.PendingSince.Store(0)
	// A copy of t under way or queued is given up: the rows skipped from
	// now on would be missing from its swap. Its batch goes on without it
	// (the entry it saves into is no longer t's).
	c.mu.Lock()
	c.tables[key] = &state.TableCopy{State: state.CopyFailed, Reason: state.ReasonFailed, Since: time.Now().UTC(), Error: err.Error()}
	c.mu.Unlock()
	c.pending = deleteName(c.pending, t)
	if s.skipping == nil {
		s.skipping = map[schema.TableName]bool{}
	}
	s.skipping[t] = true
	r.m.TablesMarkedFailed.Inc()
	s.noteCopies()
	at := ""
	if p := r.readPos.Load(); p != nil {
		at = p.String()
	}
	r.log.Error("table cannot be applied: marked failed, its events are skipped and it falls behind until it is copied again; the other tables go on (replication.on_table_error: skip_table)",
		"table", key, "error", err, "binlog", at,
		"to_do", "fix the cause, then `binlog2ch resync -config FILE -tables "+key+"` (a copy online), or restart binlog2ch: a start copies failed tables online")
}

// skipped reports whether m, for table t, is dropped because t failed,
// and gives back what the router counted for it. Rows, flushes and runs
// go; a DROP or RENAME still goes to ClickHouse, so the copy that
// repairs the table finds it where its name says.
func (s *router) skipped(t schema.TableName, m *sink.Message) bool {
	if !s.skipping[t] || m.DDL == ddl.Drop || m.DDL == ddl.RenameTable {
		return false
	}
	if m.Queued != nil {
		m.Queued.Add(-m.Bytes)
	}
	if m.Taken != nil {
		m.Taken()
	}
	if m.FlushDone != nil {
		close(m.FlushDone)
	}
	return true
}

// stopSkipping ends the skip of t's events: its copy starts (the copy's
// versions are above every event skipped), or t left the copy state.
func (s *router) stopSkipping(t schema.TableName) { delete(s.skipping, t) }

// noteCopies sets the copy gauges: tables copying, tables failed.
func (s *router) noteCopies() {
	c := s.copies
	c.mu.Lock()
	failed := 0
	for _, e := range c.tables {
		if e.State == state.CopyFailed {
			failed++
		}
	}
	n := len(c.tables)
	c.mu.Unlock()
	s.r.m.TablesCopying.Set(float64(n - failed))
	s.r.m.TablesFailed.Set(float64(failed))
}

// countTaken has the writer count the bytes of m it took (skip_table
// only): a failed writer's queue then gives back the rest.
func (rt *tableWriter) countTaken(m *sink.Message) {
	if m.Bytes == 0 || m.Taken != nil {
		return
	}
	size := m.Bytes
	rt.sentBytes += size
	m.Taken = func() { rt.takenBytes.Add(size) }
}

// flushOrExit has a flush barrier's waiter released also when the writer
// fails before it gets to the barrier (skip_table only: otherwise the
// failure stops the reader, and the waiter with it).
func (rt *tableWriter) flushOrExit(m *sink.Message) {
	done, inner := m.FlushDone, make(chan struct{})
	m.FlushDone = inner
	go func() {
		select {
		case <-inner:
		case <-rt.exited:
		}
		close(done)
	}()
}

func deleteName(ts []schema.TableName, t schema.TableName) []schema.TableName {
	out := ts[:0]
	for _, x := range ts {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}
