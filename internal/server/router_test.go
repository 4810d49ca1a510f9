package server

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// TestTrackRouterAnswersAsServeMux: every request answered by the track router's
// short cut gets exactly the answer ServeMux's routing gives (status, headers,
// body), including names another route claims, odd paths and other methods.
func TestTrackRouterAnswersAsServeMux(t *testing.T) {
	s, _ := testOrigin(t)
	// A route beside the track routes with a literal file name, as ParS registers.
	s.Handle("GET /vod/{stream}/{track}/index.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("index of " + r.PathValue("stream") + "/" + r.PathValue("track")))
	}))
	for _, tc := range []struct {
		method, target string
		wantStatus     int
	}{
		{"GET", "/vod/clip/v1/1.m4s", 200},
		{"GET", "/vod/clip/a1/2.m4s", 200},
		{"GET", "/vod/clip/v1/init.mp4", 200},
		{"GET", "/vod/clip/v1/playlist.m3u8", 200},
		{"GET", "/vod/clip/v1/t0.m4s", 200},
		{"GET", "/vod/clip/v1/9.m4s", 404},
		{"GET", "/vod/nope/v1/1.m4s", 404},
		{"GET", "/vod/clip/zz/1.m4s", 404},
		{"GET", "/vod/clip/v1/index.json", 200}, // the other route, not the segment handler
		{"GET", "/live/ch/v1/45.m4s", 200},
		{"GET", "/live/ch/v1/init.mp4", 200},
		{"GET", "/live/ch/v1/playlist.m3u8", 200},
		{"GET", "/live/nope/v1/45.m4s", 404},
		{"HEAD", "/vod/clip/v1/1.m4s", 200},
		{"POST", "/vod/clip/v1/1.m4s", 405},
		{"GET", "/vod/clip//1.m4s", 0},         // ServeMux cleans and redirects
		{"GET", "/vod/clip/v1/../v1/1.m4s", 0}, // whatever ServeMux says
		{"GET", "/vod/clip/v1/1.m4s/", 0},
		{"GET", "/vod/clip/v1/1.m4s/x", 0},
		{"GET", "/vod/cl%69p/v1/1.m4s", 0},
		{"GET", "/vod/clip/v1%2F1.m4s", 0},
		{"GET", "/vod/clip/manifest.mpd", 200},
		{"GET", "/other/clip/v1/1.m4s", 0},
	} {
		via := func(h http.Handler) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			return rec
		}
		got, want := via(&s.tracks), via(s.mux)
		if tc.wantStatus != 0 && want.Code != tc.wantStatus {
			t.Errorf("%s %s: ServeMux answered %d, the test expects %d", tc.method, tc.target, want.Code, tc.wantStatus)
		}
		if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
			t.Errorf("%s %s: router %d %v %q; ServeMux %d %v %q", tc.method, tc.target,
				got.Code, got.Header(), trim(got.Body.String()), want.Code, want.Header(), trim(want.Body.String()))
		}
	}
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// TestTrackRouterYieldsToWinningPatterns: patterns ServeMux would prefer for a track
// path send those requests back through it.
func TestTrackRouterYieldsToWinningPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern  string
		muxOnly  bool
		shadowed string
	}{
		{"GET /vod/{stream}/{track}/index.json", false, "index.json"},
		{"/live/{s}/{t}/special.m4s", false, "special.m4s"},
		{"GET /{kind}/{s}/{t}/x.json", false, "x.json"},
		{"GET /vod/special/{t}/{file}", true, ""},
		{"GET example.com/", true, ""},
		{"cdn.example/vod/{a}/{b}/{c}", true, ""},
		{"GET /vod/%61/{t}/x", true, ""},
		{"GET /ws/{channel}", false, ""},
		{"GET /ws/vod/{asset}", false, ""},
		{"POST /ingest/{channel}/{rest...}", false, ""},
		{"GET /vod/{a}/{b}/{c}/{d}", false, ""},
		{"GET /other/{a}/{b}/{c}", false, ""},
		{"GET /vod/{a}/{b}/", false, ""},
	} {
		var r trackRouter
		r.note(tc.pattern)
		if r.muxOnly != tc.muxOnly || (tc.shadowed != "") != r.shadowed[tc.shadowed] || len(r.shadowed) > 1 {
			t.Errorf("note(%q): muxOnly %v shadowed %v; want muxOnly %v shadowed %q", tc.pattern, r.muxOnly, r.shadowed, tc.muxOnly, tc.shadowed)
		}
	}
}

// A pattern that wins every track path (here a host-specific one) makes the router
// send everything through ServeMux.
func TestTrackRouterHostPattern(t *testing.T) {
	s, _ := testOrigin(t)
	s.Handle("GET other.example/vod/{a}/{b}/{c}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("host route"))
	}))
	req := httptest.NewRequest("GET", "http://other.example/vod/clip/v1/1.m4s", nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Body.String() != "host route" {
		t.Fatalf("GET with Host other.example: %d %q, want the host-specific route's answer", rec.Code, trim(rec.Body.String()))
	}
}

// FuzzTrackRouter: for any request path the track router answers exactly as
// ServeMux's routing does (status, headers, body), with a route beside the track
// routes that claims one file name.
func FuzzTrackRouter(f *testing.F) {
	s, _ := testOrigin(f)
	s.Handle("GET /vod/{stream}/{track}/index.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("index of " + r.PathValue("stream") + "/" + r.PathValue("track")))
	}))
	for _, seed := range []string{"/vod/clip/v1/1.m4s", "/live/ch/v1/45.m4s", "/vod/clip/v1/index.json",
		"/vod/clip//1.m4s", "/vod/clip/v1/../x", "/vod/a%2Fb/v1/1.m4s", "/live/ch/v1/init.mp4", "/vod/clip/v1/1.m4s/"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		req := func() *http.Request {
			r, err := http.NewRequest(http.MethodGet, "http://origin.example"+path, nil)
			if err != nil {
				return nil
			}
			return r
		}
		if req() == nil {
			t.Skip("not a request target net/http would parse")
		}
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		s.tracks.ServeHTTP(got, req())
		s.mux.ServeHTTP(want, req())
		if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
			t.Fatalf("GET %q: router %d %v %q; ServeMux %d %v %q", path, got.Code, got.Header(), trim(got.Body.String()), want.Code, want.Header(), trim(want.Body.String()))
		}
	})
}
