package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCompareScenario(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "experiments", "profiles")
	s, err := CompareScenario(CompareOptions{Profile: "lossy-50ms", ProfileDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Cells()); got != len(DefaultCompareTransports) {
		t.Errorf("%d cells, want one per transport (%d)", got, len(DefaultCompareTransports))
	}
	if !s.Play.Live || s.Play.Chunk.D() != 40*time.Millisecond || s.Play.Duration.D() != 30*time.Second {
		t.Errorf("play %+v: want live, 40ms chunks, 30 s", s.Play)
	}
	if r := s.CellRate(Cell{}); r != "20mbit" {
		t.Errorf("link rate %q, want the profile's 20mbit (utilisation divides by it)", r)
	}
	p, err := s.CellProfile(Cell{"transport": "ws"})
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(p.Forward.Delay) != 25*time.Millisecond || p.Forward.Loss.P == 0 {
		t.Errorf("profile %+v: want the file's 25 ms one way and 1%% loss", p.Forward)
	}
	for tr, scheme := range map[string]string{"http1": "http://", "h2c": "http://", "h2": "https://", "h2push-init": "https://", "h2cpush-all": "http://", "ws": "http://", "pars": "http://"} {
		if u := s.playURL("10.0.0.1", Cell{"transport": tr}); !strings.HasPrefix(u, scheme) || !strings.HasSuffix(u, "/live/live-seg-2s/manifest.mpd") {
			t.Errorf("%s plays %s, want %s…/live/live-seg-2s/manifest.mpd", tr, u, scheme)
		}
	}
	for tr, scheme := range map[string]string{"hls": "http://", "hls-h2": "https://"} {
		if u := s.playURL("10.0.0.1", Cell{"transport": tr}); !strings.HasPrefix(u, scheme) || !strings.HasSuffix(u, "/live/live-seg-2s/master.m3u8") {
			t.Errorf("%s plays %s, want %s…/live/live-seg-2s/master.m3u8 (LL-HLS)", tr, u, scheme)
		}
	}
	if !s.usesFDSP() {
		t.Error("the default comparison plays FDSP, so its origin must listen for it")
	}
	if hlsTransports["hls"] != "http1" || hlsTransports["hls-h2"] != "h2" {
		t.Errorf("the headless player's transports for LL-HLS: %v, want http1 and h2", hlsTransports)
	}

	if _, err := CompareScenario(CompareOptions{Profile: "no-such-link", ProfileDir: dir}); err == nil || !strings.Contains(err.Error(), "broadband") {
		t.Errorf("an unknown profile: %v, want the list of known ones", err)
	}
	f := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(f, []byte("rate: 3mbit\ndelay: 5ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := CompareScenario(CompareOptions{Profile: f}); err != nil || s.Name != "compare-mine" || s.CellRate(Cell{}) != "3mbit" {
		t.Errorf("a profile file: %v %v", s, err)
	}
}
