package sink

import (
	"sync"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestParkHandshake: a writer parks only with nothing queued, and a
// message sent while it parks is never left without a goroutine: either
// the parking writer sees it and goes on, or Wake tells the sender to run
// the writer again; never both, never neither.
func TestParkHandshake(t *testing.T) {
	w := &Writer{in: make(chan *Message, 4), c: &ClickHouse{m: metrics.New()}}
	w.in <- &Message{Seq: 1}
	if w.park() {
		t.Fatal("parked with a message queued")
	}
	if w.Wake() {
		t.Fatal("Wake of a writer that did not park")
	}
	<-w.in
	if !w.park() {
		t.Fatal("did not park with nothing queued")
	}
	w.in <- &Message{Seq: 2}
	if !w.Wake() {
		t.Fatal("Wake after a send to a parked writer did not ask for a run")
	}
	if w.Wake() {
		t.Fatal("a second Wake asked for a second run")
	}
	<-w.in

	// Concurrently: a sender and a parking writer, many times over. Each
	// message must end up with exactly one owner.
	for i := 0; i < 2000; i++ {
		var wg sync.WaitGroup
		var parked, woken bool
		wg.Add(2)
		go func() { defer wg.Done(); parked = w.park() }()
		go func() { defer wg.Done(); w.in <- &Message{Seq: 3}; woken = w.Wake() }()
		wg.Wait()
		// Either the writer went on (not parked) or the sender runs it
		// (woken); a parked writer nobody runs would leave the message.
		if parked && !woken {
			t.Fatalf("round %d: the writer parked with a message queued and Wake did not run it", i)
		}
		<-w.in
		w.Wake() // reset for the next round
	}
}

// TestLiveSchedule: while the reader is live and nothing more is queued,
// a batch goes at once when the table's last insert is older than
// live_flush_interval, else that long after it; never later than
// flush_interval after its first row; and not live when rows are queued
// or the reader is behind.
func TestLiveSchedule(t *testing.T) {
	cfg := &config.Config{}
	cfg.Batch.FlushInterval, cfg.Batch.LiveFlushInterval = time.Hour, 10*time.Minute
	c := &ClickHouse{cfg: cfg, m: metrics.New()}
	w := &Writer{c: c, in: make(chan *Message, 1), tm: c.m.ForTable(schema.TableName{Database: "d", Table: "t"})}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	fresh := func() {
		w.firstRow, w.due = time.Time{}, time.Time{}
	}

	before := time.Now()
	w.schedule(timer) // behind: flush_interval
	if w.due.Before(before.Add(time.Hour)) {
		t.Errorf("reader behind: due in %v, want flush_interval (1h)", w.due.Sub(before))
	}

	c.caughtUp.Store(true)
	fresh()
	before = time.Now()
	w.schedule(timer) // live, no insert yet: at once
	if after := time.Now(); w.due.Before(before) || w.due.After(after) {
		t.Errorf("live, first insert: due %v after the call began, want at once", w.due.Sub(before))
	}

	fresh()
	w.lastSend = time.Now().Add(-time.Minute)
	w.schedule(timer) // live, last insert a minute ago: 9 minutes on
	if want := w.lastSend.Add(10 * time.Minute); !w.due.Equal(want) {
		t.Errorf("live, an insert a minute ago: due %v after it, want live_flush_interval (10m)", w.due.Sub(w.lastSend))
	}

	fresh()
	w.lastSend = time.Now().Add(-time.Minute)
	w.in <- &Message{}
	before = time.Now()
	w.schedule(timer) // more queued: flush_interval (the next message decides)
	if w.due.Before(before.Add(time.Hour)) {
		t.Errorf("rows queued: due in %v, want flush_interval (1h)", w.due.Sub(before))
	}
	<-w.in

	cfg.Batch.LiveFlushInterval = 2 * time.Hour
	fresh()
	w.lastSend = time.Now()
	before = time.Now()
	w.schedule(timer) // live interval above flush_interval: flush_interval
	if w.due.Before(before.Add(time.Hour)) || w.due.After(time.Now().Add(time.Hour)) {
		t.Errorf("live_flush_interval above flush_interval: due in %v, want 1h", w.due.Sub(before))
	}
}
