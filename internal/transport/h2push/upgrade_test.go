package h2push_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/transport/h2push"
)

// TestWebSocketUpgradePassesThrough: a WebSocket opening handshake goes to the next
// handler untouched, with no push planned for it (no Link preloads, even where the
// same GET without the upgrade gets them), so a push viewer's set-up does not pay
// for planning.
func TestWebSocketUpgradePassesThrough(t *testing.T) {
	a, _ := testAsset(t)
	h := hub.New()
	h.AddAsset(a)
	t.Cleanup(h.Close)
	p, err := h2push.New(h2push.Options{Hub: h})
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	wrapped := p.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, tc := range []struct {
		name    string
		upgrade string
		links   int
	}{
		{"plain GET", "", 3},
		{"WebSocket upgrade", "websocket", 0},
		{"WebSocket upgrade, other case and list", "foo, WebSocket", 0},
		{"another upgrade", "h2c", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			r := httptest.NewRequest(http.MethodGet, "/vod/test/manifest.mpd?push=init", nil)
			if tc.upgrade != "" {
				r.Header.Set("Connection", "Upgrade")
				r.Header.Set("Upgrade", tc.upgrade)
			}
			w := httptest.NewRecorder()
			wrapped.ServeHTTP(w, r)
			if reached != before+1 || w.Code != http.StatusTeapot {
				t.Fatalf("next handler reached %d times, status %d", reached-before, w.Code)
			}
			if got := strings.Count(strings.Join(w.Header().Values("Link"), ","), "rel=preload"); got != tc.links {
				t.Errorf("%d Link preloads (%q), want %d", got, w.Header().Values("Link"), tc.links)
			}
		})
	}
	if st := p.Stats(); st.Links != 6 {
		t.Errorf("%d Link headers counted, want 6 (the two requests that are not WebSocket handshakes)", st.Links)
	}
}
