package wspush

import "testing"

// TestQueueAfterSkipAndDrain: a skip that drops every queued chunk behind the ones
// already taken, then a drain that finds the queue empty and gives its room back,
// leave a queue that takes and gives the next message. (The drain's reset of the
// items kept the old read position: the next pop indexed past the new slice and
// the origin crashed, under the load test with slow readers.)
func TestQueueAfterSkipAndDrain(t *testing.T) {
	q := newOutQueue()
	var its []item
	for i := range 100 {
		its = append(its, item{seq: uint64(i), data: []byte{1}, media: true})
	}
	q.pushAll(its)
	for range 48 {
		if _, ok := q.popDrain(); !ok {
			t.Fatal("queue empty too early")
		}
		q.written()
	}
	if n := q.dropMedia(); n != 52 {
		t.Fatalf("dropped %d, want 52", n)
	}
	if _, ok := q.popDrain(); ok {
		t.Fatal("a message left after the skip")
	}
	q.pushAll([]item{{seq: 1000, data: []byte{2}, media: true}})
	it, ok := q.popDrain()
	if !ok || it.seq != 1000 {
		t.Fatalf("after the skip and the drain: %+v %v", it, ok)
	}
	if b, d := q.level(); b != int64(it.size()) || d != 0 {
		t.Fatalf("level %d B %v while the last message is being written", b, d)
	}
}
