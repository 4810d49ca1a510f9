package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const tinyMPD = `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT0.3S" minBufferTime="PT0.1S">
 <Period><AdaptationSet contentType="video" mimeType="video/mp4">
  <SegmentTemplate timescale="1000" duration="100" startNumber="1" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
  <Representation id="v1" bandwidth="500000"/><Representation id="v2" bandwidth="1500000"/>
 </AdaptationSet></Period></MPD>`

func tinyOrigin(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/vod/tiny/manifest.mpd", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tinyMPD) })
	mux.HandleFunc("/vod/tiny/{rep}/{file}", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 5000)) })
	s := httptest.NewUnstartedServer(mux)
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s.Config.Protocols = p
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func TestPlayJSON(t *testing.T) {
	s := tinyOrigin(t)
	for _, tr := range []string{"http1", "h2c"} {
		t.Run(tr, func(t *testing.T) {
			var out, errOut bytes.Buffer
			// Flags after the URL, as in the documented usage.
			err := Play(context.Background(), []string{s.URL + "/vod/tiny/manifest.mpd", "--transport", tr, "--json", "--abr", "fixed:v2", "--link-rate", "10M", "--duration", "10s"}, &out, &errOut)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var rep map[string]any
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out.String())
			}
			for _, k := range []string{"startup_delay_ms", "stall_count", "stall_ms", "switches", "avg_bitrate_kbps", "requests",
				"payload_bytes", "overhead_bytes", "throughput_kbps", "latency_ms", "transport", "played_s", "per_track_s",
				"link_utilisation", "samples"} {
				if _, ok := rep[k]; !ok {
					t.Errorf("key %s missing", k)
				}
			}
			if rep["transport"] != tr || rep["requests"].(float64) != 5 || rep["payload_bytes"].(float64) != float64(len(tinyMPD)+4*5000) ||
				rep["avg_bitrate_kbps"].(float64) != 1500 || rep["latency_ms"] != nil || rep["end_reason"] != "ended" {
				t.Errorf("report %s", out.String())
			}
			if rep["overhead_bytes"].(float64) <= 0 {
				t.Errorf("overhead %v", rep["overhead_bytes"])
			}
			// --link-rate 10M: utilisation is the media bits (init + 3 segments of 5000 B)
			// over the session time, over 10 Mbit/s, to three decimals.
			rate, _ := rep["link_rate_kbps"].(float64)
			util, okU := rep["link_utilisation"].(float64)
			media, _ := rep["media_bytes"].(float64)
			session, _ := rep["session_s"].(float64)
			want := media * 8 / session / 10e6
			if rate != 10000 || media != 4*5000 || session <= 0 || !okU || math.Abs(util-want) > 0.0006 {
				t.Errorf("link rate %v kbit/s, utilisation %v; want 10000 and %.4f (%v media bytes in %v s)", rep["link_rate_kbps"], rep["link_utilisation"], want, media, session)
			}
		})
	}
}

func TestPlaySummaryAndErrors(t *testing.T) {
	s := tinyOrigin(t)
	var out, errOut bytes.Buffer
	if err := Play(context.Background(), []string{"--quiet", s.URL + "/vod/tiny/manifest.mpd"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "start-up:") || !strings.Contains(out.String(), "stalls:") || errOut.Len() != 0 {
		t.Errorf("summary:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if err := Play(context.Background(), []string{"--help"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut.String(), "--transport") && !strings.Contains(errOut.String(), "-transport") {
		t.Errorf("--help: %v\n%s", err, errOut.String())
	}
	for _, args := range [][]string{
		{},
		{"ftp://x/m.mpd"},
		{s.URL + "/m.mpd", "--transport", "quic"},
		{s.URL + "/m.mpd", "--abr", "magic"},
		{s.URL + "/m.mpd", "--link-rate", "fast"},
	} {
		if err := Play(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	// A missing manifest: the report is printed, and the error returned.
	out.Reset()
	if err := Play(context.Background(), []string{"--quiet", "--json", s.URL + "/vod/none/manifest.mpd"}, &out, &errOut); err == nil || !strings.Contains(out.String(), `"end_reason": "error"`) {
		t.Errorf("missing manifest: %v\n%s", err, out.String())
	}
}

func TestParseBitRate(t *testing.T) {
	for in, want := range map[string]float64{"10M": 10e6, "2.5Mbit": 2.5e6, "800k": 800e3, "800kbps": 800e3, "1000000": 1e6, "1G": 1e9, "3mbit/s": 3e6} {
		if got, err := ParseBitRate(in); err != nil || got != want {
			t.Errorf("ParseBitRate(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "fast", "-1M", "0"} {
		if _, err := ParseBitRate(in); err == nil {
			t.Errorf("ParseBitRate(%q) accepted", in)
		}
	}
}
