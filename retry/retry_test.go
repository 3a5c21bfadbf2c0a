package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	errFlaky = errors.New("connection reset")
	errBad   = errors.New("syntax error")
)

func transient(err error) bool { return errors.Is(err, errFlaky) }

// clock is a fake After: it records each wait and fires at once.
type clock struct{ waits []time.Duration }

func (c *clock) after(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

// failing is an op that fails with errs in turn, then succeeds.
func failing(errs ...error) (op func(context.Context) error, calls *int) {
	n := 0
	return func(context.Context) error {
		n++
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, &n
}

func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestBackoff: the waits double from First and stop at Max; each failure
// retried is one WARN line with its attempt and wait.
func TestBackoff(t *testing.T) {
	var buf bytes.Buffer
	clk := &clock{}
	op, calls := failing(errFlaky, errFlaky, errFlaky, errFlaky)
	out := Do(context.Background(), Policy{First: 100 * time.Millisecond, Max: 300 * time.Millisecond,
		Transient: transient, Log: logTo(&buf), What: "insert", After: clk.after}, op)
	if out.Err != nil || out.Attempts != 5 || out.Interrupted || *calls != 5 {
		t.Fatalf("outcome %+v after %d calls, want success at attempt 5", out, *calls)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
	if !slices.Equal(clk.waits, want) {
		t.Errorf("waits %v, want %v", clk.waits, want)
	}
	ls := lines(t, &buf)
	if len(ls) != 4 {
		t.Fatalf("%d log lines, want 4:\n%s", len(ls), buf.String())
	}
	for i, l := range ls {
		if l["level"] != "WARN" || l["msg"] != "insert failed; retrying" || l["error"] != errFlaky.Error() ||
			l["attempt"] != float64(i+1) || l["retry_in"] != float64(want[i]) {
			t.Errorf("line %d: %v", i, l)
		}
	}
}

// TestPermanent: an error Transient rejects ends Do at once, unlogged.
func TestPermanent(t *testing.T) {
	var buf bytes.Buffer
	clk := &clock{}
	asked := 0
	op, _ := failing(errFlaky, errBad, errFlaky)
	out := Do(context.Background(), Policy{First: time.Second, Max: time.Minute, Log: logTo(&buf), What: "DDL", After: clk.after,
		Transient: func(err error) bool { asked++; return transient(err) }}, op)
	if out.Err != errBad || out.Attempts != 2 || out.Interrupted {
		t.Fatalf("outcome %+v, want errBad at attempt 2", out)
	}
	if asked != 2 {
		t.Errorf("Transient asked %d times, want once a failure (2)", asked)
	}
	if len(clk.waits) != 1 || len(lines(t, &buf)) != 1 {
		t.Errorf("waits %v, log %q: want one of each", clk.waits, buf.String())
	}
}

// TestCanceledAfterFailure: a failure once ctx ended is returned as it is,
// without a wait; Transient still sees it.
func TestCanceledAfterFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := &clock{}
	asked := 0
	out := Do(ctx, Policy{First: time.Second, Max: time.Minute, Log: slog.New(slog.DiscardHandler), What: "read", After: clk.after,
		Transient: func(err error) bool { asked++; return true }},
		func(context.Context) error { cancel(); return errFlaky })
	if out.Err != errFlaky || out.Attempts != 1 || out.Interrupted {
		t.Fatalf("outcome %+v, want errFlaky at attempt 1, not interrupted", out)
	}
	if asked != 1 || len(clk.waits) != 0 {
		t.Errorf("Transient asked %d times, waits %v: want 1 and none", asked, clk.waits)
	}
}

// TestInterrupted: ctx ending during a wait ends Do with the failure
// before it, marked Interrupted.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	after := func(time.Duration) <-chan time.Time {
		cancel()
		return nil // never fires: only ctx can end the wait
	}
	op, calls := failing(errFlaky, errFlaky)
	out := Do(ctx, Policy{First: time.Hour, Max: time.Hour, Transient: transient, Log: logTo(&buf), What: "walk the key", After: after}, op)
	if out.Err != errFlaky || out.Attempts != 1 || !out.Interrupted || *calls != 1 {
		t.Fatalf("outcome %+v after %d calls, want errFlaky at attempt 1, interrupted", out, *calls)
	}
	if ls := lines(t, &buf); len(ls) != 1 || ls[0]["msg"] != "walk the key failed; retrying" {
		t.Errorf("log %q", buf.String())
	}
}

// TestRealClock: without After, Do waits with time.After (zero waits here).
func TestRealClock(t *testing.T) {
	op, _ := failing(errFlaky, errFlaky)
	out := Do(context.Background(), Policy{Transient: transient, Log: slog.New(slog.DiscardHandler), What: "x"}, op)
	if out.Err != nil || out.Attempts != 3 {
		t.Fatalf("outcome %+v, want success at attempt 3", out)
	}
}
