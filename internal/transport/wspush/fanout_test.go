package wspush

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// TestFanOutSharesChunks: fixed-rung live viewers are served by the channel's
// fan-out loop (and, with NoFanOut, by their own goroutines), and each receives
// every chunk of the channel's store, byte for byte, in order, without gaps.
func TestFanOutSharesChunks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		fanned int
	}{{"fan-out", Options{}, 3}, {"per-session", Options{NoFanOut: true}, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t, 40*time.Millisecond, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var cs []*Client
			for range 3 {
				c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Policy: PolicyFixed, Tracks: []string{"v180", "a64"}}})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseNow()
				cs = append(cs, c)
			}
			waitFor(t, 5*time.Second, "the sessions to stream", func() bool { return o.handler.Active() == 3 })
			if got := o.handler.FanOutViewers(); got != tc.fanned {
				t.Fatalf("%d sessions in the fan-out, want %d", got, tc.fanned)
			}
			for i, c := range cs {
				checkChunksFromStore(t, ctx, o.channel, c, 2)
				t.Logf("viewer %d: chunks match the store", i)
			}
		})
	}
}

// checkChunksFromStore reads c until it has seen segments video segments begin and
// end, checking every chunk against the channel's stored bytes and its order.
func checkChunksFromStore(t *testing.T, ctx context.Context, ch *hub.Channel, c *Client, segments int) {
	t.Helper()
	r := c.Ready
	seg := map[uint8]uint64{}
	next := map[uint8]int{}
	started := map[uint8]bool{}
	done := 0
	for done < segments {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f := m.Frame
		if f == nil {
			t.Fatalf("unexpected text message %s", m.Text)
		}
		if f.Kind != KindChunk {
			continue
		}
		tr := r.Tracks[f.Track]
		idx := int(f.Sequence)
		if f.Start {
			seg[f.Track], idx, started[f.Track] = r.Base+f.Sequence, 0, true
		} else if !started[f.Track] {
			t.Fatalf("track %s: a chunk before any segment start", tr.ID)
		} else if idx != next[f.Track] {
			t.Fatalf("track %s segment %d: chunk %d, want %d", tr.ID, seg[f.Track], idx, next[f.Track])
		}
		next[f.Track] = idx + 1
		stored, _, err := ch.Partial(tr.ID, seg[f.Track])
		if err != nil || idx >= len(stored.Chunks) {
			t.Fatalf("track %s segment %d chunk %d: not in the store (%v)", tr.ID, seg[f.Track], idx, err)
		}
		if !bytes.Equal(stored.Chunks[idx].Data, f.Payload) {
			t.Fatalf("track %s segment %d chunk %d: bytes differ from the store", tr.ID, seg[f.Track], idx)
		}
		if f.End && tr.Kind == string(media.Video) {
			done++
		}
	}
}

// loopViewers sets up n fan-out viewers of one video track over loopback TCP
// without the HTTP layer: the fan-out's own write path and nothing else. It returns
// the fan-out and the client ends of the sockets.
func loopViewers(t *testing.T, n int, rcvbuf int) (*fanout, []*session, []*net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h, err := NewHandler(context.Background(), hub.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	track := &media.Track{ID: "v", Kind: media.Video, Timescale: 90000}
	fo := &fanout{h: h, viewers: map[string]map[*session]struct{}{"v": {}}}
	fo.writeFn = fo.writevFD
	var ss []*session
	var cs []*net.TCPConn
	for range n {
		d := net.Dialer{}
		if rcvbuf > 0 {
			d.Control = smallRcvBuf
		}
		cc, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close(); sc.Close() })
		raw, err := sc.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if rcvbuf > 0 {
			_ = sc.(*net.TCPConn).SetWriteBuffer(rcvbuf)
		}
		s := &session{h: h, opts: &h.opts, net: sc, raw: raw, q: newOutQueue(), closed: make(chan struct{}),
			guard: &sockGuard{c: sc}, ladder: []*media.Track{track}, index: map[string]uint8{"v": 0},
			segDur: 2 * time.Second, fan: fo, vPos: trackPos{seg: 7}}
		fo.viewers["v"][s] = struct{}{}
		ss = append(ss, s)
		cs = append(cs, cc.(*net.TCPConn))
	}
	return fo, ss, cs
}

// readFrames parses n server frames (RFC 6455, unmasked) of this protocol from r.
func readFrames(t *testing.T, r io.Reader, n int) []Frame {
	t.Helper()
	fs, err := readFramesErr(r, n)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func readFramesErr(r io.Reader, n int) ([]Frame, error) {
	var out []Frame
	for range n {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return out, err
		}
		if h[0] != 0x82 {
			return out, fmt.Errorf("frame starts %#x, want a final binary frame", h[0])
		}
		ln := int(h[1] & 0x7f)
		switch ln {
		case 126:
			var b [2]byte
			io.ReadFull(r, b[:])
			ln = int(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			io.ReadFull(r, b[:])
			ln = int(binary.BigEndian.Uint64(b[:]))
		}
		msg := make([]byte, ln)
		if _, err := io.ReadFull(r, msg); err != nil {
			return out, err
		}
		f, err := ParseFrame(msg)
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// TestFanOutSteadyPathAllocatesNothing: handing a chunk to 50 viewers whose sockets
// take it allocates nothing and starts no goroutine (no handoff), and every viewer
// gets the same frames, correctly framed.
func TestFanOutSteadyPathAllocatesNothing(t *testing.T) {
	const viewers, chunks = 50, 40
	fo, _, cs := loopViewers(t, viewers, 0)
	data := bytes.Repeat([]byte{0xab}, 600)
	idx := 0
	deliver := func() {
		ch := &media.Chunk{Data: data, Duration: 3600}
		fo.mu.Lock()
		fo.event(hub.Event{Track: "v", Number: 7, Index: idx, Chunk: ch})
		fo.flush()
		fo.mu.Unlock()
		idx++
	}
	deliver() // the first chunk grows each viewer's scratch
	// AllocsPerRun makes one more warm-up call: chunks in all (more if measured again).
	if allocs := leastAllocsPerRun(3, chunks-2, deliver); allocs >= 1 {
		t.Errorf("%.1f allocations per chunk for %d viewers, want none", allocs, viewers)
	}
	if h := fo.h.ctr.handoffs.Load(); h != 0 {
		t.Errorf("%d handoffs to drain goroutines; the sockets had room", h)
	}
	if got := fo.h.ctr.chunks.Load(); got != int64(viewers*idx) {
		t.Errorf("%d chunks counted, want %d", got, viewers*idx)
	}
	for i, c := range cs {
		fs := readFrames(t, c, idx)
		for k, f := range fs {
			want := uint64(k)
			if k == 0 {
				want = 7 // a segment's first chunk carries its number (minus base 0)
			}
			if f.Kind != KindChunk || f.Sequence != want || f.Start != (k == 0) || !bytes.Equal(f.Payload, data) {
				t.Fatalf("viewer %d frame %d: kind %d seq %d start %v, %d bytes", i, k, f.Kind, f.Sequence, f.Start, len(f.Payload))
			}
		}
	}
}

// TestFanOutSlowViewerDoesNotDelayOthers: a viewer that does not read fills its
// socket; it is handed to a drain goroutine while the others get every chunk at
// once; when it reads again, its frames arrive whole and in order (a frame cut by
// the full socket is finished before anything else).
func TestFanOutSlowViewerDoesNotDelayOthers(t *testing.T) {
	const chunks = 6
	fo, ss, cs := loopViewers(t, 4, 4096) // small receive buffers: 200 kB fill them
	data := bytes.Repeat([]byte{0xcd}, 200_000)
	slow := 0
	got := make(chan []Frame, len(cs))
	for _, c := range cs[1:] {
		go func() {
			fs, err := readFramesErr(c, chunks)
			if err != nil {
				t.Error(err)
			}
			got <- fs
		}()
	}
	for k := range chunks {
		fo.mu.Lock()
		fo.event(hub.Event{Track: "v", Number: 7, Index: k, Chunk: &media.Chunk{Data: data, Duration: 3600}})
		fo.flush()
		fo.mu.Unlock()
	}
	// The fan-out never waited for the slow viewer: it is still holding frames.
	if ss[slow].q.busy() == false && fo.h.ctr.handoffs.Load() == 0 {
		t.Fatal("the slow viewer's socket took everything; the test needs a fuller socket")
	}
	for range cs[1:] {
		select {
		case fs := <-got:
			if len(fs) != chunks {
				t.Fatalf("a reading viewer got %d frames", len(fs))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a reading viewer did not get its chunks while another did not read")
		}
	}
	// The slow one reads now: every frame whole, in order.
	fs := readFrames(t, cs[slow], chunks)
	for k, f := range fs {
		want := uint64(k)
		if k == 0 {
			want = 7
		}
		if f.Sequence != want || !bytes.Equal(f.Payload, data) {
			t.Fatalf("slow viewer frame %d: seq %d, %d bytes", k, f.Sequence, len(f.Payload))
		}
	}
}

// TestFanOutGathersFramesDueTogether: a video and an audio chunk taken in one batch
// leave for each viewer in one writev, in the order the hub announced them.
func TestFanOutGathersFramesDueTogether(t *testing.T) {
	fo, ss, cs := loopViewers(t, 3, 0)
	audio := &media.Track{ID: "a", Kind: media.Audio, Timescale: 48000}
	fo.viewers["a"] = map[*session]struct{}{}
	for _, s := range ss {
		s.other = audio
		s.index["a"] = 1
		s.aPos = trackPos{seg: 7}
		fo.viewers["a"][s] = struct{}{}
	}
	v, a := bytes.Repeat([]byte{1}, 3000), bytes.Repeat([]byte{2}, 400)
	fo.mu.Lock()
	fo.event(hub.Event{Track: "v", Number: 7, Index: 0, Chunk: &media.Chunk{Data: v, Duration: 3600}})
	fo.event(hub.Event{Track: "a", Number: 7, Index: 0, Chunk: &media.Chunk{Data: a, Duration: 1024}})
	fo.flush()
	fo.mu.Unlock()
	if fo.writevs != int64(len(ss)) {
		t.Errorf("%d writev calls for %d viewers with two frames due each, want one each", fo.writevs, len(ss))
	}
	for i, c := range cs {
		fs := readFrames(t, c, 2)
		if fs[0].Track != 0 || !bytes.Equal(fs[0].Payload, v) || fs[1].Track != 1 || !bytes.Equal(fs[1].Payload, a) {
			t.Fatalf("viewer %d: frames for tracks %d and %d, want the video chunk then the audio chunk", i, fs[0].Track, fs[1].Track)
		}
	}
}

// TestFanOutWritesAfterADrainPastWriteTimeout: a viewer whose socket filled once
// (its drain set a write deadline) still gets the fan-out's writes after that
// deadline has passed. The drain left the deadline in force, so the next
// non-blocking writev failed on it and the session ended without a close frame
// (28–39% of the one-frame-chunk load test's sessions ended so).
func TestFanOutWritesAfterADrainPastWriteTimeout(t *testing.T) {
	fo, ss, cs := loopViewers(t, 1, 4096)
	fo.h.opts.WriteTimeout = 200 * time.Millisecond
	big := bytes.Repeat([]byte{0xcd}, 200_000)
	for k := range 3 {
		fo.mu.Lock()
		fo.event(hub.Event{Track: "v", Number: 7, Index: k, Chunk: &media.Chunk{Data: big, Duration: 3600}})
		fo.flush()
		fo.mu.Unlock()
	}
	if fo.h.ctr.handoffs.Load() == 0 {
		t.Fatal("the socket took everything; the test needs a drain")
	}
	readFrames(t, cs[0], 3)
	waitFor(t, 5*time.Second, "the drain to end", func() bool { return !ss[0].q.busy() })
	time.Sleep(3 * fo.h.opts.WriteTimeout) // past the deadline a drain would have left
	fo.mu.Lock()
	fo.event(hub.Event{Track: "v", Number: 7, Index: 3, Chunk: &media.Chunk{Data: []byte("small"), Duration: 3600}})
	fo.flush()
	inFanOut := ss[0].fan == fo
	fo.mu.Unlock()
	if !inFanOut {
		t.Fatal("the viewer was dropped from the fan-out after its drain's deadline passed")
	}
	_ = cs[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if f := readFrames(t, cs[0], 1)[0]; f.Sequence != 3 || string(f.Payload) != "small" {
		t.Fatalf("frame seq %d %q", f.Sequence, f.Payload)
	}
}

// leastAllocsPerRun is testing.AllocsPerRun(runs, f), measured again, up to attempts
// times in all, while it reads one or more. AllocsPerRun counts every allocation in
// the process, so on a loaded machine a goroutine an earlier test left behind (a
// server closing, a timer) can allocate during the measurement; that can only add,
// so the smallest reading still bounds f's own allocations. f runs runs+1 times per
// attempt.
func leastAllocsPerRun(attempts, runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for i := 1; i < attempts && least >= 1; i++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
