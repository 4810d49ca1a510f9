package player

import (
	"context"
	"sync"
	"time"
)

// Clock is the player's time. The player reads it, sleeps on it and bounds fetches
// with it, so a simulated clock makes a whole session deterministic: start-up, stalls
// and switches happen at exact, repeatable instants.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
	// After fires once d has passed.
	After(d time.Duration) <-chan time.Time
	// WithDeadline bounds ctx at clock time t.
	WithDeadline(ctx context.Context, t time.Time) (context.Context, context.CancelFunc)
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// After is time.After.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// WithDeadline is context.WithDeadline.
func (RealClock) WithDeadline(ctx context.Context, t time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, t)
}

// SimClock is simulated time: it stands still until someone sleeps on it or calls
// Advance. Use it with a Fetcher that advances it by the download time it simulates;
// the player then runs a session of minutes in microseconds, identically every time.
// Deadlines are not enforced on contexts (a simulated fetch takes no real time); the
// player checks them itself after each fetch.
type SimClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewSimClock starts simulated time at t.
func NewSimClock(t time.Time) *SimClock { return &SimClock{now: t} }

// Now returns the simulated time.
func (c *SimClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves simulated time forward by d (never backwards).
func (c *SimClock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Sleep advances simulated time by d at once.
func (c *SimClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

// After advances simulated time by d and returns a channel that has already fired.
func (c *SimClock) After(d time.Duration) <-chan time.Time {
	c.Advance(d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// WithDeadline returns ctx unchanged: simulated fetches take no real time.
func (c *SimClock) WithDeadline(ctx context.Context, _ time.Time) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}
