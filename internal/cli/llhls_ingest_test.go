package cli

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

var hintLine = regexp.MustCompile(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="(([0-9]+)\.([0-9]+)\.m4s)"`)

// checkLLHLS checks that the channel whose master playlist is at master is served as
// LL-HLS: its first variant's playlist has parts and a preload hint, a blocking reload
// for the hinted part is answered once it exists with that part listed, and the part
// is CMAF (a styp or moof box first).
func checkLLHLS(t *testing.T, master string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(u string) string {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("LL-HLS: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("LL-HLS: GET %s: %d %v %.300s", u, resp.StatusCode, err, b)
		}
		return string(b)
	}
	base, err := url.Parse(master)
	if err != nil {
		t.Fatal(err)
	}
	var variant string
	for _, l := range strings.Split(get(master), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			variant = l
			break
		}
	}
	pu, err := base.Parse(variant)
	if err != nil {
		t.Fatal(err)
	}
	pl := get(pu.String())
	m := hintLine.FindStringSubmatch(pl)
	if !strings.Contains(pl, "#EXT-X-PART-INF:PART-TARGET=") || !strings.Contains(pl, "CAN-BLOCK-RELOAD=YES") || m == nil {
		t.Fatalf("LL-HLS: %s is not LL-HLS:\n%s", pu, pl)
	}
	q := *pu
	q.RawQuery = "_HLS_msn=" + m[2] + "&_HLS_part=" + m[3]
	if reload := get(q.String()); !strings.Contains(reload, `#EXT-X-PART:DURATION=`) || !strings.Contains(reload, `URI="`+m[1]+`"`) {
		t.Fatalf("LL-HLS: the blocking reload for the hinted part %s does not list it:\n%s", m[1], reload)
	}
	part, err := pu.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if b := get(part.String()); len(b) < 8 || (b[4:8] != "moof" && b[4:8] != "styp") {
		t.Fatalf("LL-HLS: part %s is not CMAF: %q", part, b[:min(len(b), 16)])
	}
	// An outside reader: ffprobe opens the LL-HLS master playlist and finds the video.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv", master).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "h264") {
		t.Fatalf("LL-HLS: ffprobe %s: %v\n%s", master, err, out)
	}
}
