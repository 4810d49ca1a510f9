package hls

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/internal/manifesttest"
	"github.com/streambed/streambed/internal/media"
)

// frames cuts [start, end) of track t into one-frame chunks as a looped channel makes
// them: 40 ms of 25 fps video, 1024-sample AAC frames; the first is a keyframe.
func frames(t *media.Track, start, end uint64) []*media.Chunk {
	step := uint64(1024)
	if t.Kind == media.Video {
		step = uint64(t.Timescale) / 25
	}
	var out []*media.Chunk
	for s := start; s < end; s += step {
		d := min(step, end-s)
		out = append(out, &media.Chunk{Data: []byte{1}, Start: s, Duration: d, Keyframe: t.Kind == media.Audio || s == start})
	}
	return out
}

// lowLatency makes p (a live presentation at now, 2 s segments) low latency in 40 ms
// chunks: parts of the two newest listed segments and of the one in progress at now.
func lowLatency(p *manifest.Presentation, now time.Time, skip bool) *manifest.Presentation {
	p.LowLatency = manifest.NewLowLatency(p.SegmentDuration(), 40*time.Millisecond+666*time.Microsecond)
	p.Edges = map[string]*manifest.Edge{}
	p.Skip = skip
	for _, t := range p.Stream.Tracks {
		segs := p.Segments[t.ID]
		var done []*media.Segment
		for _, r := range segs[max(len(segs)-2, 0):] {
			done = append(done, &media.Segment{SegmentRef: r, Chunks: frames(t, r.Start, r.End())})
		}
		last := segs[len(segs)-1]
		elapsed := manifest.TicksOf(now.Sub(p.Timeline.AvailabilityStart), t.Timescale)
		chunks := frames(t, last.End(), elapsed)
		if t.Kind == media.Audio { // whole AAC frames only
			chunks = chunks[:len(chunks)-1]
		}
		p.Edges[t.ID] = manifest.NewEdge(done, last.Number+1, chunks, 0, manifest.TicksOf(p.LowLatency.PartTarget, t.Timescale))
	}
	return p
}

func llCases() map[string]*manifest.Presentation {
	at := ast2025.Add(60500 * time.Millisecond)
	return map[string]*manifest.Presentation{
		"live-2s-ll":             lowLatency(live(ast2025, 2*time.Second, 10*time.Second, at, manifest.Number), at, false),
		"live-2s-ll-dvr30":       lowLatency(live(ast2025, 2*time.Second, 30*time.Second, at, manifest.Number), at, false),
		"live-2s-ll-dvr30-delta": lowLatency(live(ast2025, 2*time.Second, 30*time.Second, at, manifest.Number), at, true),
		// A short window cannot offer delta updates: a skip request gets it whole.
		"live-2s-ll-delta-refused": lowLatency(live(ast2025, 2*time.Second, 10*time.Second, at, manifest.Number), at, true),
	}
}

func TestLowLatencyGolden(t *testing.T) {
	for name, p := range llCases() {
		t.Run(name, func(t *testing.T) {
			for _, tr := range p.Stream.Tracks {
				got := mediaPlaylist(t, p, tr.ID)
				manifesttest.Golden(t, name+"/"+tr.ID+".m3u8", got)
				checkLowLatency(t, p, tr, string(got))
			}
		})
	}
	// The refused delta is the plain playlist.
	c := llCases()
	if a, b := mediaPlaylist(t, c["live-2s-ll"], "v720"), mediaPlaylist(t, c["live-2s-ll-delta-refused"], "v720"); !bytes.Equal(a, b) {
		t.Errorf("a skip request on a playlist too short to skip changed it:\n%s\n---\n%s", a, b)
	}
}

var partLine = regexp.MustCompile(`^#EXT-X-PART:DURATION=([0-9.]+),URI="([^"]+)"(,INDEPENDENT=YES)?$`)

// checkLowLatency checks what RFC 8216bis asks of an LL-HLS playlist, beyond the
// golden bytes: every part within PART-TARGET and all but a segment's last at least
// 85% of it, PART-HOLD-BACK at least three part targets, CAN-SKIP-UNTIL at least six
// target durations, a preload hint after the last part, a rendition report for
// every other track, and a delta update listing at least CAN-SKIP-UNTIL.
func checkLowLatency(t *testing.T, p *manifest.Presentation, tr *media.Track, pl string) {
	t.Helper()
	target := p.LowLatency.PartTarget.Seconds()
	lines := strings.Split(strings.TrimSpace(pl), "\n")
	var durs []float64
	var uris []string
	hold, skipUntil := 0.0, 0.0
	reports, hints := 0, 0
	hint := ""
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "#EXT-X-PART:"):
			m := partLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("bad part line %q", l)
			}
			d, _ := strconv.ParseFloat(m[1], 64)
			durs = append(durs, d)
			uris = append(uris, m[2])
			if d > target+1e-6 {
				t.Errorf("part %s lasts %.6f s, over PART-TARGET %.3f", m[2], d, target)
			}
			last := i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "#EXT-X-PART:")
			if !last && d < 0.85*target {
				t.Errorf("part %s lasts %.6f s, under 85%% of PART-TARGET %.3f and not its segment's last", m[2], d, target)
			}
		case strings.HasPrefix(l, "#EXT-X-SERVER-CONTROL:"):
			for _, a := range strings.Split(strings.TrimPrefix(l, "#EXT-X-SERVER-CONTROL:"), ",") {
				k, v, _ := strings.Cut(a, "=")
				f, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "PART-HOLD-BACK":
					hold = f
				case "CAN-SKIP-UNTIL":
					skipUntil = f
				}
			}
		case strings.HasPrefix(l, "#EXT-X-PRELOAD-HINT:"):
			hints++
			hint = strings.TrimSuffix(strings.TrimPrefix(l, `#EXT-X-PRELOAD-HINT:TYPE=PART,URI="`), `"`)
		case strings.HasPrefix(l, "#EXT-X-RENDITION-REPORT:"):
			reports++
		}
	}
	if len(durs) == 0 || hints != 1 {
		t.Errorf("%d parts and %d preload hints", len(durs), hints)
	}
	seen := map[string]bool{hint: true}
	for _, u := range uris {
		if seen[u] {
			t.Errorf("part %s is listed twice, or hinted while listed", u)
		}
		seen[u] = true
	}
	if hold < 3*target-1e-9 {
		t.Errorf("PART-HOLD-BACK %.3f is under three part targets", hold)
	}
	if skipUntil > 0 && skipUntil < 6*2 {
		t.Errorf("CAN-SKIP-UNTIL %.3f is under six target durations", skipUntil)
	}
	if reports != len(p.Stream.Tracks)-1 {
		t.Errorf("%d rendition reports for %d other tracks", reports, len(p.Stream.Tracks)-1)
	}
	if strings.Contains(pl, "#EXT-X-SKIP:") {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "#EXTINF:") {
				n++
			}
		}
		// Only segments that start more than CAN-SKIP-UNTIL before the end may go:
		// what is left spans at least CAN-SKIP-UNTIL less one segment.
		if float64((n+1)*2) < skipUntil {
			t.Errorf("delta update lists %d segments of 2 s, CAN-SKIP-UNTIL is %.0f s", n, skipUntil)
		}
	}
}

// Parts are cut the same way whatever part of the segment is stored: the parts of any
// prefix of the chunks are a prefix of the whole segment's (a part never changes once
// listed), each within the target, and all but the last at least 85% of it.
func TestSplitPartsStable(t *testing.T) {
	for _, tr := range manifesttest.Stream("s", 2*time.Second).Tracks {
		target := manifest.TicksOf(manifest.PartTargetGoal, tr.Timescale)
		all := frames(tr, 0, 2*uint64(tr.Timescale)+1000)
		whole := manifest.SplitParts(7, all, true, target)
		for i, pt := range whole {
			if pt.Duration > target || (i < len(whole)-1 && pt.Duration*100 < target*85) {
				t.Errorf("%s part %d lasts %d ticks, target %d", tr.ID, i, pt.Duration, target)
			}
			if pt.Independent != (tr.Kind == media.Audio || i == 0) {
				t.Errorf("%s part %d independent=%v", tr.ID, i, pt.Independent)
			}
		}
		var chunks int
		for _, pt := range whole {
			chunks += pt.Chunks
		}
		if chunks != len(all) {
			t.Errorf("%s parts hold %d chunks of %d", tr.ID, chunks, len(all))
		}
		for k := 0; k <= len(all); k++ {
			got := manifest.SplitParts(7, all[:k], false, target)
			if len(got) > len(whole) {
				t.Fatalf("%s: %d chunks make %d parts, the whole %d", tr.ID, k, len(got), len(whole))
			}
			for i := range got {
				if got[i] != whole[i] {
					t.Fatalf("%s: with %d chunks part %d is %+v, in the whole %+v", tr.ID, k, i, got[i], whole[i])
				}
			}
		}
	}
	// Chunks of varying length: a chunk that does not fit starts the next part.
	ch := func(s, d uint64) *media.Chunk { return &media.Chunk{Data: []byte{1}, Start: s, Duration: d} }
	got := manifest.SplitParts(1, []*media.Chunk{ch(0, 50), ch(50, 50), ch(100, 120), ch(220, 300)}, true, 200)
	want := []struct{ first, n int }{{0, 2}, {2, 1}, {3, 1}}
	if len(got) != len(want) {
		t.Fatalf("parts %+v", got)
	}
	for i, w := range want {
		if got[i].First != w.first || got[i].Chunks != w.n {
			t.Errorf("part %d = %+v, want chunks %d+%d", i, got[i], w.first, w.n)
		}
	}
}

// PART-HOLD-BACK is the origin's setting (serve --ll-hls-part-hold-back), three part
// targets when unset, and never under two of the channel's part targets: a channel
// whose parts are longer than the setting was made for still gets a valid playlist.
func TestPartHoldBack(t *testing.T) {
	at := ast2025.Add(60500 * time.Millisecond)
	for _, tc := range []struct {
		name        string
		chunk, hold time.Duration
		want        string
	}{
		{"unset: three 200 ms parts", 40 * time.Millisecond, 0, "PART-HOLD-BACK=0.600"},
		{"set: 1 s", 40 * time.Millisecond, time.Second, "PART-HOLD-BACK=1.000"},
		{"set: two parts, the floor", 40 * time.Millisecond, 400 * time.Millisecond, "PART-HOLD-BACK=0.400"},
		{"set under two parts: raised to two", 40 * time.Millisecond, 300 * time.Millisecond, "PART-HOLD-BACK=0.400"},
		{"500 ms chunks, unset: three of their parts", 500 * time.Millisecond, 0, "PART-HOLD-BACK=1.500"},
		{"500 ms chunks, 600 ms set: two of their parts", 500 * time.Millisecond, 600 * time.Millisecond, "PART-HOLD-BACK=1.000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := lowLatency(live(ast2025, 2*time.Second, 10*time.Second, at, manifest.Number), at, false)
			p.LowLatency = manifest.NewLowLatency(2*time.Second, tc.chunk) // the header only: parts stay 200 ms
			p.LowLatency.PartHoldBack = tc.hold
			pl := string(mediaPlaylist(t, p, "v720"))
			var control string
			for _, l := range strings.Split(pl, "\n") {
				if strings.HasPrefix(l, "#EXT-X-SERVER-CONTROL:") {
					control = l
				}
			}
			if want := "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES," + tc.want; control != want {
				t.Errorf("server control %q, want %q", control, want)
			}
			if want := "#EXT-X-PART-INF:PART-TARGET=" + seconds(manifest.PartTarget(tc.chunk)) + "\n"; !strings.Contains(pl, want) {
				t.Errorf("playlist without %q:\n%s", want, pl)
			}
		})
	}
}
