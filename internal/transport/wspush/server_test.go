package wspush

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
)

// TestLiveStartsAtLatestKeyframe: the first chunk starts the segment in progress
// (the catch-up part arrives at once), chunks follow in order, each segment of each
// track arrives complete, and an init precedes the media of its track.
func TestLiveStartsAtLatestKeyframe(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	latest, _ := o.channel.Latest(time.Now())
	before := latest + 1 // the segment in progress
	c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Policy: PolicyFixed, Tracks: []string{"v180", "a64"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	r := c.Ready
	if !r.Live || r.Video != "v180" || r.Audio == "" || r.Policy != PolicyFixed {
		t.Fatalf("ready = %+v", r)
	}
	if r.Base+1 < before || r.Base > before+1 {
		t.Fatalf("base %d, want the segment in progress %d", r.Base, before)
	}
	asm := NewAssembler(&r)
	inited := map[string]bool{}
	next := map[uint8]uint64{}
	complete := map[string]int{}
	deadline := time.Now().Add(2*time.Duration(r.SegmentDuration*float64(time.Second)) + 500*time.Millisecond)
	first := true
	for time.Now().Before(deadline) {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Frame == nil {
			t.Fatalf("unexpected text message %s", m.Text)
		}
		f := m.Frame
		tr := r.Tracks[f.Track]
		if f.Kind == KindInit {
			inited[tr.ID] = true
			if _, err := cmaf.ParseInit(f.Payload); err != nil {
				t.Fatalf("init of %s: %v", tr.ID, err)
			}
			continue
		}
		if !inited[tr.ID] {
			t.Fatalf("chunk of %s before its init", tr.ID)
		}
		if first {
			if !f.Start || f.Sequence != 0 {
				t.Fatalf("first chunk: start %v seq %d, want a segment start at sequence 0", f.Start, f.Sequence)
			}
			first = false
		}
		if !f.Start && f.Sequence != next[f.Track] {
			t.Fatalf("%s: chunk index %d, want %d", tr.ID, f.Sequence, next[f.Track])
		}
		if f.Start {
			next[f.Track] = 1
		} else {
			next[f.Track]++
		}
		seg, err := asm.Add(f, m.At)
		if err != nil {
			t.Fatal(err)
		}
		if seg != nil {
			p, err := cmaf.ParseFragments(seg.Data)
			if err != nil {
				t.Fatalf("%s segment %d: %v", tr.ID, seg.Number, err)
			}
			if tr.Kind == "video" && !p[0].Keyframe() {
				t.Errorf("%s segment %d does not start with a keyframe", tr.ID, seg.Number)
			}
			if seg.Chunks < 10 {
				t.Errorf("%s segment %d in %d chunks, want one-frame chunks", tr.ID, seg.Number, seg.Chunks)
			}
			complete[tr.ID]++
		}
	}
	if complete["v180"] < 1 || complete[r.Audio] < 1 {
		t.Errorf("complete segments %v, want at least one per track", complete)
	}
	if c.Stats.Chunks == 0 {
		t.Fatal("no chunks")
	}
	// Framing: 3 bytes of this protocol per chunk while sequences stay under 128.
	if per := float64(c.Stats.HeaderBytes) / float64(c.Stats.Chunks+c.Stats.Inits); per > 3.01 {
		t.Errorf("%.2f header bytes per message, want 3", per)
	}
}

// TestVOD pushes an asset from a position to its end, then closes with 1000.
func TestVOD(t *testing.T) {
	o := newOrigin(t, 0, Options{Lead: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, o.wsURL("/ws/vod/test"), DialOptions{Start: Start{At: AtSeconds(2.5), Policy: PolicyFixed}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready.Live || c.Ready.Base != 2 || c.Ready.Start != 2 || c.Ready.Video != "v360" {
		t.Fatalf("ready = %+v", c.Ready)
	}
	ce, msgs := readUntilClose(t, c, 15*time.Second)
	if ce.Code != CloseNormal {
		t.Fatalf("close %v, want 1000", ce)
	}
	asm := NewAssembler(&c.Ready)
	segs := map[string][]uint64{}
	sawEnd := false
	for _, m := range msgs {
		if m.Type == "end" {
			sawEnd = true
		}
		if m.Frame == nil || m.Frame.Kind != KindChunk {
			continue
		}
		s, err := asm.Add(m.Frame, m.At)
		if err != nil || s == nil {
			t.Fatalf("VOD chunk is not a whole segment: %v", err)
		}
		segs[s.Track.ID] = append(segs[s.Track.ID], s.Number)
		want, err := o.asset.ReadSegment(s.Track.ID, s.Number)
		if err != nil || string(want.Bytes()) != string(s.Data) {
			t.Errorf("%s segment %d differs from the asset's", s.Track.ID, s.Number)
		}
	}
	if !sawEnd {
		t.Error("no end message")
	}
	if got := fmt.Sprint(segs["v360"]); got != "[2 3 4]" {
		t.Errorf("video segments %s, want [2 3 4]", got)
	}
	if got := fmt.Sprint(segs["a64"]); got != "[2 3 4]" {
		t.Errorf("audio segments %s, want [2 3 4]", got)
	}
	waitFor(t, 5*time.Second, "session stats", func() bool { return len(o.stats()) == 1 })
	st := o.stats()[0]
	if st.CloseCode != CloseNormal || st.Chunks != 6 {
		t.Errorf("server stats %+v", st)
	}
	// Counted the same on both ends.
	if st.HeaderBytes != c.Stats.HeaderBytes || st.PayloadBytes != c.Stats.PayloadBytes || st.TextBytes != c.Stats.TextBytes || st.FrameBytes != c.Stats.FrameBytes {
		t.Errorf("server counted %+v, client %+v", st, c.Stats)
	}
}

// TestBadStart: malformed, oversized, late or unplayable start messages close 1008
// with a reason.
func TestBadStart(t *testing.T) {
	o := newOrigin(t, 0, Options{StartTimeout: 300 * time.Millisecond})
	tests := []struct {
		name   string
		typ    websocket.MessageType
		msg    string // "" sends nothing
		reason string
	}{
		{"not JSON", websocket.MessageText, "hello", "bad start message"},
		{"wrong type", websocket.MessageText, `{"type":"play"}`, `type "play"`},
		{"unknown field", websocket.MessageText, `{"type":"start","rate":1}`, "unknown field"},
		{"binary", websocket.MessageBinary, `{"type":"start"}`, "text message"},
		{"oversized", websocket.MessageText, `{"type":"start","codecs":["` + strings.Repeat("a", 5000) + `"]}`, "limit 4096"},
		{"bad at", websocket.MessageText, `{"type":"start","at":"soon"}`, `"at"`},
		{"negative bitrate", websocket.MessageText, `{"type":"start","maxBitrate":-1}`, "negative"},
		{"unknown policy", websocket.MessageText, `{"type":"start","policy":"magic"}`, "unknown policy"},
		{"unknown track", websocket.MessageText, `{"type":"start","tracks":["v9000"]}`, "no playable track"},
		{"no codec", websocket.MessageText, `{"type":"start","codecs":["hev1"]}`, "no track"},
		{"silence", 0, "", "no start message within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, o.wsURL("/ws/live"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			if tt.msg != "" {
				if err := conn.Write(ctx, tt.typ, []byte(tt.msg)); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err = conn.Read(ctx)
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("read: %v, want a close", err)
			}
			if ce.Code != ClosePolicy || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("close %d %q, want 1008 mentioning %q", ce.Code, ce.Reason, tt.reason)
			}
		})
	}
}

// TestUnknownStream answers 404 before the upgrade.
func TestUnknownStream(t *testing.T) {
	o := newOrigin(t, 0, Options{})
	for _, p := range []string{"/ws/nope", "/ws/vod/nope"} {
		resp, err := http.Get(o.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
		_, err = Dial(context.Background(), o.wsURL(p), DialOptions{})
		if !errors.Is(err, media.ErrNotFound) {
			t.Errorf("Dial %s: %v, want not found", p, err)
		}
	}
}

// TestShutdownCloses1001: the origin going away closes live sessions with 1001.
func TestShutdownCloses1001(t *testing.T) {
	// The default policy adapts, fixed does not; the channel's fan-out serves both.
	for _, policy := range []string{"", PolicyFixed} {
		t.Run("policy="+policy, func(t *testing.T) {
			o := newOrigin(t, 0, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Policy: policy}})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "an active session", func() bool { return o.handler.Active() == 1 })
			if o.handler.FanOutViewers() != 1 {
				t.Fatalf("not in the fan-out, policy %q", policy)
			}
			o.cancel()
			ce, _ := readUntilClose(t, c, 8*time.Second)
			if ce.Code != CloseGoingAway {
				t.Errorf("close %v, want 1001", ce)
			}
			waitFor(t, 5*time.Second, "the session to end", func() bool { return o.handler.Active() == 0 && o.handler.FanOutViewers() == 0 })
		})
	}
}

// TestVanishingClientFreesSession: a client that disappears mid-message, before or
// after start, leaves no session, subscription or goroutine behind.
func TestVanishingClientFreesSession(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// After start: drop the TCP connection without a close frame; a session of its
	// own (the default policy adapts) and one in the channel's fan-out (fixed).
	for _, policy := range []string{"", PolicyFixed} {
		c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Policy: policy}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "a subscriber", func() bool { return o.channel.Subscribers() == 1 })
		c.CloseNow()
		waitFor(t, 10*time.Second, "the subscription to end", func() bool {
			return o.channel.Subscribers() == 0 && o.handler.Active() == 0 && o.handler.FanOutViewers() == 0
		})
	}

	// Before start: half a frame of a start message, then gone.
	addr := strings.TrimPrefix(o.srv.URL, "http://")
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "GET /ws/live HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	waitFor(t, 5*time.Second, "the socket to be tracked", func() bool { return o.handler.Sessions() == 1 })
	// A masked text frame announcing 100 bytes, of which 5 arrive.
	_, _ = nc.Write([]byte{0x81, 0x80 | 100, 1, 2, 3, 4, 'h', 'e', 'l', 'l', 'o'})
	nc.Close()
	waitFor(t, 5*time.Second, "the socket to be released", func() bool { return o.handler.Sessions() == 0 })
}

// TestSwitchSendsInitFirst: a switch happens at a segment boundary, announced by a
// switch message, with the new track's init before its first chunk.
func TestSwitchSendsInitFirst(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// On loopback the output buffer stays empty: the rule steps up at the first boundary.
	c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Policy: PolicyBuffer, Stats: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if c.Ready.Video != "v180" {
		t.Fatalf("the buffer rule starts at %s, want the lowest rung", c.Ready.Video)
	}
	var sw *Switch
	var sawInit, sawAdapt bool
	for {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Type == "switch":
			sw = new(Switch)
			if err := json.Unmarshal(m.Text, sw); err != nil {
				t.Fatal(err)
			}
			if sw.From != "v180" || sw.To != "v360" || !strings.Contains(sw.Reason, "empty") {
				t.Fatalf("switch %+v", sw)
			}
		case m.Type == "adapt":
			sawAdapt = true
		case sw != nil && m.Frame != nil:
			tr := c.Ready.Tracks[m.Frame.Track]
			if tr.ID == "a64" {
				continue
			}
			if !sawInit {
				if m.Frame.Kind != KindInit || tr.ID != "v360" || c.Ready.Base+m.Frame.Sequence != sw.Segment {
					t.Fatalf("after the switch: %+v of %s, want the init of v360 for segment %d", m.Frame.Kind, tr.ID, sw.Segment)
				}
				sawInit = true
				continue
			}
			if !m.Frame.Start || tr.ID != "v360" || c.Ready.Base+m.Frame.Sequence != sw.Segment {
				t.Fatalf("first chunk after the init: start %v track %s seq %d", m.Frame.Start, tr.ID, m.Frame.Sequence)
			}
			if !sawAdapt {
				t.Error("no adapt message with stats on")
			}
			return
		}
	}
}

// TestSlowReaderSkipsThenCloses: a reader that does not read loses chunks, then is
// closed with 4008; another reader on the same channel gets every chunk in order.
//
// The queue limit is above a segment (2 s): a session starts with the chunks of the
// segment in progress at once, and with a limit under that burst a good reader whose
// process was descheduled for a moment skipped (it failed beside stress-ng with 300 ms).
func TestSlowReaderSkipsThenCloses(t *testing.T) {
	// The good reader at a fixed rung, and adaptive with stats (as the browser page):
	// both share the fan-out loop with the slow one.
	for _, good := range []Start{{Policy: PolicyFixed}, {Policy: PolicyBuffer, Stats: true}} {
		t.Run("good="+good.Policy, func(t *testing.T) { slowReaderSkipsThenCloses(t, good) })
	}
}

func slowReaderSkipsThenCloses(t *testing.T, goodStart Start) {
	o := newOrigin(t, 40*time.Millisecond, Options{QueueLimit: 3 * time.Second, MaxSkips: 1, NotSentLowat: 4 << 10})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The slow reader: a tiny receive buffer, and it does not read.
	dialer := &net.Dialer{Control: smallRcvBuf}
	slowHTTP := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	slow, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{HTTPClient: slowHTTP, Start: Start{Policy: PolicyFixed}})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	good, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: goodStart})
	if err != nil {
		t.Fatal(err)
	}
	defer good.CloseNow()
	// Both are live viewers over plain TCP: the channel's fan-out serves them.
	waitFor(t, 5*time.Second, "both sessions in the fan-out", func() bool { return o.handler.FanOutViewers() == 2 })
	next := map[uint8]uint64{}
	started := map[uint8]bool{}
	for {
		for _, s := range o.stats() {
			if s.CloseCode == CloseTooSlow {
				if !strings.Contains(s.CloseReason, "too slow") || s.Lost == 0 || s.Skips < 2 {
					t.Errorf("slow session ended %+v", s)
				}
				return
			}
		}
		m, err := good.Next(ctx)
		if err != nil {
			t.Fatalf("the good reader: %v", err)
		}
		if m.Type == "skip" {
			t.Fatalf("the good reader skipped: %s", m.Text)
		}
		f := m.Frame
		if f == nil || f.Kind != KindChunk {
			continue
		}
		switch {
		case f.Start:
			started[f.Track], next[f.Track] = true, 1
		case started[f.Track] && f.Sequence != next[f.Track]:
			t.Fatalf("the good reader lost a chunk: index %d, want %d", f.Sequence, next[f.Track])
		default:
			next[f.Track]++
		}
	}
}

func TestStartOverMaxBitrateAndCodecs(t *testing.T) {
	o := newOrigin(t, 0, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{MaxBitrate: 200_000, Codecs: []string{"avc1", "mp4a.40"}, Policy: PolicyTCP}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var ids []string
	for _, tr := range c.Ready.Tracks {
		ids = append(ids, tr.ID)
	}
	if got := strings.Join(ids, ","); got != "v180,a64" {
		t.Errorf("tracks %s, want v180,a64 (v360 is over maxBitrate)", got)
	}
	v, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Tracks: []string{"v360"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.CloseNow()
	if v.Ready.Video != "v360" || v.Ready.Audio != "" {
		t.Errorf("a video track named alone: %+v", v.Ready)
	}
	c2, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Codecs: []string{"mp4a"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseNow()
	if c2.Ready.Video != "" || c2.Ready.Audio != "a64" || len(c2.Ready.Tracks) != 1 {
		t.Errorf("audio-only start: %+v", c2.Ready)
	}
}
