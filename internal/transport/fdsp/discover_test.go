package fdsp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestDiscover(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/streams" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"streams":[{"name":"demo","live":true,"fdsp":"fdsp://:9710/live/demo"},{"name":"demo","live":false,"fdsp":"fdsp://10.0.0.1:9710/vod/demo"},{"name":"plain","live":false}]}`))
	}))
	defer srv.Close()
	for path, want := range map[string]Endpoint{
		"/live/demo/manifest.mpd": {Addr: "127.0.0.1:9710", Stream: "live/demo"},
		"/vod/demo/master.m3u8":   {Addr: "10.0.0.1:9710", Stream: "vod/demo"},
	} {
		u, _ := url.Parse(srv.URL + path)
		got, err := Discover(context.Background(), u, srv.Client())
		if err != nil || got != want {
			t.Fatalf("%s: %+v %v, want %+v", path, got, err, want)
		}
	}
	for _, path := range []string{"/vod/plain/manifest.mpd", "/vod/none/manifest.mpd", "/api/streams"} {
		u, _ := url.Parse(srv.URL + path)
		if _, err := Discover(context.Background(), u, srv.Client()); err == nil {
			t.Fatalf("%s: no error", path)
		} else {
			t.Logf("%s: %v", path, err)
		}
	}
	u, _ := url.Parse("fdsp://example.org:9710/vod/x")
	if got, err := Discover(context.Background(), u, nil); err != nil || got.Addr != "example.org:9710" || got.Stream != "vod/x" {
		t.Fatalf("fdsp URL: %+v %v", got, err)
	}
}
