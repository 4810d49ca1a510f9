package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/streambed/streambed/internal/media"
)

// ffmpegMPD is the MPD FFmpeg 5.1's dash muxer PUTs with
// -init_seg_name '$RepresentationID$/init.m4s'
// -media_seg_name '$RepresentationID$/seg-$Number%05d$.m4s' (shortened).
const ffmpegMPD = `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="urn:mpeg:dash:schema:mpd:2011"
	profiles="urn:mpeg:dash:profile:isoff-live:2011" type="dynamic" minimumUpdatePeriod="PT0S"
	availabilityStartTime="2026-11-24T09:36:18.639Z" minBufferTime="PT0.0S">
	<Period id="0" start="PT0.0S">
		<AdaptationSet id="0" contentType="video" startWithSAP="1" segmentAlignment="true">
			<Representation id="0" mimeType="video/mp4" codecs="avc1.42c00d" bandwidth="300000" width="320" height="180">
				<SegmentTemplate timescale="12800" initialization="$RepresentationID$/init.m4s" media="$RepresentationID$/seg-$Number%05d$.m4s" startNumber="1">
					<SegmentTimeline></SegmentTimeline>
				</SegmentTemplate>
			</Representation>
		</AdaptationSet>
		<AdaptationSet id="1" contentType="audio" startWithSAP="1" segmentAlignment="true">
			<Representation id="1" mimeType="audio/mp4" codecs="mp4a.40.2" bandwidth="64000" audioSamplingRate="48000">
				<SegmentTemplate timescale="48000" initialization="$RepresentationID$/init.m4s" media="$RepresentationID$/seg-$Number%05d$.m4s" startNumber="1">
					<SegmentTimeline><S t="0" d="95232" /></SegmentTimeline>
				</SegmentTemplate>
			</Representation>
		</AdaptationSet>
	</Period>
</MPD>`

// ladderMPD has its templates at AdaptationSet level, uses $Bandwidth$ and $Time$,
// and a BaseURL per AdaptationSet.
const ladderMPD = `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic">
  <Period>
    <AdaptationSet mimeType="video/mp4">
      <BaseURL>video/</BaseURL>
      <SegmentTemplate initialization="video_$Bandwidth$_init.mp4" media="video_$Bandwidth$_$Time$.m4s"/>
      <Representation id="v720" bandwidth="2000000"/>
      <Representation id="v360" bandwidth="600000"/>
    </AdaptationSet>
    <AdaptationSet mimeType="audio/mp4">
      <SegmentTemplate initialization="audio/$RepresentationID$/init.mp4" media="audio/$RepresentationID$/$Number%03d$.cmfa"/>
      <Representation id="aac" bandwidth="128000">
        <SegmentTemplate media="audio/$RepresentationID$/$$$Number%03d$.cmfa"/>
      </Representation>
      <Representation id="aac.low" bandwidth="64000"/>
    </AdaptationSet>
  </Period>
</MPD>`

func mustTemplates(t *testing.T, mpdPath, mpd string) *templateMatcher {
	t.Helper()
	tm, err := parseMPDTemplates("ch", mpdPath, []byte(mpd))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestTemplateMatch(t *testing.T) {
	ffmpeg := mustTemplates(t, "manifest.mpd", ffmpegMPD)
	ladder := mustTemplates(t, "manifest.mpd", ladderMPD)
	sub := mustTemplates(t, "live/out/manifest.mpd", ffmpegMPD) // templates relative to the MPD's folder
	long := strings.Repeat("9", 1<<16)
	for _, tc := range []struct {
		name string
		tm   *templateMatcher
		path string
		rep  string // "" for no match
	}{
		{"ffmpeg init", ffmpeg, "0/init.m4s", "0"},
		{"ffmpeg segment", ffmpeg, "1/seg-00042.m4s", "1"},
		{"width is a minimum", ffmpeg, "0/seg-1234567.m4s", "0"},
		{"narrower than the width", ffmpeg, "0/seg-0042.m4s", ""},
		{"not digits", ffmpeg, "0/seg-0004x.m4s", ""},
		{"unknown representation", ffmpeg, "2/init.m4s", ""},
		{"anchored at the start", ffmpeg, "x/0/init.m4s", ""},
		{"anchored at the end", ffmpeg, "0/init.m4s.tmp", ""},
		{"MPD in a folder", sub, "live/out/0/seg-00001.m4s", "0"},
		{"MPD in a folder, path outside it", sub, "0/seg-00001.m4s", ""},
		{"$Bandwidth$ and BaseURL", ladder, "video/video_600000_init.mp4", "v360"},
		{"$Time$", ladder, "video/video_2000000_1764000000000.m4s", "v720"},
		{"$Time$ beyond a uint64", ladder, "video/video_2000000_123456789012345678901.m4s", ""},
		{"BaseURL is not the AdaptationSet's", ladder, "video_2000000_0.m4s", ""},
		{"a representation's own template over its set's", ladder, "audio/aac/$007.cmfa", "aac"},
		{"the set's template without $$", ladder, "audio/aac/007.cmfa", ""},
		{"a dot in the id is literal", ladder, "audio/aac.low/001.cmfa", "aac.low"},
		{"not any character", ladder, "audio/aacxlow/001.cmfa", ""},
		{"init at set level", ladder, "audio/aac.low/init.mp4", "aac.low"},
		{"empty path", ffmpeg, "", ""},
		{"hostile: long digits", ffmpeg, "0/seg-" + long + ".m4s", ""},
		{"hostile: invalid UTF-8", ffmpeg, "0/seg-\xff\xfe.m4s", ""},
		{"hostile: regexp syntax", ffmpeg, "0/seg-[0-9]+.m4s", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, ok, err := tc.tm.match(tc.path)
			if err != nil || ok != (tc.rep != "") || rep != tc.rep {
				t.Errorf("match(%.80q) = %q %v %v, want %q", tc.path, rep, ok, err, tc.rep)
			}
		})
	}
}

func TestTemplateMatchErrors(t *testing.T) {
	rep := func(id, bw, tmpl string) string {
		return fmt.Sprintf(`<Representation id=%q bandwidth=%q><SegmentTemplate media=%q/></Representation>`, id, bw, tmpl)
	}
	mpd := func(reps ...string) string {
		return `<MPD><Period><AdaptationSet>` + strings.Join(reps, "") + `</AdaptationSet></Period></MPD>`
	}
	for _, tc := range []struct {
		name, mpd, path, says string
	}{
		{"two representations, one template", mpd(rep("a", "1", "seg-$Number$.m4s"), rep("b", "2", "seg-$Number$.m4s")), "seg-1.m4s", `Representations "a"`},
		{"an id that is no track name", mpd(rep("video 1", "1", "$RepresentationID$/$Number$.m4s")), "video 1/1.m4s", "cannot name a track"},
		{"an id with a slash", mpd(rep("../x", "1", "$RepresentationID$-$Number$.m4s")), "../x-1.m4s", "cannot name a track"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := mustTemplates(t, "manifest.mpd", tc.mpd)
			_, ok, err := tm.match(tc.path)
			if ok || !errors.Is(err, media.ErrBadRequest) || !strings.Contains(fmt.Sprint(err), tc.says) {
				t.Errorf("match(%q) = %v %v, want a bad request saying %q", tc.path, ok, err, tc.says)
			}
		})
	}
}

func TestParseMPDTemplates(t *testing.T) {
	set := func(inner string) string {
		return `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><Period><AdaptationSet>` + inner + `</AdaptationSet></Period></MPD>`
	}
	for _, tc := range []struct {
		name    string
		mpdPath string
		mpd     string
		want    []string // rep=template, in order
		says    string   // the error's reason, if it fails
	}{
		{"ffmpeg", "manifest.mpd", ffmpegMPD, []string{"0=$RepresentationID$/init.m4s", "0=$RepresentationID$/seg-$Number%05d$.m4s", "1=$RepresentationID$/init.m4s", "1=$RepresentationID$/seg-$Number%05d$.m4s"}, ""},
		{"no templates", "manifest.mpd", set(`<Representation id="v"><SegmentBase/></Representation>`), nil, ""},
		{"period-level template", "m.mpd", `<MPD><Period><SegmentTemplate media="p/$RepresentationID$/$Number$.m4s"/><AdaptationSet><Representation id="v"/></AdaptationSet></Period></MPD>`, []string{"v=p/$RepresentationID$/$Number$.m4s"}, ""},
		{"MPD-level BaseURL, dot segments", "a/b/m.mpd", `<MPD><BaseURL>../c/./</BaseURL><Period><AdaptationSet><Representation id="v"><SegmentTemplate media="$Number$.m4s"/></Representation></AdaptationSet></Period></MPD>`, []string{"v=a/c/$Number$.m4s"}, ""},
		{"BaseURL without a slash is a file", "m.mpd", set(`<BaseURL>video</BaseURL><Representation id="v"><SegmentTemplate media="$Number$.m4s"/></Representation>`), []string{"v=$Number$.m4s"}, ""},
		{"absolute BaseURL under the channel", "m.mpd", set(`<BaseURL>https://origin.example/ingest/ch/v/</BaseURL><Representation id="v"><SegmentTemplate media="$Number$.m4s"/></Representation>`), []string{"v=v/$Number$.m4s"}, ""},
		{"absolute template path", "sub/m.mpd", set(`<Representation id="v"><SegmentTemplate media="/ingest/ch/x/$Number$.m4s"/></Representation>`), []string{"v=x/$Number$.m4s"}, ""},

		{"not XML", "m.mpd", "#EXTM3U\n", nil, "not an MPD"},
		{"another root", "m.mpd", "<html></html>", nil, "not an MPD"},
		{"cut short", "m.mpd", ffmpegMPD[:len(ffmpegMPD)/2], nil, "not an MPD"},
		{"unknown identifier", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$Foo$.m4s"/></Representation>`), nil, "unknown identifier"},
		{"unclosed $", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$Number.m4s"/></Representation>`), nil, "closing $"},
		{"bad width", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$Number%5d$.m4s"/></Representation>`), nil, "format tag"},
		{"too wide", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$Number%021d$.m4s"/></Representation>`), nil, "format tag"},
		{"width on the id", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$RepresentationID%02d$.m4s"/></Representation>`), nil, "no format tag"},
		{"$Bandwidth$ without a bandwidth", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$Bandwidth$/$Number$.m4s"/></Representation>`), nil, "Representation@bandwidth"},
		{"no id", "m.mpd", set(`<Representation><SegmentTemplate media="$Number$.m4s"/></Representation>`), nil, "without an id"},
		{"climbs out", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="../other/$Number$.m4s"/></Representation>`), nil, "climbs above"},
		{"another channel", "m.mpd", set(`<BaseURL>/ingest/other/</BaseURL><Representation id="v"><SegmentTemplate media="$Number$.m4s"/></Representation>`), nil, "not under /ingest/ch/"},
		{"another scheme", "m.mpd", set(`<BaseURL>ftp://x/ingest/ch/</BaseURL><Representation id="v"/>`), nil, "only http"},
		{"a query", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="$Number$.m4s?x=1"/></Representation>`), nil, "query"},
		{"too many representations", "m.mpd", set(strings.Repeat(`<Representation id="v"/>`, maxRepresentations+1)), nil, "Representations"},
		{"a long template", "m.mpd", set(`<Representation id="v"><SegmentTemplate media="` + strings.Repeat("a", maxTemplateBytes+1) + `"/></Representation>`), nil, "over 1024 bytes"},
		{"over 1 MiB", "m.mpd", set(strings.Repeat(" ", maxMPDBytes)), nil, "over 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := parseMPDTemplates("ch", tc.mpdPath, []byte(tc.mpd))
			if tc.says != "" {
				if !errors.Is(err, media.ErrBadRequest) || !strings.Contains(fmt.Sprint(err), tc.says) {
					t.Errorf("got %v, want a bad request saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range tm.routes {
				got = append(got, r.rep+"="+r.template)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("templates %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIngestTrack(t *testing.T) {
	ffmpegDefault := mustTemplates(t, "manifest.mpd", `<MPD><Period><AdaptationSet><Representation id="0">
		<SegmentTemplate initialization="init-stream$RepresentationID$.m4s" media="chunk-stream$RepresentationID$-$Number%05d$.m4s"/>
		</Representation></AdaptationSet></Period></MPD>`)
	ladder := mustTemplates(t, "manifest.mpd", ladderMPD)
	for _, tc := range []struct {
		name     string
		tm       *templateMatcher
		path     string
		id       string
		kind     media.Kind
		manifest bool
		status   int // of the error; 0: none
	}{
		{"Streams()", nil, "Streams(v.cmfv)", "v", media.Video, false, 0},
		{"Streams() with an MPD", ladder, "Streams(a.cmfa)", "a", media.Audio, false, 0},
		{"FFmpeg's default name", nil, "chunk-stream1-00042.m4s", "stream1", "", false, 0},
		{"FFmpeg's default name over its MPD's template", ffmpegDefault, "init-stream0.m4s", "stream0", "", false, 0},
		{"MPD", nil, "manifest.mpd", "", "", true, 0},
		{"MPD in a folder", nil, "a/b/manifest.mpd", "", "", true, 0},
		{"playlist", nil, "master.m3u8", "", "", true, 0},
		{"template", ladder, "video/video_600000_init.mp4", "v360", "", false, 0},
		{"first folder before the MPD", nil, "v720/init.m4s", "v720", "", false, 0},
		{"first folder, deeper", nil, "v720/a/b/00001.cmfv", "v720", "", false, 0},
		{"first folder when no template fits", ladder, "v720/seg-1.cmfm", "v720", "", false, 0},
		{"first folder, not a track name", nil, ".v/init.m4s", "", "", false, 400},
		{"template before the MPD", nil, "video/video_600000_init.mp4", "video", "", false, 0},
		{"a file at the top", nil, "video.mp4", "", "", false, 404},
		{"not a segment file", nil, "v720/init.txt", "", "", false, 404},
		{"a folder", nil, "v720/", "", "", false, 404},
		{"only an extension", nil, "v720/.m4s", "", "", false, 404},
		{"only an extension, deeper", nil, "v720/a/.m4s", "", "", false, 404},
		{"empty", ladder, "", "", "", false, 404},
		{"bad Streams()", nil, "Streams(v.mp4)", "", "", false, 404},
		{"bad Streams() name", nil, "Streams(a/b.cmfv)", "", "", false, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, kind, manifest, err := ingestTrack(tc.path, tc.tm)
			status := 0
			if err != nil {
				status = statusOf(err)
			}
			if id != tc.id || kind != tc.kind || manifest != tc.manifest || status != tc.status {
				t.Errorf("ingestTrack(%q) = %q %q %v %v (%d)", tc.path, id, kind, manifest, err, status)
			}
			if status == 404 && !strings.HasPrefix(tc.path, "Streams(") && !strings.Contains(err.Error(), "Streams({track}.cmfv|.cmfa)") {
				t.Errorf("the 404 does not say which forms are accepted: %v", err)
			}
		})
	}
}

// expandTemplate names the file of segment n (number or time) of a Representation
// as an encoder would: the inverse of templatePattern, written apart from it.
var templateIdent = regexp.MustCompile(`\$(RepresentationID|Number|Time|SubNumber|Bandwidth)(%0([0-9]+)d)?\$|\$\$`)

func expandTemplate(template, rep string, bandwidth, n uint64) string {
	return templateIdent.ReplaceAllStringFunc(template, func(s string) string {
		m := templateIdent.FindStringSubmatch(s)
		width, _ := strconv.Atoi(m[3])
		switch m[1] {
		case "":
			return "$"
		case "RepresentationID":
			return rep
		case "Bandwidth":
			return fmt.Sprintf("%0*d", width, bandwidth)
		}
		return fmt.Sprintf("%0*d", width, n)
	})
}

// Templates come from an encoder's MPD: any template gives a pattern or an error,
// and a pattern matches the names the template gives.
func FuzzTemplatePattern(f *testing.F) {
	for _, s := range []string{"$RepresentationID$/seg-$Number%05d$.m4s", "video_$Bandwidth$_$Time$.m4s", "$$$Number$$$", "a.b*c+[d]/$Time%020d$", "$Bandwidth%09d$/$SubNumber$", "$Number", "$Foo$"} {
		f.Add(s, "v1.2", uint64(300000), uint64(42))
	}
	f.Fuzz(func(t *testing.T, template, rep string, bandwidth, n uint64) {
		if !utf8.ValidString(template) || !utf8.ValidString(rep) || len(template) > maxTemplateBytes {
			return // XML gives valid UTF-8; the length is checked before
		}
		pattern, err := templatePattern(template, rep, strconv.FormatUint(bandwidth, 10))
		if err != nil {
			return
		}
		re, err := regexp.Compile("^" + pattern + "$")
		if err != nil {
			t.Fatalf("template %q: pattern %q: %v", template, pattern, err)
		}
		if name := expandTemplate(template, rep, bandwidth, n); !re.MatchString(name) {
			t.Fatalf("template %q: pattern %q does not match %q", template, pattern, name)
		}
	})
}

// An encoder's MPD and its request paths come from outside: any MPD gives a matcher
// or an error, and any path then gives a track with a valid name, a manifest, or an
// error.
func FuzzMPDTemplates(f *testing.F) {
	for _, s := range [][2]string{
		{ffmpegMPD, "0/seg-00001.m4s"},
		{ladderMPD, "video/video_600000_0.m4s"},
		{ladderMPD, "audio/aac/$001.cmfa"},
		{`<MPD><Period><AdaptationSet><Representation id="a b"><SegmentTemplate media="$RepresentationID$$$.m4s"/></Representation></AdaptationSet></Period></MPD>`, "a b$.m4s"},
		{"<MPD>", "x/y.m4s"},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, mpd []byte, path string) {
		tm, err := parseMPDTemplates("ch", "in/manifest.mpd", mpd)
		if err != nil {
			if !errors.Is(err, media.ErrBadRequest) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		id, _, manifest, err := ingestTrack(path, tm)
		if err == nil && !manifest && !media.ValidName(id) {
			t.Fatalf("%q gave track %q", path, id)
		}
	})
}

// TestIngestSegmentTemplatePaths: the per-segment form with the encoder's own
// SegmentTemplate names. The MPD it sends maps its files to Representations, whose
// ids name the tracks; a malformed MPD is refused and leaves the templates of the
// one before; FFmpeg's default names still name their own tracks; a path nothing maps
// is a 404 that lists the forms.
func TestIngestSegmentTemplatePaths(t *testing.T) {
	o := newOrigin(t, Config{})
	const mpd = `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><Period><AdaptationSet mimeType="video/mp4">
		<SegmentTemplate initialization="video_$Bandwidth$_init.mp4" media="video_$Bandwidth$_$Time$.m4s"/>
		<Representation id="v720" bandwidth="2000000"/>
		<Representation id="v 360" bandwidth="600000"/>
	</AdaptationSet></Period></MPD>`
	seg0 := concat(styp(false), videoChunk(t, 0, 50, true))
	seg1 := concat(styp(false), videoChunk(t, 50, 50, true))
	for _, step := range []struct {
		path string
		body []byte
		want int
		says string
	}{
		{"/ingest/ch/video_2000000_init.mp4", videoHeader(t, 0), 404, "SegmentTemplate"}, // before the MPD: nothing maps it
		{"/ingest/ch/out/manifest.mpd", nil, 400, "not under /ingest/ch/"},               // its BaseURL points at another channel (below)
		{"/ingest/ch/manifest.mpd", []byte(mpd), 200, ""},
		{"/ingest/ch/video_2000000_init.mp4", videoHeader(t, 0), 200, ""},
		{"/ingest/ch/video_2000000_0.m4s", seg0, 200, ""},
		{"/ingest/ch/manifest.mpd", []byte(mpd[:100]), 400, "not an MPD"},
		{"/ingest/ch/manifest.mpd", bytes.Repeat([]byte(" "), maxMPDBytes+1), 413, "over 1048576 bytes"},
		{"/ingest/ch/video_2000000_25600.m4s", seg1, 200, ""}, // the templates of the good MPD stay
		{"/ingest/ch/video_600000_init.mp4", videoHeader(t, 0), 400, `Representation id "v 360" cannot name a track`},
		{"/ingest/ch/init-stream0.m4s", videoHeader(t, 0), 200, ""},
		{"/ingest/ch/v720.m4s", seg0, 404, "Streams({track}.cmfv|.cmfa)"},
	} {
		body := step.body
		if step.path == "/ingest/ch/out/manifest.mpd" {
			body = []byte(strings.Replace(mpd, "<Period>", "<BaseURL>/ingest/other/</BaseURL><Period>", 1))
		}
		status, answer := o.post(t, step.path, bytes.NewReader(body))
		if status != step.want || !strings.Contains(answer, step.says) {
			t.Errorf("%s: %d %q, want %d saying %q", step.path, status, answer, step.want, step.says)
		}
	}
	var ids []string
	for _, tr := range o.ch.Info().Tracks {
		ids = append(ids, tr.ID)
	}
	if sort.Strings(ids); strings.Join(ids, " ") != "stream0 v720" {
		t.Errorf("tracks %q, want v720 (from the template) and stream0 (FFmpeg's default name)", ids)
	}
	for i, want := range [][]byte{seg0, seg1} {
		if status, b := o.get(t, fmt.Sprintf("/live/ch/v720/%d.m4s", i)); status != 200 || !bytes.Equal(b, want) {
			t.Errorf("segment %d: %d, %d bytes, want %d", i, status, len(b), len(want))
		}
	}
}

// An encoder that PUTs its init segment and its first media segment at once (FFmpeg's
// dash muxer may, on separate connections): the media request comes while the init
// request is still sending the header; it waits for that header instead of failing
// with "media before the CMAF header" (seen once in CI under load).
func TestMediaSegmentWhileItsInitIsArriving(t *testing.T) {
	o := newOrigin(t, Config{})
	init := videoHeader(t, 0)
	pr, pw := io.Pipe()
	initDone := make(chan int, 1)
	go func() {
		status, _ := o.post(t, "/ingest/ch/init-stream0.m4s", pr)
		initDone <- status
	}()
	// The init request is on the track (its first byte sent), its header not yet whole.
	if _, err := pw.Write(init[:8]); err != nil {
		t.Fatal(err)
	}
	waitUntil := time.Now().Add(5 * time.Second)
	for {
		ch, err := o.in.channel("ch")
		if err == nil {
			ch.mu.Lock()
			ts := ch.tracks["stream0"]
			n := 0
			if ts != nil {
				n = ts.sessions
			}
			ch.mu.Unlock()
			if n == 1 {
				break
			}
		}
		if time.Now().After(waitUntil) {
			t.Fatal("the init request never reached the track")
		}
		time.Sleep(5 * time.Millisecond)
	}
	segDone := make(chan int, 1)
	var segAnswer string
	go func() {
		status, answer := o.post(t, "/ingest/ch/chunk-stream0-00001.m4s", bytes.NewReader(concat(styp(false), videoChunk(t, 0, 50, true))))
		segAnswer = answer
		segDone <- status
	}()
	select {
	case status := <-segDone:
		t.Fatalf("the media request was answered (%d %s) before the header it needs had arrived", status, segAnswer)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := pw.Write(init[8:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if status := <-initDone; status != 200 {
		t.Fatalf("init: %d", status)
	}
	if status := <-segDone; status != 200 {
		t.Fatalf("media segment sent while its init arrived: %d %s", status, segAnswer)
	}
}
