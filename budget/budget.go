// Package budget is the daemon's insert rate, shared by every table's
// writer: tokens refilled at a rate, a full batch taking one at once, a
// waiting one asking, the oldest first; and the bytes of rows the writers
// hold, against one limit. It never inserts anything itself and knows
// nothing of ClickHouse.
package budget

import (
	"container/heap"
	"sync"
	"time"
)

// ClickHouse pays per insert (a part each, then merges), whatever its
// size: 300 tables trickling a row or two a second each, flushed every
// second, made it spend more than a core on 583 rows/s. The budget shares
// one insert rate among all writers. A full batch goes at once (and takes
// its token, which may leave the budget in debt); a batch that has waited
// out its flush interval asks for a token and waits for it, the oldest
// first; closing a writer, DDL and schema changes flush at once. With 500
// tables trickling and 30 inserts/s, each table flushes about every 17 s:
// the lag that costs is the price of keeping ClickHouse's cost flat.

// Budget is the daemon's insert rate, shared by its writers.
type Budget struct {
	mu      sync.Mutex
	rate    float64 // tokens per second; 0: unlimited
	burst   float64
	tokens  float64
	last    time.Time
	waiting ticketHeap
	timer   *time.Timer
	now     func() time.Time
	// granted counts the tokens given, by why.
	granted func(reason string)
	// waitingTables reports how many writers wait for a token.
	waitingTables func(n int)
}

// Reasons a token is taken.
const (
	GrantFull     = "full"     // a batch reached max_rows or max_bytes
	GrantInterval = "interval" // a batch waited out its flush interval
	GrantLive     = "live"     // the reader is live and the table's queue empty
	GrantDrain    = "drain"    // DDL, a schema change, shutdown
	GrantMemory   = "memory"   // the writers' batches over batch.max_buffer_bytes
	GrantCascade  = "cascade"  // a foreign-key cascade's derived rows
)

// New is a budget of rate inserts per second (0: unlimited) with burst
// tokens at most in hand. granted counts each token given, by why, and
// waiting reports how many writers wait for one (nil: not told).
func New(rate float64, burst int, granted func(reason string), waiting func(n int)) *Budget {
	if granted == nil {
		granted = func(string) {}
	}
	if waiting == nil {
		waiting = func(int) {}
	}
	b := &Budget{rate: rate, burst: float64(max(burst, 1)), now: time.Now, granted: granted, waitingTables: waiting}
	b.tokens, b.last = b.burst, b.now()
	return b
}

// Ticket is a writer's request for a token.
type Ticket struct {
	// C receives once the token is granted.
	C      chan struct{}
	since  time.Time // the batch's oldest row: the oldest goes first
	reason string
	index  int // in the heap; -1 once granted or cancelled
}

// refill adds the tokens earned since the last call.
func (b *Budget) refill() {
	now := b.now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
}

// Take takes a token without waiting: a full batch goes at once.
func (b *Budget) Take(reason string) {
	b.granted(reason)
	if b.rate <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	// Debt is bounded so a burst of full batches (catch-up) does not shut
	// out the waiting tables for long once it is over.
	b.tokens = max(b.tokens-1, -b.burst)
}

// Request asks for a token for a batch whose oldest row came at since.
func (b *Budget) Request(since time.Time, reason string) *Ticket {
	t := &Ticket{C: make(chan struct{}, 1), since: since, reason: reason, index: -1}
	if b.rate <= 0 {
		t.C <- struct{}{}
		b.granted(reason)
		return t
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	heap.Push(&b.waiting, t)
	b.grant()
	return t
}

// Cancel withdraws a ticket not yet granted (the batch went out another
// way); a granted one's token is spent.
func (b *Budget) Cancel(t *Ticket) {
	if t == nil || b.rate <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.index >= 0 {
		heap.Remove(&b.waiting, t.index)
		b.waitingTables(len(b.waiting))
	}
}

// grant gives the tokens in hand to the oldest tickets, and sets a timer
// for when the next token is earned. Called with mu held.
func (b *Budget) grant() {
	b.refill()
	for len(b.waiting) > 0 && b.tokens >= 1 {
		t := heap.Pop(&b.waiting).(*Ticket)
		b.tokens--
		t.C <- struct{}{}
		b.granted(t.reason)
	}
	b.waitingTables(len(b.waiting))
	if len(b.waiting) == 0 {
		return
	}
	wait := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	if b.timer == nil {
		b.timer = time.AfterFunc(wait, b.tick)
	} else {
		b.timer.Reset(wait)
	}
}

func (b *Budget) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.grant()
}

// ticketHeap orders tickets by their batch's oldest row.
type ticketHeap []*Ticket

func (h ticketHeap) Len() int           { return len(h) }
func (h ticketHeap) Less(i, j int) bool { return h[i].since.Before(h[j].since) }
func (h ticketHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *ticketHeap) Push(x any) {
	t := x.(*Ticket)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *ticketHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
