package hls

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// fuzzURL is where the fuzzed playlists are "fetched" from.
const fuzzURL = root + "master.m3u8"

// playlistSeeds are real playlists: those internal/manifest/hls renders (its golden
// files, kept up to date by its tests), this package's fixtures, and hand-written
// edge cases of the syntax.
func playlistSeeds(f *testing.F) [][]byte {
	var names []string
	for _, pat := range []string{"../../manifest/hls/testdata/*/*.m3u8", "testdata/*.m3u8", "testdata/*/*.m3u8"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			f.Fatal(err)
		}
		names = append(names, m...)
	}
	if len(names) < 20 {
		f.Fatalf("only %d seed playlists found: %v", len(names), names)
	}
	var seeds [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, s := range []string{
		// CRLF, no version, a lone media playlist with a server-controlled hold back.
		"#EXTM3U\r\n#EXT-X-TARGETDURATION:4\r\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,HOLD-BACK=9.5\r\n#EXTINF:4,\r\n1.m4s\r\n",
		// Program date without a zone, then one with an offset; an EVENT playlist.
		"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-PROGRAM-DATE-TIME:2024-01-01T00:00:00.5\n#EXTINF:2.0,title\nhttp://other/a.m4s\n#EXT-X-PROGRAM-DATE-TIME:2024-01-01T01:00:02+01:00\n#EXTINF:1.5,\n../b.m4s?x=1#f\n",
		// A media sequence near the top of uint64, a map with a query.
		"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:18446744073709551614\n#EXT-X-MAP:URI=\"i.mp4?v=2\"\n#EXTINF:6,\ns1.m4s\n#EXTINF:6,\ns2.m4s\n#EXTINF:6,\ns3.m4s\n#EXT-X-ENDLIST\n",
		"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:100@0\na.m4s\n",
		"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"100@0\"\n",
		"#EXTM3U\n#EXT-X-TARGETDURATION:0.5\n#EXT-X-ENDLIST\n",
		// Multivariant: audio without a URI (muxed), an unterminated quote, duplicate IDs,
		// a variant without STREAM-INF, quoted commas.
		"#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"muxed\",DEFAULT=YES\n#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"s\",URI=\"s.m3u8\"\n#EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO=\"a\"\nx/playlist.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2,CODECS=\"avc1,mp4a\nx/index.m3u8\nstray.m3u8\n#EXT-X-STREAM-INF:RESOLUTION=1x\nhttps://cdn/x.m3u8\n",
		"#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=g,LANGUAGE=en,URI=a.m3u8\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=g,LANGUAGE=fr,DEFAULT=YES,URI=a-2.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=9,AUDIO=g\na.m3u8\n",
		"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\n#EXTINF:1,\nv.m3u8\n",
		"#EXTM3U\n#EXT-X-VERSION:7\n",
		"",
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// absolute checks that s is an absolute URL, as the player fetches it.
func absolute(t *testing.T, what, s string) {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		t.Fatalf("%s %q is not an absolute URL (%v)", what, s, err)
	}
}

func FuzzParseMultivariant(f *testing.F) {
	for _, s := range playlistSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		mv, err := ParseMultivariant(b, fuzzURL)
		if err != nil {
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
			}
			return
		}
		if mv == nil {
			return // a media playlist
		}
		if len(mv.Variants) == 0 {
			t.Fatal("a multivariant playlist without variants")
		}
		ids := map[string]bool{}
		for _, v := range mv.Variants {
			absolute(t, "variant URI", v.URI)
			if v.ID == "" || ids[v.ID] {
				t.Fatalf("variant ID %q empty or not unique", v.ID)
			}
			ids[v.ID] = true
			if a := mv.DefaultAudio(v.Audio); a != nil && (a.URI == "" || a.Group != v.Audio) {
				t.Fatalf("default audio %+v for group %q", a, v.Audio)
			}
		}
		for _, a := range mv.Audio {
			if a.URI == "" {
				continue
			}
			absolute(t, "rendition URI", a.URI)
			if a.ID == "" || ids[a.ID] {
				t.Fatalf("rendition ID %q empty or not unique", a.ID)
			}
			ids[a.ID] = true
		}
		// What parses, written out again, parses to the same playlist.
		doc, ok := renderMultivariant(mv)
		if !ok {
			return
		}
		mv2, err := ParseMultivariant(doc, fuzzURL)
		if err != nil || mv2 == nil {
			t.Fatalf("re-rendered playlist: %v, %v\n%s", mv2, err, doc)
		}
		if len(mv2.Variants) != len(mv.Variants) || len(mv2.Audio) != len(mv.Audio) {
			t.Fatalf("%d variants, %d renditions became %d, %d\n%s", len(mv.Variants), len(mv.Audio), len(mv2.Variants), len(mv2.Audio), doc)
		}
		for i, v := range mv.Variants {
			w := mv2.Variants[i]
			v.ID, w.ID = "", "" // IDs depend on the order of variants and renditions
			if v != w {
				t.Fatalf("variant %d: %+v became %+v\n%s", i, v, w, doc)
			}
		}
		for i, a := range mv.Audio {
			r := mv2.Audio[i]
			a.ID, r.ID = "", ""
			if a != r {
				t.Fatalf("rendition %d: %+v became %+v\n%s", i, a, r, doc)
			}
		}
	})
}

// renderMultivariant writes mv as a playlist; ok is false when a value cannot be
// written as a quoted attribute.
func renderMultivariant(mv *Multivariant) (doc []byte, ok bool) {
	var b strings.Builder
	b.WriteString("#EXTM3U\n")
	quotable := func(ss ...string) bool {
		for _, s := range ss {
			if strings.ContainsAny(s, "\"\n") {
				return false
			}
		}
		return true
	}
	for _, a := range mv.Audio {
		if !quotable(a.Group, a.Language, a.URI) {
			return nil, false
		}
		def := "NO"
		if a.Default {
			def = "YES"
		}
		fmt.Fprintf(&b, "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"%s\",LANGUAGE=\"%s\",DEFAULT=%s", a.Group, a.Language, def)
		if a.URI != "" {
			fmt.Fprintf(&b, ",URI=\"%s\"", a.URI)
		}
		b.WriteString("\n")
	}
	for _, v := range mv.Variants {
		if !quotable(v.Codecs, v.Audio, v.URI) {
			return nil, false
		}
		fmt.Fprintf(&b, "#EXT-X-STREAM-INF:BANDWIDTH=%d,CODECS=\"%s\",AUDIO=\"%s\"", v.Bandwidth, v.Codecs, v.Audio)
		if v.Width != 0 || v.Height != 0 {
			fmt.Fprintf(&b, ",RESOLUTION=%dx%d", v.Width, v.Height)
		}
		fmt.Fprintf(&b, "\n%s\n", v.URI)
	}
	return []byte(b.String()), true
}

func FuzzParseMedia(f *testing.F) {
	for _, s := range playlistSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		mp, err := ParseMedia(b, fuzzURL)
		if err != nil {
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
			}
			return
		}
		if mp == nil {
			t.Fatal("nil playlist without an error")
		}
		if mp.Map != "" {
			absolute(t, "EXT-X-MAP URI", mp.Map)
		}
		for _, s := range mp.Segments {
			absolute(t, "segment URI", s.URI)
			for _, pt := range s.Parts {
				absolute(t, "part URI", pt.URI)
			}
		}
		for _, pt := range mp.Tail {
			absolute(t, "part URI", pt.URI)
		}
		if len(mp.Reports) > maxReports {
			t.Fatalf("%d rendition reports kept, over the bound %d", len(mp.Reports), maxReports)
		}
		for _, r := range mp.Reports {
			absolute(t, "rendition report URI", r.URI)
		}
		if q := nextDirectives(mp); q != "" && !strings.HasPrefix(q, "_HLS_msn=") {
			t.Fatalf("blocking reload %q", q)
		}
		if !durationsInRange(b) {
			return // known: accepted, with durations that wrapped round (see durationsInRange)
		}
		if mp.TargetDuration <= 0 || mp.HoldBack < 0 {
			t.Fatalf("target duration %v, hold back %v", mp.TargetDuration, mp.HoldBack)
		}
		for i, s := range mp.Segments {
			if s.Duration < 0 {
				t.Fatalf("segment %d: duration %v", i, s.Duration)
			}
		}
		// What parses, written out again, parses to the same playlist.
		doc, ok := renderMedia(mp)
		if !ok {
			return
		}
		mp2, err := ParseMedia(doc, fuzzURL)
		if err != nil {
			t.Fatalf("re-rendered playlist: %v\n%s", err, doc)
		}
		if mp2.MediaSequence != mp.MediaSequence || mp2.Map != mp.Map || mp2.EndList != mp.EndList ||
			!near(mp2.TargetDuration, mp.TargetDuration) || !near(mp2.HoldBack, mp.HoldBack) || len(mp2.Segments) != len(mp.Segments) {
			t.Fatalf("%+v became %+v\n%s", *mp, *mp2, doc)
		}
		for i, s := range mp.Segments {
			r := mp2.Segments[i]
			if r.Sequence != s.Sequence || r.URI != s.URI || !near(r.Duration, s.Duration) || !r.ProgramDate.Equal(s.ProgramDate) {
				t.Fatalf("segment %d: %+v became %+v\n%s", i, s, r, doc)
			}
		}
	})
}

// durationsInRange reports whether every duration in the playlist (target, EXTINF,
// HOLD-BACK) and the sum of the EXTINF durations fit a time.Duration. ParseMedia does
// not check that yet: NaN, ±Inf or more than 2^63 ns (about 292 years) become
// garbage durations, negative ones included, instead of an error. The player then
// plays nothing rather than crashing or hanging, so the fuzz tests skip their
// duration checks on such input instead of failing on it.
func durationsInRange(b []byte) bool {
	const limit = float64(1 << 63) // ns
	sum := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		tag, val, _ := strings.Cut(strings.TrimSpace(line), ":")
		var v float64
		var err error
		switch tag {
		case "#EXT-X-TARGETDURATION":
			v, err = strconv.ParseFloat(val, 64)
		case "#EXTINF":
			d, _, _ := strings.Cut(val, ",")
			v, err = strconv.ParseFloat(strings.TrimSpace(d), 64)
			if err == nil {
				sum += v
			}
		case "#EXT-X-SERVER-CONTROL":
			v, err = strconv.ParseFloat(attrs(val)["HOLD-BACK"], 64)
		default:
			continue
		}
		if err == nil && !(v*1e9 < limit && sum*1e9 < limit) {
			return false
		}
	}
	return true
}

// near compares durations that went through a decimal number of seconds and a
// float64: exact to the nanosecond up to about 100 days, then to float precision.
func near(a, b time.Duration) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1+max(a, b)>>50
}

// seconds writes d as an exact decimal number of seconds.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%d.%09d", d/time.Second, d%time.Second)
}

// renderMedia writes mp as a media playlist, every segment with its own program date;
// ok is false when it cannot be written (a quote in the map URI, a date past 9999).
func renderMedia(mp *MediaPlaylist) (doc []byte, ok bool) {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-TARGETDURATION:" + seconds(mp.TargetDuration) + "\n")
	if mp.HoldBack > 0 {
		b.WriteString("#EXT-X-SERVER-CONTROL:HOLD-BACK=" + seconds(mp.HoldBack) + "\n")
	}
	if mp.Map != "" {
		if strings.Contains(mp.Map, `"`) {
			return nil, false
		}
		b.WriteString("#EXT-X-MAP:URI=\"" + mp.Map + "\"\n")
	}
	// A media sequence tag before the first segment, before each segment that does
	// not follow on from the one before, and at the end if the last tag differs.
	seq := mp.MediaSequence
	if len(mp.Segments) > 0 {
		seq = mp.Segments[0].Sequence
	}
	fmt.Fprintf(&b, "#EXT-X-MEDIA-SEQUENCE:%d\n", seq)
	tag := seq
	for _, s := range mp.Segments {
		if s.Sequence != seq {
			seq, tag = s.Sequence, s.Sequence
			fmt.Fprintf(&b, "#EXT-X-MEDIA-SEQUENCE:%d\n", seq)
		}
		seq++
		if !s.ProgramDate.IsZero() {
			if y := s.ProgramDate.Year(); y < 0 || y > 9999 {
				return nil, false
			}
			b.WriteString("#EXT-X-PROGRAM-DATE-TIME:" + s.ProgramDate.Format(time.RFC3339Nano) + "\n")
		}
		b.WriteString("#EXTINF:" + seconds(s.Duration) + ",\n" + s.URI + "\n")
	}
	if tag != mp.MediaSequence {
		fmt.Fprintf(&b, "#EXT-X-MEDIA-SEQUENCE:%d\n", mp.MediaSequence)
	}
	if mp.EndList {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	return []byte(b.String()), true
}

// FuzzLoad runs the loader on a body served for every URL (the multivariant
// playlist, and each media playlist it names), then walks the segment lists the
// player would.
func FuzzLoad(f *testing.F) {
	for _, s := range playlistSeeds(f) {
		f.Add(s)
	}
	now := time.Date(2025, 1, 1, 0, 1, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		fetch := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
			return &player.Response{Body: b, PayloadBytes: int64(len(b))}, nil
		})
		load := NewLoader()
		m, err := load(context.Background(), fetch, fuzzURL, now)
		if err == nil {
			_, _ = load(context.Background(), fetch, fuzzURL, now) // a reload: blocking, when it can
		}
		if err != nil {
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
			}
			return
		}
		if m.Validate() != nil {
			return
		}
		for _, s := range m.Sets {
			for _, r := range s.Representations {
				ix := r.Index
				if !m.Live && durationsInRange(b) {
					// Next searches the list by end position: it must not go down.
					for i := 1; i < len(ix.List); i++ {
						if ix.List[i].End() < ix.List[i-1].End() {
							t.Fatalf("on demand, segment %d ends at %v before segment %d at %v", i, ix.List[i].End(), i-1, ix.List[i-1].End())
						}
					}
				}
				seg, ok := ix.First()
				for n := 0; ok && n <= len(ix.List); n++ {
					seg, ok = ix.Next(seg.End())
				}
				ix.Last(now)
			}
		}
	})
}
