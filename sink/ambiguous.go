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

// AmbiguousInsertError stops a changelog table's writer whose block went
// out whole before an answer chnative cannot read, when ClickHouse's rows
// cannot tell whether it was stored.
type AmbiguousInsertError struct {
	Table, MySQL string          // db.table in ClickHouse and in MySQL
	From, To     source.Position // the block's first and last rows events
	Rows         int
	Cause        string // why ClickHouse's rows cannot tell
	Err          error  // the protocol surprise
}

func (e *AmbiguousInsertError) Unwrap() error { return e.Err }

func (e *AmbiguousInsertError) Error() string {
	return fmt.Sprintf("changelog table %s: a block of %d rows (binlog %s to %s) went out whole, then ClickHouse answered with something the native inserter cannot read (%v), so whether it stored the block is unknown, and %s; binlog2ch stopped rather than store the rows twice or lose them. Way out: stop binlog2ch and copy the table again with binlog2ch fullsync -recreate -tables %s, then start it again", e.Table, e.Rows, e.From, e.To, e.Err, e.Cause, e.MySQL)
}

// ambiguous settles a protocol surprise: whether the block is in
// ClickHouse already (the caller is done), or false to send it again; an
// *AmbiguousInsertError when ClickHouse's rows cannot tell. Only this path
// queries. shard: the rows went straight to a cluster's shard.
func (w *Writer) ambiguous(ctx context.Context, job *sendJob, err error, shard bool) (present bool, _ error) {
	var pe *chnative.ProtocolError
	if !errors.As(err, &pe) || !pe.DataSent {
		return false, nil // the server never had the whole block
	}
	t := job.block.Target()
	if t.Mode != schema.ModeChangelog {
		// The same versions again: FINAL and merges keep one.
		w.noteAmbiguous(metrics.AmbiguousResent, "a block went out whole before the answer the native inserter cannot read; sending it again, which its rows' versions make exact in this ReplacingMergeTree table", job)
		return false, nil
	}
	stop := func(cause string) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err() // stopping anyway: no verdict
		}
		err := &AmbiguousInsertError{Table: t.FullName(), MySQL: w.name.String(), From: job.from, To: job.to, Rows: job.rows, Cause: cause, Err: pe}
		w.noteAmbiguous(metrics.AmbiguousStopped, "", job)
		w.log.Error("ambiguous insert into a changelog table", "error", err)
		return false, permanent(err)
	}
	switch {
	case job.copied:
		return stop("its rows come from a table copy, which all carry the copy's one version: ClickHouse's rows cannot tell this block's from the copy's others")
	case shard || w.c.cfg.ClickHouse.Cluster != "" || len(w.c.cfg.ClickHouse.Addr) > 1:
		return stop("several ClickHouse servers are configured: counting the rows on the server clickhouse-go reaches cannot tell what the server the block went to stored")
	}
	if err := w.awaitQuery(ctx, pe.QueryID); err != nil {
		return stop(err.Error())
	}
	// A binlog block's versions are its events' own (a rows event never
	// spans blocks; a cascade writes its parent event's version), so no
	// other block of this writer, in flight or not, holds one of them; a
	// replay may have stored them before, which leaves them there once.
	want, lo, hi := job.block.VersionCounts()
	have := map[uint64]uint64{}
	col := schema.QuoteIdent(schema.VersionColumn)
	q := fmt.Sprintf("SELECT %s, count() FROM %s WHERE %s BETWEEN %d AND %d GROUP BY %s", col, t.Ref(), col, lo, hi, col)
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
		return stop("counting its rows failed: " + err.Error())
	}
	none, all, found := len(want) > 0, len(want) > 0, uint64(0)
	for v, n := range want {
		found += min(have[v], n)
		none, all = none && have[v] == 0, all && have[v] >= n
	}
	switch {
	case none:
		w.noteAmbiguous(metrics.AmbiguousResent, "a block went out whole before the answer the native inserter cannot read; ClickHouse holds none of its rows: sending it again", job)
		return false, nil
	case all:
		w.noteAmbiguous(metrics.AmbiguousPresent, "a block went out whole before the answer the native inserter cannot read; ClickHouse holds every row: not sending it again", job)
		return true, nil
	}
	return stop(fmt.Sprintf("ClickHouse holds %d of its %d rows (a block spanning partitions is stored as several parts, and the server may have stopped between them)", found, job.rows))
}

// awaitQuery waits until the server no longer runs query id: an insert
// still storing the block would have a count miss rows to come.
func (w *Writer) awaitQuery(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("the insert has no query id to look for in system.processes")
	}
	const wait = 10 * time.Minute // then the writer stops rather than count rows arriving
	deadline, pause := time.Now().Add(wait), 20*time.Millisecond
	for {
		var n uint64
		if err := w.c.conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id = ?", id).Scan(&n); err != nil { // on the same server: one configured
			return fmt.Errorf("reading system.processes for the insert (query id %s): %w", id, err)
		} else if n == 0 {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the insert (query id %s) still runs after %v", id, wait)
		}
		w.log.Info("waiting for ClickHouse to finish the ambiguous insert before counting its rows", "query_id", id)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// noteAmbiguous counts an outcome, daemon-wide and per table; msg: a WARN.
func (w *Writer) noteAmbiguous(outcome, msg string, job *sendJob) {
	w.c.m.AmbiguousInserts.WithLabelValues(outcome).Inc()
	w.tm.AmbiguousInsert(outcome)
	if msg != "" {
		w.log.Warn(msg, "rows", job.rows, "from", job.from, "to", job.to)
	}
}
