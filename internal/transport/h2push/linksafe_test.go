package h2push

import "testing"

// TestLinkSafe: page paths saved in push rules are pushed and written into Link
// headers as they are, so characters that break either are refused (a fuzzer saved
// "/app.js?v=1\x01" and "/a?x=>,y" through the admin API before).
func TestLinkSafe(t *testing.T) {
	for path, want := range map[string]bool{
		"/app.js":            true,
		"/app.js?v=3&x=%20y": true,
		"/app.css?v=1\x01":   false,
		"/a?x=>,y":           false,
		"/a b":               false,
		"/a#frag":            false,
		"/a?q=\"x\"":         false,
		"/a;rel=preload":     false,
		"/a\x7f":             false,
	} {
		if got := linkSafe(path); got != want {
			t.Errorf("linkSafe(%q) = %v, want %v", path, got, want)
		}
	}
}
