package budget

import (
	"testing"
	"time"
)

// fakeClock is a budget's clock moved by the test.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func testBudget(rate float64, burst int) (*Budget, *fakeClock, map[string]int) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	b := New(rate, burst, nil, nil)
	b.now = clock.now
	b.tokens, b.last = b.burst, clock.t
	granted := map[string]int{}
	b.granted = func(r string) { granted[r]++ }
	return b, clock, granted
}

func granted(t *Ticket) bool {
	select {
	case <-t.C:
		return true
	default:
		return false
	}
}

// TestBudgetOldestFirst: a token in hand goes at once; the others go as
// they are earned, to the batch waiting longest.
func TestBudgetOldestFirst(t *testing.T) {
	b, clock, counts := testBudget(1, 1)
	base := clock.t
	first := b.Request(base.Add(-time.Second), GrantInterval)
	if !granted(first) {
		t.Fatal("the token in hand was not given")
	}
	newer := b.Request(base.Add(-2*time.Second), GrantInterval)
	older := b.Request(base.Add(-5*time.Second), GrantLive)
	if granted(newer) || granted(older) {
		t.Fatal("a token was given beyond the rate")
	}
	clock.t = clock.t.Add(time.Second)
	b.tick()
	if !granted(older) || granted(newer) {
		t.Fatal("the earned token did not go to the oldest batch")
	}
	clock.t = clock.t.Add(time.Second)
	b.tick()
	if !granted(newer) {
		t.Fatal("the next token did not come")
	}
	if counts[GrantInterval] != 2 || counts[GrantLive] != 1 {
		t.Errorf("granted %v", counts)
	}
}

// TestBudgetFullBatchesGoAtOnce: full batches take tokens without waiting,
// into a bounded debt that waiting batches then wait out.
func TestBudgetFullBatchesGoAtOnce(t *testing.T) {
	b, clock, counts := testBudget(2, 2)
	for i := 0; i < 10; i++ {
		b.Take(GrantFull)
	}
	if b.tokens != -2 || counts[GrantFull] != 10 {
		t.Fatalf("tokens %v after 10 full batches (debt bounded at the burst), granted %v", b.tokens, counts)
	}
	w := b.Request(clock.t, GrantInterval)
	clock.t = clock.t.Add(1 * time.Second) // +2 tokens: 0
	b.tick()
	if granted(w) {
		t.Fatal("granted while in debt")
	}
	clock.t = clock.t.Add(500 * time.Millisecond) // +1: 1
	b.tick()
	if !granted(w) {
		t.Fatal("not granted once the debt was earned back")
	}
}

// TestBudgetCancel: a batch that went out another way leaves the queue.
func TestBudgetCancel(t *testing.T) {
	b, clock, _ := testBudget(1, 1)
	b.Take(GrantFull)
	a := b.Request(clock.t.Add(-3*time.Second), GrantInterval)
	c := b.Request(clock.t, GrantInterval)
	b.Cancel(a)
	clock.t = clock.t.Add(time.Second)
	b.tick()
	if granted(a) || !granted(c) {
		t.Fatal("the cancelled ticket kept its place")
	}
	b.Cancel(c) // granted already: nothing to undo
	if len(b.waiting) != 0 {
		t.Errorf("%d waiting", len(b.waiting))
	}
}

// TestBudgetUnlimited: rate 0 grants at once.
func TestBudgetUnlimited(t *testing.T) {
	b, clock, counts := testBudget(0, 1)
	for i := 0; i < 100; i++ {
		if !granted(b.Request(clock.t, GrantInterval)) {
			t.Fatal("no budget waited")
		}
	}
	if counts[GrantInterval] != 100 {
		t.Errorf("granted %v", counts)
	}
}
