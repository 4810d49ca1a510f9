package h2push

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/testmedia"
)

// fuzzPusher is a Pusher over the test asset on demand as "test" and looped live as
// "loop", with a small player page, keeping its rules in memory.
func fuzzPusher(t testing.TB) *Pusher {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test") // the hub names an asset by its folder
	if err := os.Symlink(testmedia.Asset(t), dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	info := *a.Info()
	info.Name = "loop"
	inits := map[string][]byte{}
	for _, tr := range info.Tracks {
		inits[tr.ID], _ = a.Init(tr.ID)
	}
	c, err := hub.NewChannel(hub.ChannelConfig{Info: &info, Inits: inits, Timeline: media.Timeline{SegmentDuration: info.SegmentDuration}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddChannel(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	page := fstest.MapFS{
		"index.html":      {Data: []byte(`<!doctype html><link rel="stylesheet" href="app.css?v=1"><script src="app.js?v=1"></script><img src="img/logo.png">`)},
		"app.css":         {Data: []byte("body{}")},
		"app.js":          {Data: []byte("1")},
		"img/logo.png":    {Data: []byte("png")},
		"img/nested/x.js": {Data: []byte("2")},
	}
	p, err := New(Options{Hub: h, PageFS: page})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// resourcePaths are the paths the admin page offers for each target (Discover), what
// a person picks rules from.
func resourcePaths(t testing.TB, p *Pusher) map[string][]string {
	out := map[string][]string{}
	for _, target := range []string{PageTarget, "vod/test", "live/loop"} {
		res, err := p.Discover(target)
		if err != nil {
			t.Fatalf("Discover(%s): %v", target, err)
		}
		for _, r := range res {
			out[target] = append(out[target], r.Path)
		}
	}
	if len(out["vod/test"]) == 0 || len(out[PageTarget]) == 0 {
		t.Fatalf("discovered %v", out)
	}
	return out
}

func FuzzParsePath(f *testing.F) {
	p := fuzzPusher(f)
	for _, paths := range resourcePaths(f, p) {
		for _, s := range paths {
			f.Add(s)
		}
	}
	for _, s := range []string{"/", "/index.html", "/vod/test/manifest-timeline.mpd", "/live/loop/master.m3u8", "/vod/test/v180/playlist.m3u8",
		"/vod/test/v180/t0.m4s", "/live/loop/a64/18446744073709551615.m4s", "/vod/a/v1/t.m4s", "/vod/a/v1/+1.m4s", "/vod/a/v1/t+1.m4s",
		"/vod/a/v1/007.m4s", "/vod/a/../b/manifest.mpd", "/vod//manifest.mpd", "/vod/a/v1/1.m4s?x", "/api/streams", "/vod/.a/init.mp4", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r := layout.Parse(path)
		switch r.Kind {
		case layout.KindOther:
			if r != (layout.Resource{Kind: layout.KindOther}) {
				t.Fatalf("other, yet %+v", r)
			}
			return
		case layout.KindPage:
			if (path != "/" && path != "/index.html") || r != (layout.Resource{Kind: layout.KindPage, File: "index.html"}) {
				t.Fatalf("%q: page %+v", path, r)
			}
			return
		}
		// The names are safe to join into file paths, and put back together they
		// are the path: a clean path with nothing ParsePath ignored.
		for _, n := range []string{r.Stream, r.File} {
			if !media.ValidName(n) {
				t.Fatalf("%q: %+v has an invalid name", path, r)
			}
		}
		joined := r.Base() + r.File
		if r.Track != "" {
			if !media.ValidName(r.Track) {
				t.Fatalf("%q: %+v has an invalid track name", path, r)
			}
			joined = r.Base() + r.Track + "/" + r.File
		}
		if joined != path || !cleanPath(path) || r.StreamKey() != strings.Trim(r.Base(), "/") {
			t.Fatalf("%q: %+v joins to %q", path, r, joined)
		}
		switch r.Kind {
		case layout.KindManifest:
			if r.Track != "" {
				t.Fatalf("%q: manifest of a track: %+v", path, r)
			}
		case layout.KindInit, layout.KindPlaylist:
			if r.Track == "" {
				t.Fatalf("%q: %v without a track: %+v", path, r.Kind, r)
			}
		case layout.KindSegment:
			// The canonical name of the segment names the same segment.
			name := strconv.FormatUint(r.Number, 10) + ".m4s"
			if r.ByTime {
				name = "t" + strconv.FormatUint(r.Time, 10) + ".m4s"
			}
			c := layout.Parse(r.Base() + r.Track + "/" + name)
			c.File = r.File
			if c != r || r.Track == "" || (r.ByTime && r.Number != 0) || (!r.ByTime && r.Time != 0) {
				t.Fatalf("%q: %+v; its canonical name %s gives %+v", path, r, name, c)
			}
		default:
			t.Fatalf("%q: kind %v", path, r.Kind)
		}
	})
}

func FuzzParseStrategy(f *testing.F) {
	for _, s := range []string{"none", "all", "init", "init-first", "audio", "k1", "k2", "k5", "k10", "k100", " K5 ", "ALL",
		"k0", "k101", "k", "k-3", "k+3", "k05", "kk5", "first", "", "k9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStrategy(s)
		if err != nil {
			if st != (Strategy{}) {
				t.Fatalf("%q: error %v with %+v", s, err, st)
			}
			return
		}
		switch st.Mode {
		case None, All, Init, InitFirst, Audio:
			if st.K != 0 {
				t.Fatalf("%q: %+v", s, st)
			}
		case KPush:
			if st.K < 1 || st.K > maxK {
				t.Fatalf("%q: %+v", s, st)
			}
		default:
			t.Fatalf("%q: mode %q", s, st.Mode)
		}
		// Its name parses to it, also as JSON (config files, push rules).
		if again, err := ParseStrategy(st.String()); err != nil || again != st {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, st, st.String(), again, err)
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back Strategy
		if err := json.Unmarshal(b, &back); err != nil || back != st {
			t.Fatalf("%q → %+v → %s → %+v, %v", s, st, b, back, err)
		}
	})
}

// ruleSeeds are rules documents as a person builds them on the admin page (from the
// discovered resources), the file the store writes, and ones the API must refuse.
func ruleSeeds(t testing.TB, p *Pusher) (docs [][]byte, rules []string) {
	res := resourcePaths(t, p)
	rs := &Rules{Version: 1, Targets: map[string]*Rule{
		PageTarget:  {Push: append(slices.Clone(res[PageTarget]), "/vod/test/manifest.mpd")},
		"vod/test":  {Strategy: &Strategy{Mode: KPush, K: 2}, Push: res["vod/test"]},
		"live/loop": {Strategy: &Strategy{Mode: All}, Push: []string{"/live/loop/manifest.mpd", "/live/loop/v180/init.mp4"}},
	}}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, b, []byte(`{"targets":{}}`), []byte(`{"version":1,"targets":{"vod/test":{}}}`),
		[]byte(`{"version":2,"targets":{}}`), []byte(`{"targets":{"vod/test":null}}`), []byte(`{"targets":{"x":{}},"more":1}`), []byte(`null`), []byte(``))
	rules = []string{
		`{"push":["/vod/test/a64/init.mp4","/vod/test/v360/init.mp4"]}`, `{"strategy":"k2"}`, `{"push":["/vod/test/manifest.mpd"]}`,
		`{"push":["/vod/test/v180/99.m4s"]}`, `{"push":["/vod/test/v999/init.mp4"]}`, `{"push":["/vod/other/a64/init.mp4"]}`,
		`{"push":["/vod/test/../../etc/passwd"]}`, `{"push":["/etc/passwd"]}`, `{"strategy":"k0"}`, `{"strategy":"all","extra":1}`,
		`{"push":["/live/loop/v180/5.m4s"]}`, `{"push":["/missing.js"]}`, `{"push":["/app.js?v=1","/img/logo.png"]}`, `{"strategy":"init"}`, `{}`,
	}
	return docs, rules
}

// putRules calls the admin API as the page does (the token check is before it).
func putRules(p *Pusher, target string, body []byte) *httptest.ResponseRecorder {
	u := "/admin/push/api/rules"
	if target != "" {
		u = "/admin/push/api/rule?" + url.Values{"target": {target}}.Encode()
	}
	w := httptest.NewRecorder()
	p.serveAPI(w, httptest.NewRequest(http.MethodPut, u, bytes.NewReader(body)))
	return w
}

// checkSaved checks the rules in force after a save the API accepted: they are what
// it answered, every pushed path is a clean path of its own target, and they
// survive a restart: written to the file and read back, each rule still passes
// validation (New drops those that do not) and they are written the same.
func checkSaved(t *testing.T, p *Pusher, answer []byte) {
	t.Helper()
	rs := p.Rules()
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(answer), b) {
		t.Fatalf("answered %s, in force %s", answer, b)
	}
	for target, r := range rs.Targets {
		for _, path := range r.Push {
			if target == PageTarget {
				// A file of the page, with any query (not checked: it may hold '#', '>'
				// or control characters), or a resource of a stream.
				name, _, _ := strings.Cut(path, "?")
				res := layout.Parse(path)
				if !cleanPath(name) || (!p.page.hasFile(path) && (res.Kind == layout.KindOther || res.Kind == layout.KindPage)) {
					t.Fatalf("%s pushes %q", target, path)
				}
				continue
			}
			res := layout.Parse(path)
			if res.StreamKey() != target || res.Kind == layout.KindOther || res.Kind == layout.KindPage {
				t.Fatalf("%s pushes %q (%+v)", target, path, res)
			}
		}
	}
	again, err := decodeRules(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("saved rules do not read back: %v\n%s", err, b)
	}
	for target, r := range again.Targets {
		if err := p.validate(&Rules{Version: 1, Targets: map[string]*Rule{target: r}}); err != nil {
			t.Fatalf("saved rule of %s would be dropped at restart: %v", target, err)
		}
	}
	b2, _ := json.MarshalIndent(again, "", "  ")
	if !bytes.Equal(b, b2) {
		t.Fatalf("saved %s, read back %s", b, b2)
	}
}

// FuzzPutRules sends a rules document to PUT /admin/push/api/rules.
func FuzzPutRules(f *testing.F) {
	p := fuzzPusher(f)
	docs, _ := ruleSeeds(f, p)
	for _, d := range docs {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p.rules.cur.Store(emptyRules())
		w := putRules(p, "", b)
		switch w.Code {
		case http.StatusOK:
			checkSaved(t, p, w.Body.Bytes())
		case http.StatusBadRequest:
			if n := len(p.Rules().Targets); n != 0 {
				t.Fatalf("refused, yet %d targets in force", n)
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}

// FuzzPutRule sends one target's rule to PUT /admin/push/api/rule?target=, on top of
// rules already in force.
func FuzzPutRule(f *testing.F) {
	p := fuzzPusher(f)
	docs, rules := ruleSeeds(f, p)
	for _, target := range []string{"vod/test", "live/loop", PageTarget, "vod/nope", "nonsense", "vod/../test"} {
		for _, r := range rules {
			f.Add(target, []byte(r))
		}
	}
	base, err := decodeRules(bytes.NewReader(docs[0]))
	if err != nil {
		f.Fatal(err)
	}
	if err := p.validate(base); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string, b []byte) {
		if target == "" {
			return // the rules route: FuzzPutRules
		}
		p.rules.cur.Store(base)
		w := putRules(p, target, b)
		switch w.Code {
		case http.StatusOK:
			if _, ok := p.Rules().Targets[target]; !ok {
				t.Fatalf("saved, yet no rule for %q", target)
			}
			checkSaved(t, p, w.Body.Bytes())
		case http.StatusBadRequest:
			if p.Rules() != base {
				t.Fatal("refused, yet the rules in force changed")
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
