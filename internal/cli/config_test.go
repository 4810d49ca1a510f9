package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "streambed.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := LoadConfig(write(`
http: ":9000"
https: ""
assets: /srv/assets
cache:
  open_files: 10
h2push:
  default: k2
wspush:
  policy: buffer
channels:
  - name: news
    loop: clip
    dvr_window: 2m
    presentation_delay: 6s
    ws_policy: fixed
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP != ":9000" || cfg.HTTPS != "" || cfg.Assets != "/srv/assets" || cfg.Cache.OpenFiles != 10 || cfg.Log.Level != "info" {
		t.Errorf("origin settings: %+v", cfg.Config)
	}
	if cfg.H2Push.Default.String() != "k2" {
		t.Errorf("h2push default %v", cfg.H2Push.Default)
	}
	if len(cfg.Channels) != 1 || cfg.Channels[0].DVRWindow != 2*time.Minute || cfg.Channels[0].PresentationDelay != 6*time.Second {
		t.Errorf("channels %+v", cfg.Channels)
	}
	ws := cfg.wsPushConfig()
	if ws.Policy != "buffer" || ws.Channels["news"] != "fixed" {
		t.Errorf("wspush config %+v", ws)
	}
	for body, want := range map[string]string{
		"htp: \":1\"\n": "field htp not found",
		"channels:\n  - name: a\n    loop: b\n    ws_policy: fast\n": "ws_policy",
		"channels:\n  - name: ../x\n    loop: b\n":                   "invalid",
		"http: \"\"\nhttps: \"\"\n":                                  "both listeners",
	} {
		if _, err := LoadConfig(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

// The configuration in the README is the real one: every key it shows loads.
func TestREADMEConfigLoads(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Configuration")
	if !ok {
		t.Fatal("README has no Configuration section")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README's Configuration section has no yaml block")
	}
	p := filepath.Join(t.TempDir(), "readme.yaml")
	if err := os.WriteFile(p, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatalf("the README's configuration does not load: %v", err)
	}
	if len(cfg.Channels) != 4 || cfg.Channels[0].Name != "demo" || cfg.WSPush.Policy != "tcp" ||
		cfg.Channels[1].Relay == "" || time.Duration(cfg.Channels[1].SegmentDuration) != 2*time.Second || cfg.Channels[2].Pull == "" ||
		!cfg.Channels[3].Ingest || cfg.Channels[3].Preset != "pure-live" || !cfg.Channels[3].Archiving {
		t.Errorf("README configuration read as %+v", cfg)
	}
}

// Publishing-point options belong to ingest channels, and loop options to looped ones.
func TestConfigIngestChannels(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	for body, want := range map[string]string{
		"channels:\n  - name: a\n    ingest: true\n    preset: archive-dvr\n    dvr_window_length: 2h\n": "",
		"channels:\n  - name: a\n    ingest: true\n    dvr_window: 60s\n":                                "dvr_window_length",
		"channels:\n  - name: a\n    loop: demo\n    archiving: true\n":                                  "ingest: true",
		"channels:\n  - name: a\n    ingest: true\n    preset: nope\n":                                   "unknown preset",
		"channels:\n  - name: a\n    ingest: true\n    hls_fmp4: false\n":                                "MPEG-TS",
		"channels:\n  - name: a\n    ingest: true\n    segment_duration: 4\n":                            "",
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

func TestConfigRelayChannels(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	for body, want := range map[string]string{
		"channels:\n  - name: a\n    relay: ws://origin:8080/ws/a\n    segment_duration: 4s\n    dvr_window: 30s\n": "",
		"channels:\n  - name: a\n    relay: wss://origin/ws/a\n    ws_policy: buffer\n":                             "",
		"channels:\n  - name: a\n    relay: http://origin/live/a/manifest.mpd\n":                                    "not a push URL",
		"channels:\n  - name: a\n    relay: ws://o/ws/a\n    loop: demo\n":                                          "more than one",
		"channels:\n  - name: a\n    relay: ws://o/ws/a\n    chunk_duration: 40ms\n":                                "come from upstream",
		"channels:\n  - name: a\n    relay: ws://o/ws/a\n    archiving: true\n":                                     "come from upstream",
		"channels:\n  - name: a\n": "pull: MPD_URL",
		"channels:\n  - name: a\n    pull: http://origin:8080/live/a/manifest.mpd\n    dvr_window: 30s\n": "",
		"channels:\n  - name: a\n    pull: ws://origin/ws/a\n":                                            "http(s) URL",
		"channels:\n  - name: a\n    pull: http://o/live/a/manifest.mpd\n    relay: ws://o/ws/a\n":        "more than one",
		"channels:\n  - name: a\n    pull: http://o/live/a/manifest.mpd\n    segment_duration: 2s\n":      "come from upstream",
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
	var rf relayFlags
	if err := rf.Set("edge=ws://o:8080/ws/demo,segment=4,dvr=30s,delay=6"); err != nil {
		t.Fatal(err)
	}
	if c := rf[0]; c.Name != "edge" || c.Relay != "ws://o:8080/ws/demo" || time.Duration(c.SegmentDuration) != 4*time.Second ||
		c.DVRWindow != 30*time.Second || c.PresentationDelay != 6*time.Second {
		t.Errorf("--relay parsed as %+v", c)
	}
	for _, bad := range []string{"edge", "=ws://o/ws/a", "edge=ws://o/ws/a,chunk=40ms", "edge=ws://o/ws/a,dvr=soon"} {
		var rf relayFlags
		if err := rf.Set(bad); err == nil {
			t.Errorf("--relay %q accepted", bad)
		}
	}
}

// PART-HOLD-BACK from the file (ll_hls_part_hold_back) and the flag
// (--ll-hls-part-hold-back): under two part targets is refused before anything
// starts, with the value to give; a looped channel's own chunks set its part target.
func TestConfigLLHLSPartHoldBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	for body, want := range map[string]string{
		"ll_hls_part_hold_back: 1s\n":    "",
		"ll_hls_part_hold_back: 300ms\n": "give at least 400ms",
		"ll_hls_part_hold_back: 600ms\nchannels:\n  - name: a\n    loop: demo\n    chunk_duration: 400ms\n": `channel "a": ll_hls_part_hold_back (--ll-hls-part-hold-back) 600ms is below two part targets (800ms with 400ms parts)`,
		"ll_hls_part_hold_back: 800ms\nchannels:\n  - name: a\n    loop: demo\n    chunk_duration: 400ms\n": "",
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(p)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
		if want == "" && cfg.LLHLSPartHoldBack == 0 {
			t.Errorf("%q: ll_hls_part_hold_back not read", body)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ll-hls-part-hold-back", "300ms"}, "give at least 400ms, or 0 for the default of three part targets (600ms)"},
		{[]string{"--ll-hls-part-hold-back", "600ms", "--channel", "x=demo,chunk=400ms"}, "give at least 800ms"},
	} {
		dir := t.TempDir()
		args := append([]string{"--http", "127.0.0.1:0", "--https", "", "--data-dir", dir, "--assets", dir, "--no-demo"}, tc.args...)
		var stderr strings.Builder
		if err := Serve(t.Context(), args, &stderr, &stderr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %q: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
