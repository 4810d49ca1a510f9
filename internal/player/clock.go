package player

import (
	"context"
	"errors"
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
// Advance, so the player runs a session of minutes in microseconds, identically every
// time.
//
// On its own, Sleep and After advance time at once, as one goroutine expects. While a
// Player runs its downloads on the clock, the player drives it (a SimClock drives one
// session at a time): Sleep then blocks until simulated time reaches its end, and time
// moves on to the earliest sleeper only when the player's scheduler and every download
// in flight are waiting. So downloads that each Sleep for their simulated duration
// overlap as they would on a network, and the session stays deterministic: the player
// lets one goroutine run at a time (starting a download waits until it sleeps or
// returns) and wakes sleepers in order of their end time, then of when they began.
//
// A Fetcher that simulates download time should therefore call Sleep(ctx, d) from the
// goroutine that called Fetch, and block on the clock in no other way. Advance moves
// time for everyone at once, downloads in flight included: concurrent downloads of a
// Fetcher that Advances take the sum of their times. A Fetcher that takes real time
// without touching the clock (a real network) takes no simulated time. Deadlines are
// not enforced on contexts; the player checks them itself.
type SimClock struct {
	mu  sync.Mutex
	now time.Time

	// Driving, while a player's session runs (see simDriver).
	driven  bool
	running int // goroutines the driver waits for that are not asleep on the clock
	idle    *sync.Cond
	waiters []*simWaiter
	seq     uint64
}

// simWaiter is a Sleep or an After waiting for simulated time t.
type simWaiter struct {
	t     time.Time
	seq   uint64
	sleep bool           // a Sleep: its goroutine runs again when woken
	wake  chan time.Time // buffered: receives the time when woken
	fired bool
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

// Sleep waits until simulated time has moved d on: at once on its own, or, while a
// player drives the clock, when the player's scheduler moves time there.
func (c *SimClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	if !c.driven {
		c.now = c.now.Add(d)
		c.mu.Unlock()
		return nil
	}
	w := c.addLocked(d, true)
	c.running--
	c.cond().Broadcast()
	c.mu.Unlock()
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.fired {
		return nil // woken at the same moment; the driver counted it running again
	}
	c.removeLocked(w)
	c.running++
	return ctx.Err()
}

// After returns a channel that receives the time once d has passed: at once on its
// own (advancing time by d), or, while a player drives the clock, when the player's
// scheduler moves time there.
func (c *SimClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.driven || d <= 0 {
		if d > 0 {
			c.now = c.now.Add(d)
		}
		ch := make(chan time.Time, 1)
		ch <- c.now
		return ch
	}
	return c.addLocked(d, false).wake
}

// WithDeadline returns ctx unchanged: simulated fetches take no real time.
func (c *SimClock) WithDeadline(ctx context.Context, _ time.Time) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

func (c *SimClock) cond() *sync.Cond {
	if c.idle == nil {
		c.idle = sync.NewCond(&c.mu)
	}
	return c.idle
}

func (c *SimClock) addLocked(d time.Duration, sleep bool) *simWaiter {
	c.seq++
	w := &simWaiter{t: c.now.Add(d), seq: c.seq, sleep: sleep, wake: make(chan time.Time, 1)}
	c.waiters = append(c.waiters, w)
	return w
}

func (c *SimClock) removeLocked(w *simWaiter) {
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return
		}
	}
}

// firstLocked is the waiter due first: the earliest time, then the earliest to wait.
func (c *SimClock) firstLocked() *simWaiter {
	var first *simWaiter
	for _, w := range c.waiters {
		if first == nil || w.t.Before(first.t) || (w.t.Equal(first.t) && w.seq < first.seq) {
			first = w
		}
	}
	return first
}

// fireLocked wakes w, moving time to its end (never backwards).
func (c *SimClock) fireLocked(w *simWaiter) {
	c.removeLocked(w)
	if w.t.After(c.now) {
		c.now = w.t
	}
	w.fired = true
	if w.sleep {
		c.running++
	}
	w.wake <- c.now
}

// simDriver is how a player drives a SimClock while its downloads run concurrently.
// Only the player's scheduler goroutine calls it.
type simDriver interface {
	// drive starts (on) or ends driving. Ending wakes whatever still waits.
	drive(on bool) error
	// join counts a goroutine about to start (a download); leave counts it finished.
	join()
	leave()
	// settle waits until every joined goroutine is asleep on the clock or has left.
	settle()
	// wakeNext wakes the waiter due first if it is due at or before until (zero: any),
	// moving time to it. It reports whether it woke one.
	wakeNext(until time.Time) bool
	// advanceTo moves time to t (never backwards).
	advanceTo(t time.Time)
}

var _ simDriver = (*SimClock)(nil)

func (c *SimClock) drive(on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		if c.driven {
			return errors.New("player: this SimClock is already driving another session")
		}
		c.driven, c.running = true, 0
		return nil
	}
	c.driven = false
	for w := c.firstLocked(); w != nil; w = c.firstLocked() {
		c.fireLocked(w)
	}
	c.running = 0
	return nil
}

func (c *SimClock) join() {
	c.mu.Lock()
	c.running++
	c.mu.Unlock()
}

func (c *SimClock) leave() {
	c.mu.Lock()
	c.running--
	c.cond().Broadcast()
	c.mu.Unlock()
}

func (c *SimClock) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.running > 0 {
		c.cond().Wait()
	}
}

func (c *SimClock) wakeNext(until time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.firstLocked()
	if w == nil || (!until.IsZero() && w.t.After(until)) {
		return false
	}
	c.fireLocked(w)
	return true
}

func (c *SimClock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
}
