package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/publish"
)

// serveForTest runs `streambed serve` in-process on a free loopback port with data
// folder dir; it returns the origin's URL.
func serveForTest(t *testing.T, dir string, args ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- Serve(ctx, append([]string{"--http", addr, "--https", "", "--data-dir", dir, "--assets", filepath.Join(dir, "assets"),
			"--no-demo", "--channel", "", "--log-level", "warn"}, args...), io.Discard, &out)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, out.String())
		}
	})
	base := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/api/streams")
		if err == nil {
			resp.Body.Close()
			return base
		}
		if i == 200 {
			t.Fatalf("serve did not start: %v\n%s", err, out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func runChannel(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Channel(context.Background(), args, &stdout, &stderr)
	return stdout.String(), err
}

// `streambed channel` on the origin's machine: no token flag (it reads the data
// folder), create prints what an encoder needs, the encoder's posts make the
// channel live, list and delete.
func TestChannelCommand(t *testing.T) {
	dir := t.TempDir()
	base := serveForTest(t, dir, "--ingest", "studio,token=studio-token")
	common := []string{"--server", base, "--data-dir", dir}

	out, err := runChannel(t, append([]string{"create", "news", "--preset", "pure-live", "--json"}, common...)...)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var made map[string]string
	if err := json.Unmarshal([]byte(out), &made); err != nil {
		t.Fatalf("create --json: %v\n%s", err, out)
	}
	for _, k := range []string{"name", "ingest_url", "ingest_token", "dash", "hls"} {
		if made[k] == "" {
			t.Errorf("create --json has no %q: %s", k, out)
		}
	}
	if made["ingest_url"] != base+"/ingest/news" || made["dash"] != base+"/live/news/manifest-timeline.mpd" {
		t.Errorf("create --json = %v", made)
	}
	if _, err := runChannel(t, append([]string{"create", "news"}, common...)...); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("second create: %v", err)
	}
	if _, err := runChannel(t, "list", "--server", base, "--data-dir", t.TempDir()); err == nil || !strings.Contains(err.Error(), "admin.token") {
		t.Errorf("list without the token: %v (want where the token lives)", err)
	}
	if _, err := runChannel(t, "list", "--server", "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "streambed serve") {
		t.Errorf("list with no origin: %v", err)
	}

	if !testing.Short() {
		var stderr bytes.Buffer
		if err := Encode(context.Background(), []string{"live", "--to", made["ingest_url"], "--token", made["ingest_token"], "--duration", "5", "--preset", "ultrafast"}, io.Discard, &stderr); err != nil {
			t.Fatalf("encode live into the channel: %v\n%s", err, stderr.String())
		}
		resp, err := http.Get(made["dash"])
		if err != nil {
			t.Fatal(err)
		}
		mpd, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(mpd), `<S t="`) || !strings.Contains(string(mpd), `id="a64"`) {
			t.Errorf("MPD after 5 s of encoding: %d\n%s", resp.StatusCode, mpd)
		}
		out, err = runChannel(t, append([]string{"show", "news"}, common...)...)
		if err != nil || !strings.Contains(out, "track v360") || !strings.Contains(out, "(idle, api)") {
			t.Errorf("show after encoding: %v\n%s", err, out)
		}
		// The archive (pure-live keeps one) cut into an on-demand asset that plays.
		now := time.Now().Unix()
		from, to := fmt.Sprint(now-20), fmt.Sprint(now)
		out, err = runChannel(t, append([]string{"clip", "news", "--as", "news-clip", "--from", from, "--to", to}, common...)...)
		if err != nil || !strings.Contains(out, "made asset news-clip") {
			t.Fatalf("clip: %v\n%s", err, out)
		}
		for _, m := range []string{"/vod/news-clip/manifest-timeline.mpd", "/vod/news-clip/manifest.mpd", "/vod/news-clip/master.m3u8"} {
			resp, err := http.Get(base + m)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || strings.Contains(m, ".mpd") && !strings.Contains(string(b), `type="static"`) {
				t.Errorf("%s: %d\n%s", m, resp.StatusCode, b)
			}
			if probe, err := exec.Command("ffprobe", "-v", "error", base+m).CombinedOutput(); err != nil {
				t.Errorf("ffprobe %s: %v\n%s", m, err, probe)
			}
		}
		if _, err := runChannel(t, append([]string{"clip", "news", "--as", "news-clip", "--from", from, "--to", to}, common...)...); err == nil || !strings.Contains(err.Error(), "409") {
			t.Errorf("a second clip of the same name: %v", err)
		}
	}

	out, err = runChannel(t, append([]string{"list"}, common...)...)
	if err != nil || !strings.Contains(out, "news") || !strings.Contains(out, "studio") || !strings.Contains(out, "config") {
		t.Errorf("list: %v\n%s", err, out)
	}
	if _, err := runChannel(t, append([]string{"delete", "studio"}, common...)...); err == nil || !strings.Contains(err.Error(), "configuration") {
		t.Errorf("deleting a configured channel: %v", err)
	}
	if _, err := runChannel(t, append([]string{"delete", "news"}, common...)...); err != nil {
		t.Errorf("delete: %v", err)
	}
	b, err := os.ReadFile(publish.StateFile(dir))
	if err != nil || strings.Contains(string(b), `"news"`) {
		t.Errorf("state file after delete: %v\n%s", err, b)
	}
	for _, bad := range [][]string{{}, {"rename", "x"}, {"create"}, {"list", "x"}, {"create", "a", "--dvr", "soon"}} {
		if _, err := runChannel(t, append(bad, common...)...); err == nil {
			t.Errorf("channel %v accepted", bad)
		}
	}
}
