package wspush

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// sessionLog is what a viewer saw, in order: binary frames as track/segment/index
// with their bytes checked against the store, and text messages reduced to what
// does not depend on the moment (an adapt report's segment and track, a switch
// whole).
type sessionLog struct {
	base     uint64
	entries  []string
	adapts   int
	switches int
}

// readSession reads c until segments video segments have ended, checking every
// chunk against the channel's store, each segment's chunks contiguous from a
// keyframe, a switch's init before the new track's first chunk, and an adapt
// report before each segment after the first naming the track its chunks come in.
func readSession(t *testing.T, ctx context.Context, o *origin, c *Client, segments int) sessionLog {
	t.Helper()
	r := c.Ready
	lg := sessionLog{base: r.Base}
	seg := map[uint8]uint64{}
	next := map[uint8]int{}
	var adapt *Adapt
	var sw *Switch
	initFor := ""
	done := 0
	for done < segments {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Frame == nil {
			switch m.Type {
			case "adapt":
				adapt = new(Adapt)
				if err := json.Unmarshal(m.Text, adapt); err != nil {
					t.Fatal(err)
				}
				lg.adapts++
				lg.entries = append(lg.entries, fmt.Sprintf("adapt %d %s", adapt.Segment, adapt.Track))
			case "switch":
				sw = new(Switch)
				if err := json.Unmarshal(m.Text, sw); err != nil {
					t.Fatal(err)
				}
				lg.switches++
				lg.entries = append(lg.entries, fmt.Sprintf("switch %s→%s at %d (%s)", sw.From, sw.To, sw.Segment, sw.Reason))
			default:
				t.Fatalf("unexpected %s message %s", m.Type, m.Text)
			}
			continue
		}
		f := m.Frame
		tr := r.Tracks[f.Track]
		if f.Kind == KindInit {
			if len(seg) == 0 && f.Sequence == 0 {
				lg.entries = append(lg.entries, "init "+tr.ID) // the first inits, after ready
				continue
			}
			if sw == nil || tr.ID != sw.To || r.Base+f.Sequence != sw.Segment {
				t.Fatalf("an init of %s for segment %d without a switch to it (%+v)", tr.ID, r.Base+f.Sequence, sw)
			}
			initFor = tr.ID
			lg.entries = append(lg.entries, "init "+tr.ID)
			continue
		}
		idx := int(f.Sequence)
		if f.Start {
			seg[f.Track], idx = r.Base+f.Sequence, 0
			if tr.Kind == "video" {
				if sw != nil && sw.Segment == seg[f.Track] && (tr.ID != sw.To || initFor != sw.To) {
					t.Fatalf("segment %d after the switch to %s comes in %s (init of %q)", seg[f.Track], sw.To, tr.ID, initFor)
				}
				if seg[f.Track] != r.Base && (adapt == nil || adapt.Segment != seg[f.Track] || adapt.Track != tr.ID) {
					t.Fatalf("segment %d of %s: adapt report %+v", seg[f.Track], tr.ID, adapt)
				}
			}
		} else if _, ok := seg[f.Track]; !ok {
			continue // the audio segment in progress at start: its rest, as stored
		} else if idx != next[f.Track] {
			t.Fatalf("track %s segment %d: chunk %d, want %d", tr.ID, seg[f.Track], idx, next[f.Track])
		}
		next[f.Track] = idx + 1
		stored, _, err := o.channel.Partial(tr.ID, seg[f.Track])
		if err != nil || idx >= len(stored.Chunks) || !bytes.Equal(stored.Chunks[idx].Data, f.Payload) {
			t.Fatalf("track %s segment %d chunk %d: not the stored bytes (%v)", tr.ID, seg[f.Track], idx, err)
		}
		lg.entries = append(lg.entries, fmt.Sprintf("%s %d/%d", tr.ID, seg[f.Track], idx))
		if f.End && tr.Kind == "video" {
			done++
		}
	}
	return lg
}

// TestFanOutAdaptiveAndStats: an adaptive viewer that asks for stats (what the
// browser page's viewers do) is served by the fan-out; it switches rungs at a
// keyframe with the switch message and the new init first, gets an adapt report
// per segment, and every chunk whole and as stored; and it gets the same segments,
// whole, as a viewer of the per-session path on the same channel started at the
// same segment.
func TestFanOutAdaptiveAndStats(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// The per-session path, on the same hub and channel.
	old, err := NewHandler(ctx, o.hub, Options{NoFanOut: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ws/{channel}", old)
	oldSrv := httptest.NewServer(mux)
	t.Cleanup(func() { oldSrv.CloseClientConnections(); oldSrv.Close() })
	oldURL := "ws" + oldSrv.URL[len("http"):] + "/ws/live"

	// The buffer rule on loopback sees an empty output buffer and steps up at the
	// first boundary: a switch from v180 to v360 with audio beside.
	start := Start{Policy: PolicyBuffer, Stats: true}
	var fan, per *Client
	for try := 0; ; try++ {
		fan, err = Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: start})
		if err != nil {
			t.Fatal(err)
		}
		per, err = Dial(ctx, oldURL, DialOptions{Start: start})
		if err != nil {
			t.Fatal(err)
		}
		if fan.Ready.Base == per.Ready.Base {
			break
		}
		// A segment began between the two starts: the logs could not be compared.
		fan.CloseNow()
		per.CloseNow()
		if try == 4 {
			t.Fatalf("the two viewers started at different segments five times")
		}
	}
	defer fan.CloseNow()
	defer per.CloseNow()
	if got := o.handler.FanOutViewers(); got != 1 {
		t.Fatalf("%d sessions in the fan-out, want the adaptive stats viewer", got)
	}
	if old.FanOutViewers() != 0 {
		t.Fatal("the per-session handler fanned out")
	}
	lf := readSession(t, ctx, o, fan, 3)
	lp := readSession(t, ctx, o, per, 3)
	if lf.switches == 0 || lf.adapts < 2 || lp.switches == 0 {
		t.Fatalf("fan-out viewer: %d switches, %d adapt reports; per-session viewer: %d switches", lf.switches, lf.adapts, lp.switches)
	}
	// The same segments, each whole (every chunk was checked against the store
	// above, so the bytes are the same); where each switched may differ by a
	// segment, since the rule samples the output buffer, which the per-session
	// path's writer goroutine empties a moment later than the fan-out's writev.
	cf, cp := chunksPerSegment(lf.entries), chunksPerSegment(lp.entries)
	if fmt.Sprint(cf) != fmt.Sprint(cp) {
		t.Fatalf("chunks per video segment: fan-out %v, per-session %v", cf, cp)
	}
	t.Logf("chunks per video segment %v; fan-out %v; per-session %v", cf, texts(lf.entries), texts(lp.entries))
}

// chunksPerSegment counts the video chunks of each segment in a session log.
func chunksPerSegment(entries []string) map[uint64]int {
	out := map[uint64]int{}
	for _, e := range entries {
		var id string
		var seg uint64
		var i int
		if n, _ := fmt.Sscanf(e, "%s %d/%d", &id, &seg, &i); n == 3 && id != "a64" {
			out[seg]++
		}
	}
	return out
}

// texts are the log's messages and inits.
func texts(entries []string) []string {
	var out []string
	for _, e := range entries {
		var id string
		var seg uint64
		var i int
		if n, _ := fmt.Sscanf(e, "%s %d/%d", &id, &seg, &i); n != 3 {
			out = append(out, e)
		}
	}
	return out
}
