package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every transport serves an ingested channel as it serves a looped one: FFmpeg posts
// the small ladder to a publishing point (`streambed encode live`), and headless
// players play it at once over HTTP/1.1, h2c, WebSocket push, HTTP/2 push and ParS
// (`streambed play`), each reporting media played and no errors.
func TestEveryTransportPlaysAnIngestedChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: encodes live with FFmpeg for about 25 s")
	}
	dir := t.TempDir()
	base := serveForTest(t, dir, "--ingest", "studio,token=T,segment=2s")
	ctx, stop := context.WithCancel(context.Background())
	encoded := make(chan error, 1)
	var encErr bytes.Buffer
	go func() {
		encoded <- Encode(ctx, []string{"live", "--to", base + "/ingest/studio", "--token", "T", "--duration", "40", "--preset", "ultrafast"}, io.Discard, &encErr)
	}()
	defer func() {
		stop()
		<-encoded
	}()
	// Wait for two complete segments in every track, as a player starting at the live
	// edge wants.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/live/studio/manifest-timeline.mpd")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Count(string(b), `r="1"`)+strings.Count(string(b), `r="2"`) >= 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two segments ingested after 30 s; encoder: %s", encErr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkLLHLS(t, base+"/live/studio/master.m3u8") // the encoder's ~200 ms chunks make it low latency
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws/studio"
	mpd := base + "/live/studio/manifest.mpd"
	cases := []struct{ transport, url string }{
		{"http1", mpd}, {"h2c", base + "/live/studio/manifest-timeline.mpd"}, {"ws", ws},
		{"h2cpush-init", mpd}, {"pars", mpd},
	}
	var wg sync.WaitGroup
	reports := make([]map[string]any, len(cases))
	errs := make([]string, len(cases))
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errOut bytes.Buffer
			if err := Play(ctx, []string{c.url, "--transport", c.transport, "--json", "--duration", "8s"}, &out, &errOut); err != nil {
				errs[i] = err.Error() + "\n" + errOut.String()
				return
			}
			if err := json.Unmarshal(out.Bytes(), &reports[i]); err != nil {
				errs[i] = err.Error() + "\n" + out.String()
			}
		}()
	}
	wg.Wait()
	for i, c := range cases {
		rep := reports[i]
		if errs[i] != "" || rep == nil {
			t.Errorf("%s: %s", c.transport, errs[i])
			continue
		}
		played, _ := rep["played_s"].(float64)
		gotMedia := rep["media_requests"].(float64) + rep["pushed"].(float64)
		if rep["end_reason"] != "duration" || played < 2 || gotMedia < 2 || rep["live"] != true {
			b, _ := json.Marshal(rep)
			t.Errorf("%s on the ingested channel: %s", c.transport, b)
		}
		if c.transport == "h2cpush-init" && rep["pushed"].(float64) < 1 {
			t.Errorf("h2cpush-init: nothing pushed")
		}
	}
}
