package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
)

func TestBarLine(t *testing.T) {
	if got := barLine(50, 100, 50, 1, "copying"); !strings.Contains(got, "[###############...............]  50%  50/~100 rows  50 rows/s  ETA 1s  copying") {
		t.Errorf("half done: %q", got)
	}
	// More rows than MySQL estimated: the estimate grows, nothing overflows.
	if got := barLine(150, 100, 150, 0, "done"); !strings.Contains(got, "100%  150/~150 rows") {
		t.Errorf("beyond the estimate: %q", got)
	}
}

// TestBarDisplay: log lines written through the display appear above the
// bars, which are redrawn below them.
func TestBarDisplay(t *testing.T) {
	var out bytes.Buffer
	d := &barDisplay{w: &out}
	now := time.Now()
	d.update([]snapshot.TableStatus{
		{Name: schema.TableName{Database: "d", Table: "a"}, State: "copying", Confirmed: 10, Rows: 20, Estimate: 100, Start: now.Add(-time.Second)},
		{Name: schema.TableName{Database: "d", Table: "bb"}, State: "failed", Err: errors.New("x")},
	})
	if _, err := d.Write([]byte("a log line\n")); err != nil {
		t.Fatal(err)
	}
	d.finish()
	s := out.String()
	logAt := strings.Index(s, "a log line")
	lastBars := strings.LastIndex(s, "overall")
	if logAt < 0 || lastBars < logAt || strings.Count(s, "d.bb") != 2 || !strings.Contains(s, "\x1b[1A\x1b[2K") {
		t.Errorf("display output:\n%q", s)
	}
}

// TestBarDisplayManyTables: with many tables only those being copied or
// failed get a bar; the overall line counts the tables copied.
func TestBarDisplayManyTables(t *testing.T) {
	var out bytes.Buffer
	d := &barDisplay{w: &out}
	var ts []snapshot.TableStatus
	for i := 0; i < 2000; i++ {
		s := snapshot.TableStatus{Name: schema.TableName{Database: "d", Table: fmt.Sprintf("t%04d", i)}, State: snapshot.StateWaiting}
		switch {
		case i < 1500:
			s.State, s.Confirmed = snapshot.StateDone, 3
		case i < 1504:
			s.State, s.Start = snapshot.StateCopying, time.Now()
		case i == 1999:
			s.State, s.Err = snapshot.StateFailed, errors.New("x")
		}
		ts = append(ts, s)
	}
	d.update(ts)
	s := out.String()
	if n := strings.Count(s, "\n"); n != 6 || !strings.Contains(s, "overall (1500 of 2000 tables copied)") || !strings.Contains(s, "d.t1503") || !strings.Contains(s, "d.t1999") {
		t.Errorf("display output:\n%s", s)
	}
}
