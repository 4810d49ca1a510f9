package server

import (
	"sync"

	"github.com/streambed/streambed/internal/hub"
)

// edgeWatch is shared by the blocking reloads held on one track of one channel, so
// that a chunk costs one look at the edge, not one per held reload: one of them, the
// leader, waits on the track's growth broadcast and looks at the edge on every
// chunk; the others wait on moved, which the leader closes only when the edge has
// moved (a part or segment completed, the channel ended) — when they are likely
// satisfied. A leader that leaves closes moved too, so another takes over. No
// goroutine of its own: every wait is a held request's handler, and the watch is
// dropped with its last user.
type edgeWatch struct {
	key watchKey // the map key, for dropping it

	mu     sync.Mutex
	users  int
	leader bool          // a user leads
	moved  chan struct{} // closed and replaced when the edge moves or the leader leaves
	pos    string        // the edge's position as the leader last saw it
}

// edgeWatches maps channel and track to their watch.
type edgeWatches struct {
	mu sync.Mutex
	m  map[watchKey]*edgeWatch
}

// watchKey is a channel (the instance: a channel removed and made again is another)
// and a track.
type watchKey struct {
	c     *hub.Channel
	track string
}

// join returns the watch of track of c, counting one more user.
func (ws *edgeWatches) join(c *hub.Channel, track string) *edgeWatch {
	key := watchKey{c, track}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[watchKey]*edgeWatch{}
	}
	w := ws.m[key]
	if w == nil {
		w = &edgeWatch{key: key, moved: make(chan struct{})}
		ws.m[key] = w
	}
	w.mu.Lock()
	w.users++
	w.mu.Unlock()
	return w
}

// leave counts one user less, handing the lead on if it was the leader, and drops
// the watch with its last user.
func (ws *edgeWatches) leave(w *edgeWatch, leading bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users--
	if leading {
		w.leader = false
		w.wakeLocked()
	}
	if w.users == 0 && ws.m[w.key] == w {
		delete(ws.m, w.key)
	}
}

// turn returns what the caller waits on next: lead is true when it is (or has just
// become) the leader, which waits on the track's broadcast; the others wait on moved.
func (w *edgeWatch) turn(leading bool) (lead bool, moved <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !leading && !w.leader {
		w.leader, leading = true, true
	}
	return leading, w.moved
}

// saw is the leader's report of the edge's position: the others wake when it moved.
func (w *edgeWatch) saw(pos string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if pos != w.pos {
		w.pos = pos
		w.wakeLocked()
	}
}

func (w *edgeWatch) wakeLocked() {
	close(w.moved)
	w.moved = make(chan struct{})
}
