package wspush

import (
	"encoding/json"
	"slices"
	"sync"
)

// Session set-up, made cheap for a crowd. Viewers of one channel that join within a
// segment send the same start message (one player build, one page) and are answered
// with the same ready message, so both are worked out once and kept: a start
// message seen before is not decoded again (JSON decoding was a tenth of a session's
// set-up, and it grew each new session goroutine's stack, whose copying cost as
// much again), and a ready message equal to the last one sent in the channel is not
// encoded again. Outside bytes still decide everything: a start message is looked
// up by its exact bytes, and only one that parsed is kept.

// startMemoSize bounds the start messages kept; past it the memo starts afresh, so a
// client sending a new start message each time costs a parse, never memory.
const startMemoSize = 64

// startMemo maps the exact bytes of a start message to what ParseStart made of it.
// The Starts it hands out share their slices: sessions only read them.
type startMemo struct {
	mu sync.Mutex
	m  map[string]Start
}

// parse is ParseStart of msg, from the memo when msg was parsed before.
func (sm *startMemo) parse(msg []byte) (Start, error) {
	sm.mu.Lock()
	st, ok := sm.m[string(msg)] // no copy of msg for the look-up
	sm.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := ParseStart(msg)
	if err != nil {
		return st, err
	}
	sm.mu.Lock()
	if sm.m == nil || len(sm.m) >= startMemoSize {
		sm.m = make(map[string]Start, startMemoSize)
	}
	sm.m[string(msg)] = st
	sm.mu.Unlock()
	return st, nil
}

// readyMemo is the last ready message a fan-out encoded (under the fan-out's lock):
// the next viewer that joins at the same segment with the same tracks gets the same
// bytes.
type readyMemo struct {
	r Ready
	b []byte
}

// encode returns r as JSON, the memo's bytes when r equals the last one.
func (rm *readyMemo) encode(r *Ready) ([]byte, error) {
	if rm.b != nil && readyEqual(&rm.r, r) {
		return rm.b, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	rm.r, rm.b = *r, b
	rm.r.Tracks = slices.Clone(r.Tracks)
	return b, nil
}

func readyEqual(a, b *Ready) bool {
	return a.Type == b.Type && a.Stream == b.Stream && a.Live == b.Live && a.SegmentDuration == b.SegmentDuration &&
		a.AvailabilityStart == b.AvailabilityStart && a.Duration == b.Duration && a.Base == b.Base &&
		a.Start == b.Start && a.Policy == b.Policy && a.Video == b.Video && a.Audio == b.Audio &&
		slices.Equal(a.Tracks, b.Tracks)
}
