package h2push

import (
	"context"
	"testing"
	"time"
)

// TestConnStateOrder: promised responses run one at a time, lowest priority value
// first, then promise order; not before every promise so far has arrived, not while
// a client request holds the connection; a cancelled waiter leaves the queue.
func TestConnStateOrder(t *testing.T) {
	var cs conns
	k := connKey{remote: "a"}
	c := cs.get(k)
	defer cs.put(k, c)
	for i := 0; i < 4; i++ {
		c.promiseSeq()
	}
	endHold := c.hold()
	got := make(chan uint64, 4)
	start := func(ctx context.Context, prio float64, seq uint64) {
		c.arrive(seq)
		go func() {
			release, err := c.acquire(ctx, prio, seq)
			if err != nil {
				got <- 1000 + seq
				return
			}
			got <- seq
			time.Sleep(5 * time.Millisecond)
			release()
		}()
	}
	cancelled, cancel := context.WithCancel(context.Background())
	start(context.Background(), 4, 1)
	start(cancelled, 2, 3)
	start(context.Background(), 2, 4)
	time.Sleep(20 * time.Millisecond)
	select {
	case s := <-got:
		t.Fatalf("promise %d started before promise 2 arrived and while a request held the connection", s)
	default:
	}
	cancel()
	if s := <-got; s != 1003 {
		t.Fatalf("want the cancelled waiter (3) out first, got %d", s)
	}
	start(context.Background(), -1, 2)
	time.Sleep(20 * time.Millisecond)
	select {
	case s := <-got:
		t.Fatalf("promise %d started while a request held the connection", s)
	default:
	}
	endHold()
	for _, want := range []uint64{2, 4, 1} {
		if s := <-got; s != want {
			t.Fatalf("got %d, want %d", s, want)
		}
	}
	if c.arrive(2) || c.arrive(99) || c.arrive(0) {
		t.Error("arrive accepted a number already arrived or never promised")
	}
}
