package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/load/workload"
)

func TestIsWorkload(t *testing.T) {
	for args, want := range map[string]bool{
		"merge a.json --out x":                   true,
		"--mode dash-live http://h/m.mpd":        true,
		"-mode=hls-live http://h/m.m3u8":         true,
		"ws://h/ws/demo --transport ws":          false,
		"http://h/live/x/manifest.mpd -- --mode": false,
	} {
		if got := isWorkload(strings.Fields(args)); got != want {
			t.Errorf("%q: %v, want %v", args, got, want)
		}
	}
}

func TestLoadWorkloadHelpAndErrors(t *testing.T) {
	var out, errb bytes.Buffer
	err := Load(context.Background(), []string{"--mode", "dash-live", "-h"}, &out, &errb)
	if err == nil || !strings.Contains(errb.String(), "hls-live") || !strings.Contains(errb.String(), "load merge") || !strings.Contains(errb.String(), "-duration seconds") {
		t.Errorf("help: %v\n%s", err, errb.String())
	}
	for _, args := range [][]string{
		{"--mode", "rtmp", "http://h/x.mpd"},
		{"--mode", "dash-live", "http://h/x.mpd", "--workers", "0"},
		{"--mode", "dash-live", "http://h/x.mpd", "--duration", "soon"},
		{"merge", "a.json"},
		{"merge", "--out", t.TempDir()},
		{"merge", filepath.Join(t.TempDir(), "missing.json"), "--out", t.TempDir()},
	} {
		if err := Load(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestLoadWorkloadRunAndMerge runs `streambed load --mode dash-live` twice against a
// stand-in live MPD and merges the two reports with `streambed load merge`.
func TestLoadWorkloadRunAndMerge(t *testing.T) {
	ast := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".mpd") {
			fmt.Fprintf(w, `<MPD type="dynamic" availabilityStartTime="%s" minimumUpdatePeriod="PT0.5S"><Period id="0" start="PT0S">
<AdaptationSet contentType="video"><SegmentTemplate timescale="1000" duration="500" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/><Representation id="v1" bandwidth="100000"/></AdaptationSet>
<AdaptationSet contentType="audio"><SegmentTemplate timescale="1000" duration="500" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/><Representation id="a1" bandwidth="128000"/></AdaptationSet>
</Period></MPD>`, ast.Format(time.RFC3339))
			return
		}
		fmt.Fprint(w, "segment")
	}))
	defer srv.Close()
	dir := t.TempDir()
	for _, h := range []string{"a", "b"} {
		var out, errb bytes.Buffer
		args := []string{"--mode", "dash-live", srv.URL + "/live.mpd", "--workers", "2", "--ramp", "0.5", "--duration", "2", "--host", h, "--out", filepath.Join(dir, h)}
		if err := Load(context.Background(), args, &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		if !strings.Contains(out.String(), "dash-live: ") || !strings.Contains(errb.String(), "0 → 2 workers") {
			t.Errorf("output:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if err := Load(context.Background(), []string{"merge", filepath.Join(dir, "a", "report.json"), filepath.Join(dir, "b", "report.json"), "--out", filepath.Join(dir, "m")}, &out, &errb); err != nil {
		t.Fatalf("merge: %v\n%s", err, errb.String())
	}
	a, _ := workload.Load(filepath.Join(dir, "a", "report.json"))
	b, _ := workload.Load(filepath.Join(dir, "b", "report.json"))
	m, err := workload.Load(filepath.Join(dir, "m", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range workload.Kinds {
		if m.Kinds[k].Requests != a.Kinds[k].Requests+b.Kinds[k].Requests {
			t.Errorf("%s: merged %d, parts %d + %d", k, m.Kinds[k].Requests, a.Kinds[k].Requests, b.Kinds[k].Requests)
		}
	}
	if m.Sessions.Started != 4 || len(m.Hosts) != 2 || a.Kinds[workload.KindVideo].Requests == 0 {
		t.Errorf("merged sessions %+v hosts %v; a %+v", m.Sessions, m.Hosts, a.Kinds[workload.KindVideo])
	}
}
