package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/sink"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// Failed tables (replication.on_table_error: skip_table): a table whose
// writer fails with an error of its own is marked failed in the copy
// state, its writer goes, and its rows events are skipped (neither sent
// nor counted against the checkpoint) until a copy of it starts (a
// resync, or the next start), whose versions are above theirs. A writer's
// goroutine reports its error; the router marks the table at its next
// Tick, or where it waits on that writer.

// writerFailures are failures reported and not yet taken by the router.
type writerFailures struct {
	mu      sync.Mutex
	list    []writerFailure
	pending atomic.Bool // list is not empty
}

type writerFailure struct {
	rt  *tableWriter
	err error
}

// skipTables reports whether replication.on_table_error is skip_table.
func (s *Router) skipTables() bool {
	return s.cfg.Replication.OnTableError == config.OnSkipTable
}

// tableOwnError reports whether a writer's error is its table's own, one
// no other table shares: a value that cannot be converted, a type or
// character set without a mapping, a column rename the server cannot do,
// a row image a session wrote partial without a value the table needs,
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
	var partial *source.PartialImageError // a session's binlog_row_image, about this table's rows
	return errors.As(err, &changed) || errors.As(err, &convert) || errors.As(err, &typ) || errors.As(err, &cs) || errors.As(err, &rename) || errors.As(err, &partial)
}

// writerFailed is called from a writer's goroutine when its Run returned
// err. It reports whether the router takes the failure (the table is to
// be marked failed); if not, the caller stops the daemon.
func (s *Router) writerFailed(rt *tableWriter, err error, stopping bool) bool {
	take := !stopping && s.skipTables() && tableOwnError(err)
	s.failures.mu.Lock()
	rt.gone.Store(true)
	close(rt.exited) // whoever waits on the writer stops waiting
	if take {
		s.failures.list = append(s.failures.list, writerFailure{rt: rt, err: err})
		s.failures.pending.Store(true)
	}
	s.failures.mu.Unlock()
	if take {
		s.stream.Wake()
	}
	return take
}

// takeFailures marks the tables of the failures reported, in the router's
// goroutine (or run's, once the stream stopped). A writer no longer held
// under a name (dropped or renamed away since) is not: its DDL may be
// lost, so the daemon stops.
func (s *Router) takeFailures() error {
	if !s.failures.pending.Load() {
		return nil
	}
	s.failures.mu.Lock()
	list := s.failures.list
	s.failures.list = nil
	s.failures.pending.Store(false)
	s.failures.mu.Unlock()
	for _, f := range list {
		var name *schema.TableName
		for n, x := range s.writers {
			if x == f.rt {
				name = &n
			}
		}
		if name == nil {
			return fmt.Errorf("writer %s: %w; its table was dropped or renamed since, so it is not skipped (replication.on_table_error: skip_table)", f.rt.w.Name(), f.err)
		}
		if s.cascadeChild(*name) {
			return fmt.Errorf("writer %s: %w; not skipped (replication.on_table_error: skip_table): foreign-key cascades write into it, and derive other tables' rows from it", name, f.err)
		}
		s.markFailed(*name, f.rt, f.err)
	}
	return nil
}

// cascadeChild reports whether a replicated table's rows cascade into t:
// the cascades then write t's rows themselves, not through its writer.
func (s *Router) cascadeChild(t schema.TableName) bool {
	if s.fkeys == nil {
		return false
	}
	for _, k := range s.fkeys.Of(t) {
		if k.Cascades() && s.replicates(k.Parent) {
			return true
		}
	}
	return false
}

// markFailed marks t failed: its writer (nil: none) goes without
// counting against the checkpoint any more, and its events are skipped
// from now on.
func (s *Router) markFailed(t schema.TableName, rt *tableWriter, err error) {
	r, c, key := s, s.copies, t.String()
	if rt != nil {
		if !rt.closed {
			close(rt.w.In())
			rt.closed = true
		}
		delete(s.writers, t)
		s.retire(t, rt.w, rt.dispatched)
		s.all = slices.DeleteFunc(s.all, func(x *tableWriter) bool { return x == rt })
		s.queued.Add(-(rt.sentBytes - rt.takenBytes.Load()))
		rt.marks = nil
		rt.tm.PendingSince.Store(0)
	}
	// A copy of t under way or queued is given up (its swap would lack
	// the rows skipped); its batch goes on, saving into no entry of t.
	c.mu.Lock()
	c.tables[key] = &state.TableCopy{State: state.CopyFailed, Reason: state.ReasonFailed, Since: time.Now().UTC(), Error: err.Error()}
	c.mu.Unlock()
	c.pending = slices.DeleteFunc(c.pending, func(x schema.TableName) bool { return x == t })
	s.skipping[t] = true
	r.m.TablesMarkedFailed.Inc()
	s.noteCopies()
	r.log.Error("table cannot be applied: marked failed, its events are skipped and it falls behind until it is copied again; the other tables go on (replication.on_table_error: skip_table)",
		"table", key, "error", err, "binlog", r.readPos.Load().String(),
		"to_do", "fix the cause, then `binlog2ch resync -config FILE -tables "+key+"` (a copy online), or restart binlog2ch: a start copies failed tables online")
}

// skipped reports whether m, for table t, is dropped because t failed,
// and gives back what the router counted for it. Rows, flushes and runs
// go; a DROP or RENAME still goes to ClickHouse, so the copy that
// repairs the table finds it where its name says.
func (s *Router) skipped(t schema.TableName, m *sink.Message) bool {
	if !s.skipping[t] || m.DDL == ddl.Drop || m.DDL == ddl.RenameTable {
		return false
	}
	if m.Queued != nil {
		m.Queued.Add(-m.Bytes)
	}
	if m.FlushDone != nil {
		close(m.FlushDone)
	}
	return true
}

// stopSkipping ends the skip of t's events: its copy starts, or t left
// the copy state.
func (s *Router) stopSkipping(t schema.TableName) { delete(s.skipping, t) }

// noteCopies sets the copy gauges: tables copying, tables failed.
func (s *Router) noteCopies() {
	c := s.copies
	c.mu.Lock()
	failed := 0
	for _, e := range c.tables {
		if e.State == state.CopyFailed {
			failed++
		}
	}
	s.m.TablesCopying.Set(float64(len(c.tables) - failed))
	c.mu.Unlock()
	s.m.TablesFailed.Set(float64(failed))
}

// track has the writer count m's bytes it takes, so a failed one's queue
// gives back the rest, and releases a flush barrier's waiter also when
// the writer fails first (skip_table only: else a failure stops all).
func (rt *tableWriter) track(m *sink.Message) {
	if size := m.Bytes; size > 0 && m.Taken == nil {
		rt.sentBytes += size
		m.Taken = func() { rt.takenBytes.Add(size) }
	}
	if m.FlushDone == nil {
		return
	}
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
