package h2push

import (
	"container/heap"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// connKey identifies one client connection from any of its requests. net/http puts
// the connection's local address in every request context; it is the same value (a
// pointer held by the socket) for every request of a connection and a different one
// for every other connection, so with the peer address it names the connection even
// when a closed connection's port is reused.
type connKey struct {
	local  net.Addr
	remote string
}

func keyOf(r *http.Request) connKey {
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return connKey{local: la, remote: r.RemoteAddr}
}

// connState orders the promised responses of one connection:
//
//   - the client's own requests go first: while one is being answered (holds > 0) no
//     promised response starts and running ones pause between writes, so promises
//     leave at once and what the player asked for is not slowed by what it may need;
//   - promised responses run one at a time (maxActive), the lowest media time first.
type connState struct {
	mu        sync.Mutex
	holds     int
	active    int
	maxActive int
	waiting   ticketHeap
	promised  uint64          // promises made on the connection
	arrived   map[uint64]bool // promised requests that reached the middleware, beyond nextArr
	nextArr   uint64          // the lowest promise number that has not arrived yet
	changed   chan struct{}   // closed and replaced at every change: a broadcast
	users     int
}

type ticket struct {
	prio  float64
	seq   uint64
	index int
}

type ticketHeap []*ticket

func (h ticketHeap) Len() int { return len(h) }
func (h ticketHeap) Less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio < h[j].prio
	}
	return h[i].seq < h[j].seq
}
func (h ticketHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *ticketHeap) Push(x any)   { t := x.(*ticket); t.index = len(*h); *h = append(*h, t) }
func (h *ticketHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

func (c *connState) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// hold marks a client request in progress; the returned func ends it.
func (c *connState) hold() func() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.holds--
			c.broadcast()
			c.mu.Unlock()
		})
	}
}

// promiseSeq numbers a promise on the connection.
func (c *connState) promiseSeq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.promised++
	return c.promised
}

// arrive notes that promise seq reached the middleware (or will not: its push
// failed). It reports false for a number that was never promised or already arrived
// (a client sending the header itself).
func (c *connState) arrive(seq uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq == 0 || seq > c.promised || seq < c.nextArr || c.arrived[seq] {
		return false
	}
	c.arrived[seq] = true
	for c.arrived[c.nextArr] {
		delete(c.arrived, c.nextArr)
		c.nextArr++
	}
	c.broadcast()
	return true
}

// acquire waits for the turn of a promised response with priority prio (then promise
// number seq); release ends it. It fails only when ctx ends (the client reset the
// push, or went away).
func (c *connState) acquire(ctx context.Context, prio float64, seq uint64) (release func(), err error) {
	c.mu.Lock()
	t := &ticket{prio: prio, seq: seq}
	heap.Push(&c.waiting, t)
	for {
		// Every promise made so far must have arrived, so a late goroutine of an
		// earlier promise cannot be overtaken by a later one of the same priority.
		if c.holds == 0 && c.active < c.maxActive && c.waiting[0] == t && c.nextArr > c.promised {
			heap.Pop(&c.waiting)
			c.active++
			c.broadcast()
			c.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					c.mu.Lock()
					c.active--
					c.broadcast()
					c.mu.Unlock()
				})
			}, nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			c.mu.Lock()
			if t.index >= 0 {
				heap.Remove(&c.waiting, t.index)
			}
			c.broadcast()
			c.mu.Unlock()
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
}

// yield waits while a client request is in progress.
func (c *connState) yield(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.holds == 0 {
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// conns is the registry of connection states in use.
type conns struct {
	mu        sync.Mutex
	m         map[connKey]*connState
	maxActive int
}

// get returns the state of a connection; put must follow when the caller is done.
func (cs *conns) get(k connKey) *connState {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[connKey]*connState{}
	}
	c := cs.m[k]
	if c == nil {
		c = &connState{changed: make(chan struct{}), maxActive: max(cs.maxActive, 1), arrived: map[uint64]bool{}, nextArr: 1}
		cs.m[k] = c
	}
	c.users++
	return c
}

func (cs *conns) put(k connKey, c *connState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c.users--
	if c.users == 0 {
		delete(cs.m, k)
	}
}

func (cs *conns) len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
}

// session is what a connection chose and has been sent: the `?push=` strategy that
// started it, the MPD addressing it uses and the paths already promised on it.
type session struct {
	strategy *Strategy
	byTime   bool
	pushed   map[string]bool
	used     time.Time
}

// sessions keeps one session per connection. Connections do not say when they close,
// so sessions idle for sessionTTL are dropped, and at most maxSessions are kept.
type sessions struct {
	mu        sync.Mutex
	m         map[connKey]*session
	lastSweep time.Time
}

const (
	sessionTTL       = 10 * time.Minute
	maxSessions      = 4096
	maxPushedPerConn = 20000
)

// with runs f on the session of k (created when create is set; else f gets nil).
func (ss *sessions) with(k connKey, create bool, f func(s *session)) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := time.Now()
	s := ss.m[k]
	if s == nil && create {
		if ss.m == nil {
			ss.m = map[connKey]*session{}
		}
		if len(ss.m) >= maxSessions || now.Sub(ss.lastSweep) > sessionTTL {
			ss.sweep(now)
			ss.lastSweep = now
		}
		s = &session{pushed: map[string]bool{}}
		ss.m[k] = s
	}
	if s != nil {
		s.used = now
	}
	f(s)
}

// sweep drops idle sessions, and the oldest ones if all are recent. Callers hold mu.
func (ss *sessions) sweep(now time.Time) {
	var oldest connKey
	var oldestAt time.Time
	for k, s := range ss.m {
		if now.Sub(s.used) > sessionTTL {
			delete(ss.m, k)
			continue
		}
		if oldestAt.IsZero() || s.used.Before(oldestAt) {
			oldest, oldestAt = k, s.used
		}
	}
	if len(ss.m) >= maxSessions {
		delete(ss.m, oldest)
	}
}

func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}
