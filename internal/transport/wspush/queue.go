package wspush

import (
	"sync"
	"time"
)

// item is one message waiting to be written: a JSON text message, or a binary one
// whose payload is shared with every other session (never copied into the queue).
type item struct {
	text []byte // text message; nil for binary

	kind       Kind
	start, end bool
	track      uint8
	seq        uint64
	data       []byte // init segment or chunk, shared

	off     int           // bytes of its frame already written (fan-out: a frame half out)
	media   bool          // a chunk (skips drop these; texts and inits stay)
	primary bool          // a chunk of the adaptive kind (video), for the queued duration
	dur     time.Duration // media duration of a chunk
}

func (it *item) size() int64 {
	if it.text != nil {
		return int64(len(it.text))
	}
	return int64(HeaderLen(it.seq) + len(it.data))
}

// outQueue is a session's output buffer: what the feeder produced and the writer has
// not written yet. Its level in bytes is what the published rule watches; its media
// duration bounds it (beyond the bound the session skips to the next keyframe).
type outQueue struct {
	mu      sync.Mutex
	items   []item
	head    int
	bytes   int64         // queued plus the message being written
	dur     time.Duration // media duration of queued primary chunks
	writing int64         // size of the message being written
	closed  bool
	drainer bool // a fan-out viewer's drain goroutine runs (fanout.go)

	wake  chan struct{} // to the writer: something was queued
	space chan struct{} // to the feeder: something was written
}

func newOutQueue() *outQueue {
	return &outQueue{wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *outQueue) push(it item) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, it)
	q.bytes += it.size()
	if it.primary {
		q.dur += it.dur
	}
	q.mu.Unlock()
	signal(q.wake)
}

// pop takes the next message for the writer; ok is false when the queue is empty.
// The message's bytes stay in the level until written is called.
func (q *outQueue) pop() (it item, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.popLocked()
}

func (q *outQueue) popLocked() (it item, ok bool) {
	if q.head == len(q.items) {
		// Empty; a skip (dropMedia) can leave it so with head not yet rewound.
		q.items, q.head = q.items[:0], 0
		return item{}, false
	}
	it = q.items[q.head]
	q.items[q.head] = item{} // let the chunk go once written
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 64 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	if it.primary {
		q.dur -= it.dur
	}
	q.writing = it.size()
	return it, true
}

// written marks the message taken by pop as written.
func (q *outQueue) written() {
	q.mu.Lock()
	q.bytes -= q.writing
	q.writing = 0
	q.mu.Unlock()
	signal(q.space)
}

// level returns the bytes not yet written (the output buffer) and the media duration
// queued.
func (q *outQueue) level() (int64, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.dur
}

// dropMedia removes every queued chunk (texts and inits stay) and returns how many.
func (q *outQueue) dropMedia() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.items[:q.head]
	dropped := 0
	for _, it := range q.items[q.head:] {
		if it.media && it.off == 0 { // a frame half out is finished
			dropped++
			q.bytes -= it.size()
			if it.primary {
				q.dur -= it.dur
			}
			continue
		}
		kept = append(kept, it)
	}
	clear(q.items[len(kept):])
	q.items = kept
	return dropped
}

// close empties the queue and refuses further pushes.
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	clear(q.items)
	q.items, q.head, q.bytes, q.dur = nil, 0, 0, 0
	q.mu.Unlock()
	signal(q.wake)
	signal(q.space)
}

// busy says whether the queue holds messages or a drain runs: a fan-out viewer's new
// frames then go behind them.
func (q *outQueue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.drainer || q.head < len(q.items)
}

// pushAll queues copies of its items (the slice stays the caller's).
func (q *outQueue) pushAll(its []item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	for _, it := range its {
		q.items = append(q.items, it)
		q.bytes += it.size()
		if it.primary {
			q.dur += it.dur
		}
	}
}

// claimDrain marks a drain as running; false if one runs already.
func (q *outQueue) claimDrain() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.drainer {
		return false
	}
	q.drainer = true
	return true
}

// popDrain is pop for the drain: when the queue is empty (or closed) the drain
// stops, in the same critical section, so a later frame starts a new one.
func (q *outQueue) popDrain() (item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.popLocked()
	if !ok {
		q.drainer = false
		if cap(q.items) > 64 {
			q.items, q.head = nil, 0 // a viewer that once fell behind does not keep the room
		}
	}
	return it, ok
}

func (q *outQueue) stopDrain() {
	q.mu.Lock()
	q.drainer = false
	q.mu.Unlock()
}
