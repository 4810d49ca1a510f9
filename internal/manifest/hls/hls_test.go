package hls

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/internal/manifesttest"
	"github.com/streambed/streambed/internal/media"
)

var (
	ast2025    = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	epoch      = time.Unix(0, 0).UTC()
	longUptime = time.Date(2024, 6, 1, 12, 0, 0, 250_000_000, time.UTC)
)

func vod(d, total time.Duration) *manifest.Presentation {
	return manifest.AssetPresentation(manifesttest.Asset("vod", d, total), manifest.Number)
}

func live(ast time.Time, d, tsbd time.Duration, now time.Time, addr manifest.Addressing) *manifest.Presentation {
	return manifesttest.Live(media.Timeline{AvailabilityStart: ast, SegmentDuration: d, TimeShiftBufferDepth: tsbd}, now, addr)
}

func cases() map[string]*manifest.Presentation {
	return map[string]*manifest.Presentation{
		"vod-2s":             vod(2*time.Second, 9*time.Second),
		"vod-1s":             vod(time.Second, 5500*time.Millisecond),
		"vod-10s":            vod(10*time.Second, 95*time.Second),
		"live-2s":            live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(60500*time.Millisecond), manifest.Number),
		"live-2s-time":       live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(60500*time.Millisecond), manifest.Timeline),
		"live-first-segment": live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(2*time.Second), manifest.Number),
		"live-long-uptime":   live(epoch, 2*time.Second, 10*time.Second, longUptime, manifest.Timeline),
		"live-1s":            live(ast2025, time.Second, 5*time.Second, ast2025.Add(time.Hour), manifest.Number),
		"live-10s":           live(ast2025, 10*time.Second, 60*time.Second, ast2025.Add(90*time.Minute+3*time.Second), manifest.Number),
	}
}

func multivariant(t *testing.T, p *manifest.Presentation) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := RenderMultivariant(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mediaPlaylist(t *testing.T, p *manifest.Presentation, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := RenderMedia(&b, p, id); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	for name, p := range cases() {
		t.Run(name, func(t *testing.T) {
			manifesttest.Golden(t, name+"/master.m3u8", multivariant(t, p))
			for _, tr := range p.Stream.Tracks {
				got := mediaPlaylist(t, p, tr.ID)
				manifesttest.Golden(t, name+"/"+tr.ID+".m3u8", got)
				if !bytes.Equal(got, mediaPlaylist(t, p, tr.ID)) {
					t.Error("two renderings differ")
				}
			}
		})
	}
}

// playlist is a parsed media playlist: what the checks below need.
type playlist struct {
	tags    map[string]string
	extinf  []float64
	uris    []string
	pdts    []time.Time
	endlist bool
}

func parse(t *testing.T, b []byte) playlist {
	t.Helper()
	pl := playlist{tags: map[string]string{}}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "#EXTM3U" {
		t.Fatalf("first line %q", lines[0])
	}
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "#EXTINF:"):
			v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(l, "#EXTINF:"), ","), 64)
			if err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			if dec := l[strings.IndexByte(l, '.')+1 : len(l)-1]; len(dec) < 3 {
				t.Errorf("%q: fewer than 3 decimals", l)
			}
			pl.extinf = append(pl.extinf, v)
		case strings.HasPrefix(l, "#EXT-X-PROGRAM-DATE-TIME:"):
			v, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(l, "#EXT-X-PROGRAM-DATE-TIME:"))
			if err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			pl.pdts = append(pl.pdts, v)
		case l == "#EXT-X-ENDLIST":
			pl.endlist = true
		case strings.HasPrefix(l, "#"):
			k, v, _ := strings.Cut(l, ":")
			pl.tags[k] = v
		case l != "":
			pl.uris = append(pl.uris, l)
		}
	}
	return pl
}

func TestMediaPlaylists(t *testing.T) {
	for name, p := range cases() {
		for _, tr := range p.Stream.Tracks {
			segs := p.Segments[tr.ID]
			pl := parse(t, mediaPlaylist(t, p, tr.ID))
			where := name + "/" + tr.ID
			if pl.tags["#EXT-X-VERSION"] != "7" || pl.tags["#EXT-X-MAP"] != `URI="init.mp4"` {
				t.Errorf("%s: version %q, map %q", where, pl.tags["#EXT-X-VERSION"], pl.tags["#EXT-X-MAP"])
			}
			if got, want := pl.tags["#EXT-X-MEDIA-SEQUENCE"], fmt.Sprint(segs[0].Number); got != want {
				t.Errorf("%s: media sequence %s, want %s", where, got, want)
			}
			if len(pl.extinf) != len(segs) || len(pl.uris) != len(segs) {
				t.Fatalf("%s: %d EXTINF, %d URIs, want %d", where, len(pl.extinf), len(pl.uris), len(segs))
			}
			target, _ := strconv.Atoi(pl.tags["#EXT-X-TARGETDURATION"])
			var sum float64
			for i, s := range segs {
				sum += pl.extinf[i]
				if want := tr.Seconds(s.Duration); abs(pl.extinf[i]-want) > 5e-7 {
					t.Errorf("%s: EXTINF %v, want %v", where, pl.extinf[i], want)
				}
				if int(pl.extinf[i]+0.5) > target {
					t.Errorf("%s: EXTINF %v rounds above the target %d", where, pl.extinf[i], target)
				}
				want := fmt.Sprint(s.Number) + ".m4s"
				if p.MediaTemplate == manifest.AssetTimeTemplate {
					want = fmt.Sprintf("t%d.m4s", s.Start)
				}
				if pl.uris[i] != want {
					t.Errorf("%s: URI %q, want %q", where, pl.uris[i], want)
				}
			}
			if want := tr.Seconds(segs[len(segs)-1].End() - segs[0].Start); abs(sum-want) > 1e-6*float64(len(segs)) {
				t.Errorf("%s: EXTINF sum %v, want %v", where, sum, want)
			}
			if nominal := int((p.SegmentDuration() + time.Second - 1) / time.Second); target != nominal {
				t.Errorf("%s: target duration %d, want %d", where, target, nominal)
			}
			if p.Live {
				if pl.endlist || pl.tags["#EXT-X-PLAYLIST-TYPE"] != "" || len(pl.pdts) != len(segs) {
					t.Errorf("%s: live playlist with ENDLIST %v, type %q, %d program dates", where, pl.endlist, pl.tags["#EXT-X-PLAYLIST-TYPE"], len(pl.pdts))
				}
				for i, s := range segs {
					want := p.Timeline.AvailabilityStart.Add(tr.Duration(s.Start)).Round(time.Millisecond)
					if !pl.pdts[i].Equal(want) {
						t.Errorf("%s segment %d: program date %s, want %s", where, s.Number, pl.pdts[i], want)
					}
				}
			} else if !pl.endlist || pl.tags["#EXT-X-PLAYLIST-TYPE"] != "VOD" || len(pl.pdts) != 0 {
				t.Errorf("%s: VOD playlist with ENDLIST %v, type %q", where, pl.endlist, pl.tags["#EXT-X-PLAYLIST-TYPE"])
			}
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestLongUptimeProgramDate(t *testing.T) {
	p := live(epoch, 2*time.Second, 10*time.Second, longUptime, manifest.Number)
	pl := parse(t, mediaPlaylist(t, p, "v720"))
	// The newest complete segment at 12:00:00.250 is the one that ended at 12:00:00.
	if got, want := pl.pdts[len(pl.pdts)-1], time.Date(2024, 6, 1, 11, 59, 58, 0, time.UTC); !got.Equal(want) {
		t.Errorf("last program date %s, want %s", got, want)
	}
	if got, want := pl.tags["#EXT-X-MEDIA-SEQUENCE"], fmt.Sprint(uint64(longUptime.Unix())/2-5); got != want {
		t.Errorf("media sequence %s, want %s", got, want)
	}
}

func TestMultivariant(t *testing.T) {
	got := string(multivariant(t, vod(2*time.Second, 9*time.Second)))
	for _, want := range []string{
		"#EXT-X-INDEPENDENT-SEGMENTS\n",
		`#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="a128",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="a128/playlist.m3u8"` + "\n",
		`#EXT-X-STREAM-INF:BANDWIDTH=928000,AVERAGE-BANDWIDTH=835197,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=25.000,AUDIO="audio"` + "\nv360/playlist.m3u8\n",
		`#EXT-X-STREAM-INF:BANDWIDTH=3128000,`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("multivariant lacks %q:\n%s", want, got)
		}
	}
	live := string(multivariant(t, live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(time.Minute), manifest.Number)))
	if strings.Contains(live, "AVERAGE-BANDWIDTH") {
		t.Error("live multivariant has AVERAGE-BANDWIDTH, which would change with the window")
	}

	// Audio only: each audio track is a variant.
	p := vod(2*time.Second, 9*time.Second)
	p.Stream.Tracks = p.Stream.Tracks[2:]
	got = string(multivariant(t, p))
	if strings.Contains(got, "EXT-X-MEDIA:") || !strings.Contains(got, `#EXT-X-STREAM-INF:BANDWIDTH=128000,AVERAGE-BANDWIDTH=115197,CODECS="mp4a.40.2"`+"\na128/playlist.m3u8\n") {
		t.Errorf("audio-only multivariant:\n%s", got)
	}
}

func TestPlaylistFolders(t *testing.T) {
	for _, c := range []struct {
		format, media, init string
		wantInit, wantSeg   string
	}{
		{"%s/playlist.m3u8", manifest.AssetNumberTemplate, manifest.AssetInitTemplate, "init.mp4", "1.m4s"},
		{"%s.m3u8", manifest.AssetNumberTemplate, manifest.AssetInitTemplate, "v720/init.mp4", "v720/1.m4s"},
		{"hls/%s/index.m3u8", manifest.AssetNumberTemplate, manifest.AssetInitTemplate, "../../v720/init.mp4", "../../v720/1.m4s"},
		{"%s/playlist.m3u8", "seg/$RepresentationID$/$Number%05d$.m4s", "init/$RepresentationID$.mp4", "../init/v720.mp4", "../seg/v720/00001.m4s"},
		{"%s/playlist.m3u8", "https://cdn.example/$RepresentationID$/$Number$.m4s", "/abs/$RepresentationID$/init.mp4", "/abs/v720/init.mp4", "https://cdn.example/v720/1.m4s"},
	} {
		p := vod(2*time.Second, 9*time.Second)
		p.PlaylistFormat, p.MediaTemplate, p.InitTemplate = c.format, c.media, c.init
		pl := parse(t, mediaPlaylist(t, p, "v720"))
		if pl.tags["#EXT-X-MAP"] != `URI="`+c.wantInit+`"` || pl.uris[0] != c.wantSeg {
			t.Errorf("%s with %s: map %s, first URI %s; want %s, %s", c.format, c.media, pl.tags["#EXT-X-MAP"], pl.uris[0], c.wantInit, c.wantSeg)
		}
	}
}

func TestErrors(t *testing.T) {
	var b bytes.Buffer
	if err := RenderMedia(&b, vod(2*time.Second, 9*time.Second), "v1080"); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("unknown track: %v", err)
	}
	early := live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(time.Second), manifest.Number)
	if err := RenderMedia(&b, early, "v720"); !errors.Is(err, media.ErrNotYet) {
		t.Errorf("live before the first segment: %v", err)
	}
	p := vod(2*time.Second, 9*time.Second)
	p.PlaylistFormat = "%s/%d.m3u8"
	if err := RenderMultivariant(&b, p); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("bad playlist format: %v", err)
	}
	p = vod(2*time.Second, 9*time.Second)
	p.Stream.Tracks[2].Language = `en"`
	if err := RenderMultivariant(&b, p); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("quote in a quoted-string: %v", err)
	}
	if b.Len() != 0 {
		t.Errorf("wrote %q despite errors", b.String())
	}
}

func TestFormatSeconds(t *testing.T) {
	for _, c := range []struct {
		ticks uint64
		ts    uint32
		want  string
	}{
		{180000, 90000, "2.000"},
		{96256, 48000, "2.005333"},
		{95232, 48000, "1.984"},
		{1001, 30000, "0.033367"},
		{89999999, 90000, "999.999989"},
		{1, 48000, "0.000021"},
		{47999999, 48000000, "1.000"}, // rounds up into the next second
		{0, 48000, "0.000"},
	} {
		if got := formatSeconds(c.ticks, c.ts); got != c.want {
			t.Errorf("formatSeconds(%d, %d) = %s, want %s", c.ticks, c.ts, got, c.want)
		}
	}
}

func TestTargetDuration(t *testing.T) {
	tr := &media.Track{Timescale: 1000}
	seg := func(ms uint64) media.SegmentRef { return media.SegmentRef{Duration: ms} }
	for _, c := range []struct {
		nominal time.Duration
		segs    []media.SegmentRef
		want    uint64
	}{
		{2 * time.Second, []media.SegmentRef{seg(2000), seg(2005), seg(1984)}, 2}, // audio jitter: stays 2
		{2 * time.Second, []media.SegmentRef{seg(2600)}, 3},                       // a long GOP rounds up
		{2 * time.Second, []media.SegmentRef{seg(1000)}, 2},                       // short window: nominal holds
		{1500 * time.Millisecond, []media.SegmentRef{seg(1500)}, 2},
		{0, []media.SegmentRef{seg(400)}, 1},
	} {
		if got := targetDuration(tr, c.segs, c.nominal); got != c.want {
			t.Errorf("targetDuration(%v, %v) = %d, want %d", c.nominal, c.segs, got, c.want)
		}
	}
}

// A live window across an encoder restart has an EXT-X-DISCONTINUITY before the
// later period's first segment; once the earlier period has left the window,
// EXT-X-DISCONTINUITY-SEQUENCE counts it, so players keep their discontinuity count.
func TestLivePeriodDiscontinuity(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from       int // index in the window of the later period's first segment
		tags       int
		seqWritten string
	}{
		{"across", 3, 1, ""},
		{"after", 0, 0, "#EXT-X-DISCONTINUITY-SEQUENCE:1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := live(ast2025, 2*time.Second, 10*time.Second, ast2025.Add(60500*time.Millisecond), manifest.Number)
			for _, tr := range p.Stream.Tracks {
				for i := tc.from; i < len(p.Segments[tr.ID]); i++ {
					p.Segments[tr.ID][i].Period = 1
				}
			}
			for _, tr := range p.Stream.Tracks {
				pl := string(mediaPlaylist(t, p, tr.ID))
				if n := strings.Count(pl, "#EXT-X-DISCONTINUITY\n"); n != tc.tags {
					t.Errorf("%s: %d EXT-X-DISCONTINUITY, want %d:\n%s", tr.ID, n, tc.tags, pl)
				}
				if tc.seqWritten != "" && !strings.Contains(pl, tc.seqWritten) || tc.seqWritten == "" && strings.Contains(pl, "DISCONTINUITY-SEQUENCE") {
					t.Errorf("%s: discontinuity sequence, want %q:\n%s", tr.ID, tc.seqWritten, pl)
				}
				if tc.tags == 1 {
					// The tag stands right before the later period's first segment.
					i := strings.Index(pl, "#EXT-X-DISCONTINUITY\n")
					seg := p.Segments[tr.ID][tc.from]
					if next := pl[i:]; !strings.Contains(next[:strings.Index(next, ".m4s")+4], fmt.Sprintf("\n%d.m4s", seg.Number)) {
						t.Errorf("%s: the tag is not before segment %d:\n%s", tr.ID, seg.Number, pl)
					}
				}
			}
		})
	}
}
