package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve's pacing guard is on by default and off with --tcp-pacing-guard=false or
// tcp_pacing_guard: false in the configuration; /metrics shows its counters only
// when it is on.
func TestServePacingGuardFlag(t *testing.T) {
	metrics := func(base string) string {
		t.Helper()
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const counter = "streambed_tcp_pacing_reinit_total 0"
	if m := metrics(serveForTest(t, t.TempDir())); !strings.Contains(m, counter) {
		t.Errorf("default serve: /metrics has no %q", counter)
	}
	if m := metrics(serveForTest(t, t.TempDir(), "--tcp-pacing-guard=false")); strings.Contains(m, "streambed_tcp_pacing_") {
		t.Error("--tcp-pacing-guard=false: /metrics still has the guard's counters")
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "streambed.yaml")
	if err := os.WriteFile(p, []byte("tcp_pacing_guard: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TCPPacingGuard {
		t.Error("tcp_pacing_guard: false in the configuration left the guard on")
	}
	if !DefaultConfig().TCPPacingGuard {
		t.Error("the guard is off in serve's default configuration")
	}
}
