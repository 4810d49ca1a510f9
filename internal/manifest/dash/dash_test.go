package dash

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/internal/manifesttest"
	"github.com/streambed/streambed/internal/media"
)

var (
	ast2025 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	epoch   = time.Unix(0, 0).UTC()
	// About 1.7e9 s after the epoch: tfdt ≈ 1.5e14 at 90 kHz, segment numbers ≈ 8.6e8.
	longUptime = time.Date(2024, 6, 1, 12, 0, 0, 250_000_000, time.UTC)
)

func vod(d, total time.Duration, addr manifest.Addressing) *manifest.Presentation {
	return manifest.AssetPresentation(manifesttest.Asset("vod", d, total), addr)
}

func live(ast time.Time, d, tsbd time.Duration, now time.Time, addr manifest.Addressing) *manifest.Presentation {
	return manifesttest.Live(media.Timeline{AvailabilityStart: ast, SegmentDuration: d, TimeShiftBufferDepth: tsbd}, now, addr)
}

type mpdCase struct {
	name string
	p    *manifest.Presentation
}

func cases() []mpdCase {
	var cs []mpdCase
	for _, addr := range []manifest.Addressing{manifest.Number, manifest.Timeline} {
		a := addr.String()
		cs = append(cs,
			mpdCase{"static-" + a + "-2s", vod(2*time.Second, 9*time.Second, addr)},
			mpdCase{"static-" + a + "-1s", vod(time.Second, 5500*time.Millisecond, addr)},
			mpdCase{"static-" + a + "-10s", vod(10*time.Second, 95*time.Second, addr)},
			mpdCase{"dynamic-" + a + "-2s", live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(60500*time.Millisecond), addr)},
			mpdCase{"dynamic-" + a + "-first-segment", live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(2*time.Second), addr)},
			mpdCase{"dynamic-" + a + "-long-uptime", live(epoch, 2*time.Second, 10*time.Second, longUptime, addr)},
			mpdCase{"dynamic-" + a + "-1s", live(ast2025, time.Second, 5*time.Second, ast2025.Add(time.Hour), addr)},
			mpdCase{"dynamic-" + a + "-10s", live(ast2025, 10*time.Second, 60*time.Second, ast2025.Add(90*time.Minute+3*time.Second), addr)},
		)
	}
	// Low-latency DASH: one-frame chunks (25 fps) and 200 ms chunks (an encoder's).
	cs = append(cs,
		mpdCase{"dynamic-number-2s-ll", lowLatency(live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(60500*time.Millisecond), manifest.Number), 40*time.Millisecond)},
		mpdCase{"dynamic-number-1s-ll-200ms", lowLatency(live(ast2025, time.Second, 5*time.Second, ast2025.Add(time.Hour), manifest.Number), 200*time.Millisecond)},
	)
	return cs
}

func lowLatency(p *manifest.Presentation, chunk time.Duration) *manifest.Presentation {
	p.LowLatency = manifest.NewLowLatency(p.SegmentDuration(), chunk)
	return p
}

func render(t *testing.T, p *manifest.Presentation) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			got := render(t, c.p)
			manifesttest.Golden(t, c.name+".mpd", got)
			if again := render(t, c.p); !bytes.Equal(got, again) {
				t.Error("two renderings of the same presentation differ")
			}
		})
	}
}

func TestSchema(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			manifesttest.ValidateMPD(t, c.name+".mpd", render(t, c.p))
		})
	}
}

// TestSegmentAddressing reads each MPD back and checks that its template resolves to
// the segments that were described: same numbers, same media times, same URLs.
func TestSegmentAddressing(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			var m mpdXML
			if err := xml.Unmarshal(render(t, c.p), &m); err != nil {
				t.Fatal(err)
			}
			for _, as := range m.Periods[0].AdaptationSets {
				for _, r := range as.Representations {
					st := r.SegmentTemplate
					if st == nil {
						st = as.SegmentTemplate
					}
					tr, err := c.p.Stream.Track(r.ID)
					if err != nil {
						t.Fatal(err)
					}
					checkAddressing(t, c.p, tr, st)
				}
			}
		})
	}
}

func checkAddressing(t *testing.T, p *manifest.Presentation, tr *media.Track, st *segmentTemplateXML) {
	t.Helper()
	segs := p.Segments[tr.ID]
	if st.StartNumber == nil {
		t.Fatalf("%s: no startNumber", tr.ID)
	}
	switch p.Addressing {
	case manifest.Number:
		if st.Duration == nil {
			t.Fatalf("%s: no @duration", tr.ID)
		}
		if p.Live && *st.StartNumber != p.StartNumber {
			t.Errorf("%s: startNumber %d, want %d", tr.ID, *st.StartNumber, p.StartNumber)
		}
		for _, s := range segs {
			// MPD time of the segment, in the template timescale, against its tfdt.
			mpdTime := (s.Number - *st.StartNumber) * *st.Duration
			mediaTime := s.Start*uint64(st.Timescale)/uint64(tr.Timescale) - st.PresentationTimeOffset
			slack := uint64(0)
			if tr.Kind == media.Audio {
				slack = 1024 * uint64(st.Timescale) / uint64(tr.Timescale) // one AAC frame
			}
			if diff := absDiff(mpdTime, mediaTime); diff > slack {
				t.Errorf("%s segment %d: MPD time %d, media time %d (timescale %d)", tr.ID, s.Number, mpdTime, mediaTime, st.Timescale)
			}
		}
	case manifest.Timeline:
		var got []media.SegmentRef
		n, tm := *st.StartNumber, uint64(0)
		for _, e := range st.Timeline.S {
			if e.T != nil {
				tm = *e.T
			}
			for i := 0; i <= e.R; i++ {
				got = append(got, media.SegmentRef{Number: n, Start: tm, Duration: e.D})
				n, tm = n+1, tm+e.D
			}
		}
		if len(got) != len(segs) {
			t.Fatalf("%s: timeline has %d segments, want %d", tr.ID, len(got), len(segs))
		}
		for i, s := range segs {
			if got[i].Number != s.Number || got[i].Start != s.Start || got[i].Duration != s.Duration {
				t.Errorf("%s: timeline entry %d is %+v, want %+v", tr.ID, i, got[i], s)
			}
			url, err := manifest.ExpandTemplate(st.Media, manifest.TemplateValues{RepresentationID: tr.ID, Time: got[i].Start, Number: got[i].Number})
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%s/t%d.m4s", tr.ID, s.Start); url != want {
				t.Errorf("URL %q, want %q", url, want)
			}
		}
		if p.Live && st.PresentationTimeOffset != 0 {
			t.Errorf("%s: live presentationTimeOffset %d, want 0", tr.ID, st.PresentationTimeOffset)
		}
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestLiveNumberMatchesTimeline(t *testing.T) {
	// Segment n of a $Number$ channel is available at AST + (n+1)·D (media.Timeline);
	// the MPD says the same: AST + Period@start + (n - startNumber + 1)·@duration.
	tl := media.Timeline{AvailabilityStart: ast2025, SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: 10 * time.Second}
	p := manifesttest.Live(tl, ast2025.Add(time.Minute), manifest.Number)
	var m mpdXML
	if err := xml.Unmarshal(render(t, p), &m); err != nil {
		t.Fatal(err)
	}
	if m.Periods[0].Start != "PT0S" || m.AvailabilityStartTime != "2025-01-01T00:00:00Z" {
		t.Fatalf("period start %s, AST %s", m.Periods[0].Start, m.AvailabilityStartTime)
	}
	st := m.Periods[0].AdaptationSets[0].SegmentTemplate
	for _, n := range []uint64{0, 1, 29} {
		secs := float64((n-*st.StartNumber+1)**st.Duration) / float64(st.Timescale)
		got := ast2025.Add(time.Duration(secs * float64(time.Second)))
		if want := tl.AvailabilityStart.Add(time.Duration(n+1) * tl.SegmentDuration); !got.Equal(want) { // segment n is available when it ends
			t.Errorf("segment %d: MPD availability %s, timeline %s", n, got, want)
		}
	}
}

func TestTemplatePlacement(t *testing.T) {
	// Timeline: video rungs share a timeline (one template on the AdaptationSet); the
	// audio track has its own, on its AdaptationSet since it is alone there.
	var m mpdXML
	if err := xml.Unmarshal(render(t, vod(2*time.Second, 9*time.Second, manifest.Timeline)), &m); err != nil {
		t.Fatal(err)
	}
	v, a := m.Periods[0].AdaptationSets[0], m.Periods[0].AdaptationSets[1]
	if v.SegmentTemplate == nil || a.SegmentTemplate == nil || v.Representations[0].SegmentTemplate != nil {
		t.Fatal("templates not hoisted to the AdaptationSets")
	}
	if v.SegmentTemplate.Timeline.S[0].D == a.SegmentTemplate.Timeline.S[0].D {
		t.Error("audio and video share a timeline")
	}
	// Two audio rungs with different timescales in one language: per Representation.
	p := vod(2*time.Second, 9*time.Second, manifest.Timeline)
	a64 := *p.Stream.Tracks[2]
	a64.ID, a64.Bandwidth, a64.Timescale, a64.SampleRate = "a64", 64000, 44100, 44100
	p.Stream.Tracks = append(p.Stream.Tracks, &a64)
	p.Segments["a64"] = manifesttest.Segments(&a64, 2*time.Second, 0, 5, 1, 9*time.Second)
	m = mpdXML{}
	if err := xml.Unmarshal(render(t, p), &m); err != nil {
		t.Fatal(err)
	}
	a = m.Periods[0].AdaptationSets[1]
	if len(m.Periods[0].AdaptationSets) != 2 || a.SegmentTemplate != nil || len(a.Representations) != 2 ||
		a.Representations[0].SegmentTemplate == nil || a.Representations[1].SegmentTemplate.Timescale != 44100 {
		t.Errorf("differing audio timelines not placed on the Representations: %+v", a)
	}
	manifesttest.ValidateMPD(t, "two-audio.mpd", render(t, p))
}

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "PT0S"},
		{-time.Second, "PT0S"},
		{time.Second, "PT1S"},
		{2 * time.Second, "PT2S"},
		{10 * time.Second, "PT10S"},
		{40 * time.Millisecond, "PT0.04S"},
		{90500 * time.Millisecond, "PT1M30.5S"},
		{time.Minute, "PT1M"},
		{time.Hour, "PT1H"},
		{3661*time.Second + 40*time.Millisecond, "PT1H1M1.04S"},
		{2005333333 * time.Nanosecond, "PT2.005333333S"},
		{1, "PT0.000000001S"},
		{50 * time.Hour, "PT50H"},
	} {
		if got := formatDuration(c.d); got != c.want {
			t.Errorf("formatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestCompact(t *testing.T) {
	seg := func(n, s, d uint64) media.SegmentRef { return media.SegmentRef{Number: n, Start: s, Duration: d} }
	u := func(v uint64) *uint64 { return &v }
	for _, c := range []struct {
		name string
		in   []media.SegmentRef
		want []sXML
	}{
		{"one", []media.SegmentRef{seg(0, 0, 2)}, []sXML{{T: u(0), D: 2}}},
		{"repeat", []media.SegmentRef{seg(1, 10, 2), seg(2, 12, 2), seg(3, 14, 2)}, []sXML{{T: u(10), D: 2, R: 2}}},
		{"uneven", []media.SegmentRef{seg(0, 0, 94), seg(1, 94, 94), seg(2, 188, 93), seg(3, 281, 94)},
			[]sXML{{T: u(0), D: 94, R: 1}, {D: 93}, {D: 94}}},
		{"gap", []media.SegmentRef{seg(0, 0, 2), seg(1, 2, 2), seg(2, 10, 2)}, []sXML{{T: u(0), D: 2, R: 1}, {T: u(10), D: 2}}},
		{"64-bit", []media.SegmentRef{seg(1, 1<<50, 180000), seg(2, 1<<50+180000, 180000)}, []sXML{{T: u(1 << 50), D: 180000, R: 1}}},
	} {
		got := compact(c.in)
		if fmt.Sprint(show(got)) != fmt.Sprint(show(c.want)) {
			t.Errorf("%s: compact = %v, want %v", c.name, show(got), show(c.want))
		}
	}
}

func show(ss []sXML) []string {
	var out []string
	for _, s := range ss {
		t := "-"
		if s.T != nil {
			t = fmt.Sprint(*s.T)
		}
		out = append(out, fmt.Sprintf("t=%s d=%d r=%d", t, s.D, s.R))
	}
	return out
}

func TestNumberTimescale(t *testing.T) {
	for _, c := range []struct {
		track    uint32
		d        time.Duration
		ts       uint32
		duration uint64
	}{
		{90000, 2 * time.Second, 90000, 180000},
		{48000, 2 * time.Second, 48000, 96000},
		{44100, 1001 * time.Millisecond, 1000, 1001}, // 44144.1 ticks: not whole
		{12800, 10 * time.Second, 12800, 128000},
		{90000, 33366667 * time.Nanosecond, 1_000_000, 0}, // not whole in µs either
	} {
		ts, dur, err := numberTimescale(c.track, c.d)
		if c.duration == 0 {
			if err == nil {
				t.Errorf("numberTimescale(%d, %v) = %d, %d; want an error", c.track, c.d, ts, dur)
			}
			continue
		}
		if err != nil || ts != c.ts || dur != c.duration {
			t.Errorf("numberTimescale(%d, %v) = %d, %d, %v; want %d, %d", c.track, c.d, ts, dur, err, c.ts, c.duration)
		}
	}
}

func TestErrors(t *testing.T) {
	emptyWindow := live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(time.Second), manifest.Timeline)
	noSegmentsYet := live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(time.Second), manifest.Number)
	timeWithNumber := vod(2*time.Second, 9*time.Second, manifest.Number)
	timeWithNumber.MediaTemplate = manifest.AssetTimeTemplate
	noRepID := vod(2*time.Second, 9*time.Second, manifest.Number)
	noRepID.MediaTemplate = "seg-$Number$.m4s"
	noTracks := vod(2*time.Second, 9*time.Second, manifest.Number)
	noTracks.Stream = &media.Stream{Name: "x", SegmentDuration: time.Second}
	badRate := vod(2*time.Second, 9*time.Second, manifest.Number)
	badRate.Stream.Tracks[0].FrameRate = "fast"

	for _, c := range []struct {
		name string
		p    *manifest.Presentation
		want error
	}{
		{"live timeline before the first segment", emptyWindow, media.ErrNotYet},
		{"$Time$ with @duration", timeWithNumber, media.ErrInvalidMedia},
		{"template without $RepresentationID$", noRepID, media.ErrInvalidMedia},
		{"no tracks", noTracks, media.ErrInvalidMedia},
		{"bad frame rate", badRate, media.ErrInvalidMedia},
	} {
		var b bytes.Buffer
		err := Render(&b, c.p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes despite the error", c.name, b.Len())
		}
	}
	// A $Number$ channel needs no segment list: it plays before the first segment.
	got := render(t, noSegmentsYet)
	if !strings.Contains(string(got), `startNumber="0"`) {
		t.Errorf("live $Number$ MPD without startNumber=0:\n%s", got)
	}
}

// withPeriod marks the segments of p numbered from `from` on as live period idx, as
// an encoder restarting there on a channel without restart_on_encoder_reconnect
// leaves them, and records where it starts (the video's first segment of it).
func withPeriod(p *manifest.Presentation, idx uint32, from uint64) *manifest.Presentation {
	var start time.Duration
	for _, t := range p.Stream.Tracks {
		for i, r := range p.Segments[t.ID] {
			if r.Number >= from {
				p.Segments[t.ID][i].Period = idx
				if r.Number == from && t.Kind == media.Video {
					start = t.Duration(r.Start)
				}
			}
		}
	}
	p.Periods = append(p.Periods, media.Period{Index: idx, Start: start})
	return p
}

// A live window across an encoder restart is two Periods: the later one starts where
// it was recorded, its presentationTimeOffset is that start in each track's timescale
// (media time is the channel's, so presentation time = media time), it lists only
// its own segments, and the MPD is schema-valid. A window left with only the later
// period keeps that period's id and start. Long uptime (media time since 1970) must
// not overflow.
func TestLivePeriods(t *testing.T) {
	for _, addr := range []manifest.Addressing{manifest.Number, manifest.Timeline} {
		for _, tc := range []struct {
			name      string
			ast, now  time.Time
			splitBack uint64 // the period starts this many segments before the newest
			periods   int
		}{
			{"two", ast2025, ast2025.Add(60500 * time.Millisecond), 2, 2},
			{"two-long-uptime", epoch, longUptime, 3, 2},
			{"only-later", ast2025, ast2025.Add(60500 * time.Millisecond), 99, 1},
		} {
			name := addr.String() + "-" + tc.name
			t.Run(name, func(t *testing.T) {
				p := live(tc.ast, 2*time.Second, 10*time.Second, tc.now, addr)
				v := p.Segments[p.Stream.TracksOf(media.Video)[0].ID]
				from := v[len(v)-1].Number - min(tc.splitBack, v[len(v)-1].Number)
				if tc.name == "only-later" {
					from = v[0].Number - 3 // began before the window
					p.Periods = []media.Period{{Index: 4, Start: time.Duration(from) * 2 * time.Second}}
					for _, tr := range p.Stream.Tracks {
						for i := range p.Segments[tr.ID] {
							p.Segments[tr.ID][i].Period = 4
						}
					}
				} else {
					withPeriod(p, 1, from)
				}
				mpd := render(t, p)
				manifesttest.ValidateMPD(t, name+".mpd", mpd)
				var m mpdXML
				if err := xml.Unmarshal(mpd, &m); err != nil {
					t.Fatal(err)
				}
				if len(m.Periods) != tc.periods {
					t.Fatalf("%d Periods, want %d:\n%s", len(m.Periods), tc.periods, mpd)
				}
				for _, per := range m.Periods {
					start := parseISO(t, per.Start)
					for _, as := range per.AdaptationSets {
						for _, r := range as.Representations {
							st := r.SegmentTemplate
							if st == nil {
								st = as.SegmentTemplate
							}
							tr, _ := p.Stream.Track(r.ID)
							// presentationTimeOffset is the Period's start in media time.
							pto := time.Duration(float64(st.PresentationTimeOffset) / float64(st.Timescale) * float64(time.Second))
							if (pto - start).Abs() > time.Millisecond {
								t.Errorf("Period %s %s: presentationTimeOffset %v, Period@start %v", per.ID, r.ID, pto, start)
							}
							var mine []media.SegmentRef
							for _, s := range p.Segments[tr.ID] {
								if fmt.Sprint(s.Period) == per.ID {
									mine = append(mine, s)
								}
							}
							sub := *p
							sub.Segments = map[string][]media.SegmentRef{tr.ID: mine}
							if addr == manifest.Number && per.ID != "0" {
								sub.StartNumber = uint64(start / (2 * time.Second))
							}
							if addr == manifest.Timeline || per.ID == "0" {
								checkPeriodAddressing(t, &sub, tr, st)
							} else {
								checkAddressing(t, &sub, tr, st)
							}
						}
					}
				}
			})
		}
	}
}

// checkPeriodAddressing is checkAddressing for a SegmentTimeline of a later period
// (or the first), whose presentationTimeOffset (checked by the caller) is not 0.
func checkPeriodAddressing(t *testing.T, p *manifest.Presentation, tr *media.Track, st *segmentTemplateXML) {
	t.Helper()
	cp := *st
	cp.PresentationTimeOffset = 0
	checkAddressing(t, p, tr, &cp)
}

// parseISO reads the xs:duration formatDuration writes (PT…H…M…S).
func parseISO(t *testing.T, s string) time.Duration {
	t.Helper()
	r := strings.NewReplacer("PT", "", "H", "h", "M", "m", "S", "s")
	d, err := time.ParseDuration(r.Replace(s))
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// The MPD of a channel with nothing to play yet is dynamic, schema-valid and has no
// AdaptationSet, with or without tracks described, and never an availability start
// in year 1 (an encoder's channel learns it from its first chunk).
func TestRenderWaiting(t *testing.T) {
	now := ast2025.Add(time.Hour)
	for name, p := range map[string]*manifest.Presentation{
		"no tracks, no start": {Stream: &media.Stream{Name: "in"}, Live: true, Timeline: media.Timeline{SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: time.Minute}, UTCTimingURL: "/time"},
		"tracks":              live(ast2025, 2*time.Second, 10*time.Second, now, manifest.Timeline),
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RenderWaiting(&b, p, now); err != nil {
				t.Fatal(err)
			}
			mpd := b.String()
			manifesttest.ValidateMPD(t, "waiting.mpd", b.Bytes())
			if !strings.Contains(mpd, `type="dynamic"`) || strings.Contains(mpd, "AdaptationSet") || strings.Contains(mpd, "0001-01-01") {
				t.Errorf("waiting MPD:\n%s", mpd)
			}
		})
	}
	if err := RenderWaiting(io.Discard, vod(2*time.Second, 4*time.Second, manifest.Number), now); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("a waiting MPD of an asset: %v", err)
	}
}

// A low-latency MPD carries availabilityTimeOffset = D − chunk and
// availabilityTimeComplete="false" on every SegmentTemplate, one ServiceDescription
// (before the Periods) whose latency refers to the ProducerReferenceTime of every
// AdaptationSet, which places media time 0 at the availability start; it validates
// with several Periods too. Without LowLatency none of it is there (the golden files
// of the other cases hold their bytes).
func TestLowLatencyMPD(t *testing.T) {
	for _, addr := range []manifest.Addressing{manifest.Number, manifest.Timeline} {
		t.Run(addr.String(), func(t *testing.T) {
			p := lowLatency(live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(60500*time.Millisecond), addr), 40*time.Millisecond)
			v := p.Segments[p.Stream.TracksOf(media.Video)[0].ID]
			withPeriod(p, 1, v[len(v)-1].Number-1)
			mpd := render(t, p)
			manifesttest.ValidateMPD(t, "ll-"+addr.String()+".mpd", mpd)
			var m mpdXML
			if err := xml.Unmarshal(mpd, &m); err != nil {
				t.Fatal(err)
			}
			want := serviceDescriptionXML{Latency: latencyXML{Target: 1120, Min: 620, Max: 3120}, PlaybackRate: playbackRateXML{Min: "0.96", Max: "1.04"}}
			if len(m.ServiceDescriptions) != 1 || m.ServiceDescriptions[0] != want {
				t.Errorf("ServiceDescriptions %+v, want one %+v", m.ServiceDescriptions, want)
			}
			if i, j := bytes.Index(mpd, []byte("<ServiceDescription")), bytes.Index(mpd, []byte("<Period")); i < 0 || i > j {
				t.Errorf("ServiceDescription not before the first Period:\n%s", mpd)
			}
			if len(m.Periods) != 2 {
				t.Fatalf("%d Periods, want 2", len(m.Periods))
			}
			for _, per := range m.Periods {
				for _, as := range per.AdaptationSets {
					if len(as.ProducerReferenceTimes) != 1 {
						t.Fatalf("AdaptationSet %d: %d ProducerReferenceTimes", as.ID, len(as.ProducerReferenceTimes))
					}
					prt := as.ProducerReferenceTimes[0]
					if prt.ID != 0 || prt.PresentationTime != 0 || prt.WallClockTime != "2025-01-01T00:00:00Z" || prt.UTCTiming == nil || prt.UTCTiming.Value != "/time" {
						t.Errorf("AdaptationSet %d: ProducerReferenceTime %+v", as.ID, prt)
					}
					sts := []*segmentTemplateXML{as.SegmentTemplate}
					for _, r := range as.Representations {
						sts = append(sts, r.SegmentTemplate)
					}
					for _, st := range sts {
						if st != nil && (st.AvailabilityTimeOffset != "1.96" || st.AvailabilityTimeComplete != "false") {
							t.Errorf("AdaptationSet %d: availabilityTimeOffset %q, availabilityTimeComplete %q; want 1.96, false", as.ID, st.AvailabilityTimeOffset, st.AvailabilityTimeComplete)
						}
					}
				}
			}
			p.LowLatency = nil
			for _, word := range []string{"availabilityTime", "ServiceDescription", "ProducerReferenceTime"} {
				if bytes.Contains(render(t, p), []byte(word)) {
					t.Errorf("%s in an MPD without LowLatency", word)
				}
			}
		})
	}
}

func TestNewLowLatency(t *testing.T) {
	for _, tc := range []struct {
		segment, chunk time.Duration
		want           *manifest.LowLatency
		ato            time.Duration
	}{
		{2 * time.Second, 40 * time.Millisecond, &manifest.LowLatency{ChunkDuration: 40 * time.Millisecond, TargetLatency: 1120 * time.Millisecond,
			MinLatency: 620 * time.Millisecond, MaxLatency: 3120 * time.Millisecond, MinPlaybackRate: 0.96, MaxPlaybackRate: 1.04, PartTarget: 200 * time.Millisecond}, 1960 * time.Millisecond},
		// Two AAC frames at 48 kHz: the offset is rounded down to the millisecond.
		{2 * time.Second, 42666667 * time.Nanosecond, &manifest.LowLatency{ChunkDuration: 42666667 * time.Nanosecond, TargetLatency: 1128 * time.Millisecond,
			MinLatency: 628 * time.Millisecond, MaxLatency: 3128 * time.Millisecond, MinPlaybackRate: 0.96, MaxPlaybackRate: 1.04, PartTarget: 200 * time.Millisecond}, 1957 * time.Millisecond},
		{2 * time.Second, 2 * time.Second, nil, 0},
		{2 * time.Second, 3 * time.Second, nil, 0},
		{2 * time.Second, 0, nil, 0},
	} {
		got := manifest.NewLowLatency(tc.segment, tc.chunk)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("NewLowLatency(%v, %v) = %+v, want %+v", tc.segment, tc.chunk, got, tc.want)
			continue
		}
		if got != nil && got.AvailabilityTimeOffset(tc.segment) != tc.ato {
			t.Errorf("NewLowLatency(%v, %v).AvailabilityTimeOffset = %v, want %v", tc.segment, tc.chunk, got.AvailabilityTimeOffset(tc.segment), tc.ato)
		}
	}
}
