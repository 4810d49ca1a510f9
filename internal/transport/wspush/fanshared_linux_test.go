//go:build linux

package wspush

import (
	"bytes"
	"os"
	"testing"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// TestFanOutSharesLargeFramesByFile: a large chunk due to several viewers in one
// flush leaves from one memory file per distinct frame by sendfile — the first
// viewer of a frame gets it by writev, the others by sendfile —; each viewer still
// gets its own header (viewers that joined at another segment number a segment's
// first chunk differently) and the same payload; the files are closed when the
// flush ends; and the steady path allocates nothing.
func TestFanOutSharesLargeFramesByFile(t *testing.T) {
	const viewers, chunks = 6, 5
	fo, ss, cs := loopViewers(t, viewers, 0)
	for _, s := range ss[:2] {
		s.base = 3 // joined at segment 3
	}
	// 9 kB: above sharedMinPayload; at most 11 chunks (the allocation measured three
	// times), about 100 kB per socket, which the loopback buffers take.
	data := bytes.Repeat([]byte{0x5a}, 9_000)
	fdsBefore := openFDs(t)
	idx := 0
	deliver := func() {
		fo.mu.Lock()
		fo.event(hub.Event{Track: "v", Number: 7, Index: idx, Chunk: &media.Chunk{Data: data, Duration: 3600}})
		fo.flush()
		fo.mu.Unlock()
		idx++
	}
	deliver() // the first chunk grows each viewer's scratch and the files' map
	deliver()
	if allocs := leastAllocsPerRun(3, chunks-3, deliver); allocs >= 1 {
		t.Errorf("%.1f allocations per chunk for %d viewers, want none", allocs, viewers)
	}
	if idx < chunks {
		t.Fatalf("delivered %d chunks, want at least %d", idx, chunks)
	}
	if h := fo.h.ctr.handoffs.Load(); h != 0 {
		t.Fatalf("%d handoffs to drain goroutines; the sockets had room", h)
	}
	// Chunk 0 is two frames (base 0 and base 3: 4 and 2 viewers), the others one each.
	if want := int64((4 - 1) + (2 - 1) + (idx-1)*(viewers-1)); fo.sendfiles != want {
		t.Errorf("%d sendfiles, want %d (all but the first viewer of each frame)", fo.sendfiles, want)
	}
	if len(fo.shared.m) != 0 {
		t.Errorf("%d frame files left after the flush", len(fo.shared.m))
	}
	if after := openFDs(t); after != fdsBefore {
		t.Errorf("%d descriptors open after the flushes, %d before: frame files leak", after, fdsBefore)
	}
	for i, c := range cs {
		fs := readFrames(t, c, idx)
		for k, f := range fs {
			want := uint64(k)
			if k == 0 {
				want = 7 - ss[i].base
			}
			if f.Kind != KindChunk || f.Sequence != want || f.Start != (k == 0) || !bytes.Equal(f.Payload, data) {
				t.Fatalf("viewer %d frame %d: kind %d seq %d (want %d) start %v, %d bytes", i, k, f.Kind, f.Sequence, want, f.Start, len(f.Payload))
			}
		}
	}
}

// TestFanOutSmallFramesStayOnWritev: below sharedMinPayload no file is made.
func TestFanOutSmallFramesStayOnWritev(t *testing.T) {
	fo, _, cs := loopViewers(t, 3, 0)
	data := bytes.Repeat([]byte{1}, sharedMinPayload-1)
	fo.mu.Lock()
	fo.event(hub.Event{Track: "v", Number: 7, Index: 0, Chunk: &media.Chunk{Data: data, Duration: 3600}})
	fo.flush()
	fo.mu.Unlock()
	if fo.sendfiles != 0 || fo.writevs != 3 {
		t.Errorf("%d sendfiles and %d writevs for 3 viewers of a small frame, want 0 and 3", fo.sendfiles, fo.writevs)
	}
	for _, c := range cs {
		if fs := readFrames(t, c, 1); !bytes.Equal(fs[0].Payload, data) {
			t.Fatal("a viewer got another payload")
		}
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}
