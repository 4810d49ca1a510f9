package wspush

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDialRefusalSaysWhy: an upgrade refused with a status other than 101 (and not
// 404) comes back as an error that carries the answer's body, so a soak's error log
// says why the origin refused (a bad key, a protocol violation, a server error).
func TestDialRefusalSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "WebSocket protocol violation: missing Sec-WebSocket-Key", http.StatusBadRequest)
	}))
	defer srv.Close()
	_, err := Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws/live", DialOptions{})
	if err == nil {
		t.Fatal("a 400 to the upgrade was accepted")
	}
	for _, want := range []string{"400", "missing Sec-WebSocket-Key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
