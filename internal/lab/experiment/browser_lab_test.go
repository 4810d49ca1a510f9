package experiment

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

// One short browser cell end to end: the origin in the server host, headless Chromium
// with the player page (dash.js on the low-latency MPD over HTTP/1.1) in the client
// host across an emulated 20 Mbit/s, 20 ms RTT link, and a cell the browser cannot
// play (h2c) listed as not played. Its figures must be real: start-up, bitrate,
// latency, requests and media bytes above zero, the protocol Chromium used HTTP/1.1.
//
// Needs root (namespaces) and what `make test` installs and builds before the Go
// tests: chromium, node, web/node_modules (make web) and the web app in web/dist
// (embedded in the binary this test builds). Missing any of those fails the test.
func TestBrowserCell(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (CI runs as root)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("skipped: no /dev/net/tun")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	for _, need := range []struct{ path, fix string }{
		{chromium, "apt-get install chromium (make test-deps)"},
		{filepath.Join(root, "web", "dist", "index.html"), "make web"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			t.Fatalf("%s missing: %s", need.path, need.fix)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node missing: make deps")
	}
	t.Setenv("STREAMBED_LABCLIENT", filepath.Join(root, "web", "scripts", "labclient.mjs"))
	if _, err := LabClientScript(""); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "streambed")
	build := exec.Command("go", "build", "-o", bin, "./cmd/streambed")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	s := &Scenario{
		Name:    "browser-cell",
		Content: Content{Synthetic: "8s", Ladder: "180p:100k,360p:400k", AudioBitrate: "64k", Preset: "ultrafast"},
		Matrix:  Matrix{{Name: "transport", Values: []string{"http1", "h2c"}}},
		Play:    Play{Duration: Duration(8 * time.Second), Live: true, Chunk: Duration(200 * time.Millisecond), Client: ClientBrowser},
		Metrics: CompareMetrics,
	}
	if err := s.Network.Encode(map[string]string{"rate": "20mbit", "delay": "10ms"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Execute(ctx, s, Options{Bin: bin, OutDir: out, CacheDir: filepath.Join(out, "cache"), Backend: netem.BackendAuto})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	played, skipped := res.Runs[0], res.Runs[1]
	if skipped.Skipped == "" || skipped.Error != "" || skipped.Metrics != nil {
		t.Errorf("h2c: %+v, want not played with a reason", skipped)
	}
	if played.Error != "" {
		t.Fatalf("http1 in the browser failed: %s", played.Error)
	}
	m := played.Metrics
	for _, k := range []string{"startup_delay_ms", "avg_bitrate_kbps", "latency_ms", "requests", "media_requests", "media_bytes", "link_utilisation", "session_s"} {
		if v, ok := number(m[k]); !ok || v <= 0 {
			t.Errorf("%s = %v, want a figure above zero", k, m[k])
		}
	}
	for _, k := range []string{"stall_count", "stall_ms", "switches"} {
		if _, ok := number(m[k]); !ok {
			t.Errorf("%s = %v, want a number", k, m[k])
		}
	}
	if m["protocol"] != "HTTP/1.1" || m["player"] != "dashjs" || m["client"] != "browser" {
		t.Errorf("protocol %v player %v client %v, want HTTP/1.1 dashjs browser", m["protocol"], m["player"], m["client"])
	}
	// The link's 10 ms each way is under the player's feet: start-up takes a few round
	// trips (MPD, clock, inits, first chunks), so more than two RTTs.
	if v, _ := number(m["startup_delay_ms"]); v < 40 {
		t.Errorf("start-up %v ms across a 20 ms RTT link: did Chromium bypass the emulated link?", v)
	}
	// The client's side of TCP: its sockets to the origin were sampled, they carried at
	// least the media, and the origin's side of the same connections was sampled too.
	ct, ok := m["client_tcp"].(ClientTCP)
	if !ok {
		t.Fatalf("client_tcp = %T, want the client's TCP record", m["client_tcp"])
	}
	var rx int64
	for _, c := range ct.Connections {
		rx += c.BytesReceived
	}
	if mb, _ := number(m["media_bytes"]); ct.Samples == 0 || len(ct.Connections) == 0 || float64(rx) < mb {
		t.Errorf("client_tcp: %d samples, %d connections, %d bytes received; want Chromium's connections carrying the %v media bytes", ct.Samples, len(ct.Connections), rx, m["media_bytes"])
	}
	if ct.Counters["ActiveOpens"] < 1 || ct.ServerSockets == nil || len(ct.ServerSockets.Rows) == 0 {
		t.Errorf("client_tcp: counters %v, origin's sockets %+v; want the client's opens and the origin's side sampled", ct.Counters, ct.ServerSockets)
	}
	if ct.TraceError != "" {
		t.Logf("no TCP tracepoints here (%s): the run records counters and samples only", ct.TraceError)
	}
	t.Logf("dash.js over HTTP/1.1 in the client host: start-up %v ms, latency %v ms, %v kbit/s, %v requests, %v media bytes, %v stalls",
		m["startup_delay_ms"], m["latency_ms"], m["avg_bitrate_kbps"], m["requests"], m["media_bytes"], m["stall_count"])
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
}
