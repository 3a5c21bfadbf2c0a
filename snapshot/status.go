package snapshot

import (
	"log/slog"
	"time"

	"github.com/binlog2ch/binlog2ch/source"
)

// TableStatus is one table's copy, for progress displays and summaries.
type TableStatus struct {
	Name      source.TableName
	State     string // waiting, copying, done, failed, interrupted
	Rows      uint64 // rows read by this run
	Confirmed uint64 // rows in ClickHouse, this run and interrupted ones before it
	Estimate  uint64 // MySQL's estimate of the table's rows (information_schema)
	Chunks    uint64 // key ranges read by this run
	Resumed   bool   // an earlier run had copied part of it
	Scan      bool   // copied by one scan (no usable key)
	Start     time.Time
	End       time.Time
	Err       error
}

// Table copy states, the values of TableStatus.State.
const (
	StateWaiting     = "waiting"
	StateCopying     = "copying"
	StateDone        = "done"
	StateFailed      = "failed"
	StateInterrupted = "interrupted"
)

// LogProgress returns a FullSyncOptions.Progress that logs every table's
// progress at most once per interval, and each table once when it ends.
func LogProgress(log *slog.Logger, every time.Duration) func([]TableStatus) {
	var last time.Time
	ended := map[source.TableName]bool{}
	return func(ts []TableStatus) {
		now := time.Now()
		periodic := now.Sub(last) >= every
		if periodic {
			last = now
		}
		var total, est uint64
		for _, s := range ts {
			total += s.Confirmed
			est += max(s.Estimate, s.Confirmed)
			if s.State == StateCopying && periodic {
				secs := now.Sub(s.Start).Seconds()
				log.Info("copying", "table", s.Name.String(), "rows_read", s.Rows, "rows_confirmed", s.Confirmed, "estimated_rows", s.Estimate,
					"rows_per_s", int(float64(s.Rows)/max(secs, 0.001)))
			}
			if (s.State == StateDone || s.State == StateFailed) && !ended[s.Name] {
				ended[s.Name] = true
				if s.State == StateFailed {
					log.Error("table copy failed", "table", s.Name.String(), "error", s.Err)
				}
			}
		}
		if periodic && len(ts) > 0 {
			log.Info("copy progress", "rows_confirmed", total, "estimated_rows", est, "tables", len(ts))
		}
	}
}
