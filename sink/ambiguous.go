package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// An ambiguous insert: a block went out whole, then the server answered
// with something chnative cannot read (chnative.ProtocolError with
// DataSent), so whether ClickHouse stored it is unknown. A
// ReplacingMergeTree table takes it again harmlessly (the same versions);
// a changelog table would keep both copies, so the writer asks ClickHouse
// which it is. Only this path queries: the hot path never does.

// AmbiguousInsertError stops a changelog table's writer whose ambiguous
// insert ClickHouse's rows cannot settle: sending the block again could
// store its rows twice, not sending it could lose them.
type AmbiguousInsertError struct {
	Table    string          // the ClickHouse table, db.table
	MySQL    string          // the MySQL table, db.table
	From, To source.Position // the block's first and last rows events
	Rows     int
	Cause    string // why ClickHouse's rows cannot tell
	Err      error  // the protocol surprise
}

func (e *AmbiguousInsertError) Error() string {
	where := "binlog " + e.From.String()
	if e.To != e.From {
		where += " to " + e.To.String()
	}
	return fmt.Sprintf("changelog table %s: a block of %d rows (%s) went out whole, then ClickHouse answered with something the native inserter cannot read (%v), so whether it stored the block is unknown, and %s; "+
		"binlog2ch stopped rather than store the rows twice or lose them. Way out: stop binlog2ch and copy the table again with binlog2ch fullsync -recreate -tables %s, then start it again",
		e.Table, e.Rows, where, e.Err, e.Cause, e.MySQL)
}

func (e *AmbiguousInsertError) Unwrap() error { return e.Err }

// ambiguousWait bounds the wait for an ambiguous insert the server still
// runs: past it, the writer stops rather than count rows still arriving.
const ambiguousWait = 10 * time.Minute

// ambiguous settles an insert that met a protocol surprise. It reports
// whether the block is in ClickHouse already (the caller is done), or
// false to send it again; an *AmbiguousInsertError when ClickHouse's rows
// cannot tell.
func (w *Writer) ambiguous(ctx context.Context, job *sendJob, pe *chnative.ProtocolError) (present bool, err error) {
	t := job.block.Target()
	if !pe.DataSent {
		return false, nil // the server never had the whole block
	}
	if t.Mode != schema.ModeChangelog {
		w.noteAmbiguous(metrics.AmbiguousResent)
		w.log.Warn("a block went out whole before the answer the native inserter cannot read; sending it again, which its rows' versions make exact in this ReplacingMergeTree table",
			"rows", job.rows, "from", job.from, "to", job.to)
		return false, nil
	}
	stop := func(cause string) (bool, error) {
		w.noteAmbiguous(metrics.AmbiguousStopped)
		err := &AmbiguousInsertError{Table: t.FullName(), MySQL: w.name.String(), From: job.from, To: job.to, Rows: job.rows, Cause: cause, Err: pe}
		w.log.Error("ambiguous insert into a changelog table", "error", err)
		return false, err
	}
	switch {
	case job.copied:
		return stop("its rows come from a table copy, which all carry the copy's one version: ClickHouse's rows cannot tell this block's from the copy's others")
	case w.c.cfg.ClickHouse.Cluster != "" || len(w.c.cfg.ClickHouse.Addr) > 1:
		return stop("several ClickHouse servers are configured: counting the rows on the server clickhouse-go reaches cannot tell what the server the block went to stored")
	case pe.QueryID == "":
		return stop("the insert has no query id to look for in system.processes")
	}
	if err := w.awaitQuery(ctx, pe.QueryID); err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		return stop(err.Error())
	}
	// The block's rows by version: a binlog block's versions are its
	// events' own (a rows event never spans blocks; cascades write the
	// parent event's version, which no child event has), so another
	// block of this writer, in flight or not, holds none of them; a
	// replay may have stored them before, which leaves them there once.
	want := map[uint64]uint64{}
	lo, hi := ^uint64(0), uint64(0)
	for _, v := range job.block.Versions() {
		want[v]++
		lo, hi = min(lo, v), max(hi, v)
	}
	if len(want) == 0 {
		return stop("the block has no versions to count")
	}
	have := map[uint64]uint64{}
	q := "SELECT " + schema.QuoteIdent(schema.VersionColumn) + ", count() FROM " + t.Ref().String() +
		" WHERE " + schema.QuoteIdent(schema.VersionColumn) + fmt.Sprintf(" BETWEEN %d AND %d GROUP BY ", lo, hi) + schema.QuoteIdent(schema.VersionColumn)
	err = w.c.Retry(ctx, w.log, metrics.StageInsert, "count an ambiguous insert's rows", func(ctx context.Context) error {
		clear(have)
		rows, err := w.c.conn.Query(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v, n uint64
			if err := rows.Scan(&v, &n); err != nil {
				return err
			}
			have[v] = n
		}
		return rows.Err()
	})
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		return stop("counting its rows failed: " + err.Error())
	}
	var none, all = true, true
	var found uint64
	for v, n := range want {
		found += min(have[v], n)
		none = none && have[v] == 0
		all = all && have[v] >= n
	}
	switch {
	case none:
		w.noteAmbiguous(metrics.AmbiguousResent)
		w.log.Warn("a block went out whole before the answer the native inserter cannot read; ClickHouse holds none of its rows: sending it again",
			"rows", job.rows, "from", job.from, "to", job.to)
		return false, nil
	case all:
		w.noteAmbiguous(metrics.AmbiguousPresent)
		w.log.Warn("a block went out whole before the answer the native inserter cannot read; ClickHouse holds every row: not sending it again",
			"rows", job.rows, "from", job.from, "to", job.to)
		return true, nil
	}
	return stop(fmt.Sprintf("ClickHouse holds %d of its %d rows (a block spanning partitions is stored as several parts, and the server may have stopped between them)", found, job.rows))
}

// awaitQuery waits until the server no longer runs query id: an insert
// whose answer the client could not read may still be storing the block,
// and a count before it ends would miss rows still to come.
func (w *Writer) awaitQuery(ctx context.Context, id string) error {
	deadline := time.Now().Add(ambiguousWait)
	pause := 20 * time.Millisecond
	for logged := false; ; {
		var n uint64
		if err := w.c.conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id = ?", id).Scan(&n); err != nil {
			return fmt.Errorf("reading system.processes for the insert (query id %s): %w", id, err)
		}
		if n == 0 {
			return nil
		}
		if !logged {
			w.log.Info("waiting for ClickHouse to finish the ambiguous insert before counting its rows", "query_id", id)
			logged = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the insert (query id %s) still runs after %v", id, ambiguousWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// ambiguousShard settles a protocol surprise on rows sent straight to a
// shard: a changelog table's stops the writer (a replica's count cannot
// tell what the shard stored), a ReplacingMergeTree table's go again.
func (w *Writer) ambiguousShard(t *schema.Target, rows int, err error) error {
	var pe *chnative.ProtocolError
	if !errors.As(err, &pe) || !pe.DataSent {
		return nil
	}
	if t.Mode != schema.ModeChangelog {
		w.noteAmbiguous(metrics.AmbiguousResent)
		return nil
	}
	w.noteAmbiguous(metrics.AmbiguousStopped)
	return &AmbiguousInsertError{Table: t.FullName(), MySQL: w.name.String(), Rows: rows, Err: pe,
		Cause: "the rows went straight to a shard of a cluster, where counting them on a replica cannot tell what the shard stored"}
}

// noteAmbiguous counts an ambiguous insert's outcome, daemon-wide and in
// the table's status.
func (w *Writer) noteAmbiguous(outcome string) {
	w.c.m.AmbiguousInserts.WithLabelValues(outcome).Inc()
	w.tm.AmbiguousInsert(outcome)
}

// withPositions fills in the block's positions on an AmbiguousInsertError
// made without them (a shard's).
func withPositions(err error, job *sendJob) error {
	var amb *AmbiguousInsertError
	if errors.As(err, &amb) && amb.From == (source.Position{}) {
		amb.From, amb.To = job.from, job.to
	}
	return err
}
