package snapshot

import (
	"log/slog"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
)

// TableStatus is one table's copy, for progress displays and summaries.
type TableStatus struct {
	Name      schema.TableName
	State     string // waiting, copying, done, failed, interrupted
	Rows      uint64 // rows read by this run
	Confirmed uint64 // rows in ClickHouse, this run and interrupted ones before it
	Estimate  uint64 // MySQL's estimate of the table's rows (information_schema)
	Chunks    uint64 // key ranges read by this run
	Resumed   bool   // an earlier run had copied part of it
	Scan      bool   // copied by one scan (no usable key)
	// Prepared: its target is ready in ClickHouse and it waits for a
	// copy worker, or is copied.
	Prepared bool
	Start    time.Time
	End      time.Time
	Err      error
}

// Table copy states, the values of TableStatus.State.
const (
	StateWaiting     = "waiting"
	StateCopying     = "copying"
	StateDone        = "done"
	StateFailed      = "failed"
	StateInterrupted = "interrupted"
)

// Progress sums the tables' statuses.
type Progress struct {
	Tables, Prepared, Copying, Done, Failed int
	Confirmed, Estimated                    uint64 // rows
}

// Sum sums statuses.
func Sum(ts []TableStatus) Progress {
	p := Progress{Tables: len(ts)}
	for _, s := range ts {
		p.Confirmed += s.Confirmed
		p.Estimated += max(s.Estimate, s.Confirmed)
		switch s.State {
		case StateCopying:
			p.Copying++
		case StateDone:
			p.Done++
		case StateFailed:
			p.Failed++
		}
		if s.Prepared || s.State == StateDone {
			p.Prepared++
		}
	}
	return p
}

// ETA estimates the time left, elapsed after the copy began: the longer
// of the times the rows left and the tables left take at the rates so
// far (many small tables take their time per table, a few big ones per
// row). 0 when nothing is done yet to estimate from.
func (p Progress) ETA(elapsed time.Duration) time.Duration {
	var eta time.Duration
	if p.Confirmed > 0 && p.Estimated > p.Confirmed {
		eta = time.Duration(float64(elapsed) * float64(p.Estimated-p.Confirmed) / float64(p.Confirmed))
	}
	if p.Done > 0 {
		left := p.Tables - p.Done - p.Failed
		eta = max(eta, time.Duration(float64(elapsed)*float64(left)/float64(p.Done)))
	}
	return eta
}

// LogProgress returns a FullSyncOptions.Progress that logs, at most once
// per interval, how many tables are prepared and copied, the rows and an
// estimate of the time left, with a line per table being copied; and each
// table's failure once.
func LogProgress(log *slog.Logger, every time.Duration) func([]TableStatus) {
	var last time.Time
	begun := time.Now()
	failed := map[schema.TableName]bool{}
	return func(ts []TableStatus) {
		now := time.Now()
		periodic := now.Sub(last) >= every
		if periodic {
			last = now
		}
		for _, s := range ts {
			if s.State == StateCopying && periodic {
				secs := now.Sub(s.Start).Seconds()
				log.Info("copying", "table", s.Name.String(), "rows_read", s.Rows, "rows_confirmed", s.Confirmed, "estimated_rows", s.Estimate,
					"rows_per_s", int(float64(s.Rows)/max(secs, 0.001)))
			}
			if s.State == StateFailed && !failed[s.Name] {
				failed[s.Name] = true
				log.Error("table copy failed", "table", s.Name.String(), "error", s.Err)
			}
		}
		if periodic && len(ts) > 0 {
			p := Sum(ts)
			attrs := []any{"tables", p.Tables, "prepared", p.Prepared, "copied", p.Done, "copying", p.Copying, "failed", p.Failed,
				"rows_confirmed", p.Confirmed, "estimated_rows", p.Estimated}
			// Not before the rates have had an interval to settle.
			if eta := p.ETA(now.Sub(begun)); eta > 0 && now.Sub(begun) >= every {
				attrs = append(attrs, "eta", eta.Round(time.Second).String())
			}
			log.Info("copy progress", attrs...)
		}
	}
}
