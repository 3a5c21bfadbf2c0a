// Package retry runs an operation again after failures retrying may fix,
// with capped exponential backoff and one WARN line per failure. It must
// not know of MySQL or ClickHouse: the caller says which errors are
// transient, and what a success or a failure means to it beyond the log
// line (metrics, health) stays with the caller. It imports only the
// standard library.
package retry

import (
	"context"
	"log/slog"
	"time"
)

// Policy is how Do retries.
type Policy struct {
	// First is the wait after the first failure; each later wait doubles
	// the one before, up to Max.
	First, Max time.Duration
	// Transient reports whether retrying may fix err. Do calls it once for
	// each failed attempt, before it looks at ctx, so it may also count the
	// failure.
	Transient func(err error) bool
	// Log gets "<What> failed; retrying" at WARN before each wait, with
	// error, attempt and retry_in.
	Log  *slog.Logger
	What string
	// After is the clock, time.After when nil; tests pass one that fires at
	// once.
	After func(time.Duration) <-chan time.Time
}

// Outcome is how Do ended.
type Outcome struct {
	// Err is op's last error; nil: the last attempt succeeded.
	Err error
	// Attempts is how many times op ran.
	Attempts int
	// Interrupted: ctx ended while Do waited to try again; Err is the
	// failure before the wait.
	Interrupted bool
}

// Do runs op until it succeeds, fails with an error Transient says
// retrying cannot fix, or ctx ends (after a failure or during a wait).
// There is no limit on attempts: ctx bounds them.
func Do(ctx context.Context, p Policy, op func(context.Context) error) Outcome {
	after := p.After
	if after == nil {
		after = time.After
	}
	delay := p.First
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return Outcome{Attempts: attempt}
		}
		if !p.Transient(err) || ctx.Err() != nil {
			return Outcome{Err: err, Attempts: attempt}
		}
		p.Log.Warn(p.What+" failed; retrying", "error", err, "attempt", attempt, "retry_in", delay)
		select {
		case <-ctx.Done():
			return Outcome{Err: err, Attempts: attempt, Interrupted: true}
		case <-after(delay):
		}
		delay = min(delay*2, p.Max)
	}
}
