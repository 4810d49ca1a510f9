package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRequestCountsByKindAndStatus: every answer is counted once under its kind and
// status, the 200s (kept in their own slot) as the others, and only the statuses
// answered have a series.
func TestRequestCountsByKindAndStatus(t *testing.T) {
	s, _ := testOrigin(t)
	h := s.Handler()
	for _, tc := range []struct {
		path string
		n    int
	}{
		{"/vod/clip/v1/1.m4s", 3},
		{"/vod/clip/v1/9.m4s", 2},
		{"/vod/clip/v1/init.mp4", 1},
		{"/vod/clip/manifest.mpd", 1},
	} {
		for range tc.n {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		}
	}
	got := map[string]float64{}
	fams, err := s.metrics.reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != "streambed_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var kind, status string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "kind":
					kind = l.GetValue()
				case "status":
					status = l.GetValue()
				}
			}
			got[kind+" "+status] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"segment 200": 3, "segment 404": 2, "init 200": 1, "manifest 200": 1}
	if len(got) != len(want) {
		t.Errorf("request series %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("requests{%s} = %v, want %v", k, got[k], n)
		}
	}
}
