package sink

import (
	"sync"
	"testing"

	"github.com/binlog2ch/binlog2ch/metrics"
)

// TestParkHandshake: a writer parks only with nothing queued, and a
// message sent while it parks is never left without a goroutine: either
// the parking writer sees it and goes on, or Wake tells the sender to run
// the writer again; never both, never neither.
func TestParkHandshake(t *testing.T) {
	w := &Writer{in: make(chan Message, 4), c: &ClickHouse{m: metrics.New()}}
	w.in <- Message{Seq: 1}
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
	w.in <- Message{Seq: 2}
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
		go func() { defer wg.Done(); w.in <- Message{Seq: 3}; woken = w.Wake() }()
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
