package h2push_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/streambed/streambed/internal/transport/h2push"
)

// TestH1SegmentLinks: over HTTP/1.1 a segment GET gets Link: rel=preload for what its
// strategy would push, whether the strategy comes from ?push=, the configured default
// or a rule for its stream, and none when nothing names one (the plan is skipped
// there, so this checks that the shortcut drops nothing).
func TestH1SegmentLinks(t *testing.T) {
	k3, err := h2push.ParseStrategy("k3")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/vod/test/v360/2.m4s", "/vod/test/v360/3.m4s"}
	links := func(t *testing.T, url string) []string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		// A plain HTTP/1.1 client: no HTTP/2 on the cleartext port.
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
			t.Fatalf("%s: %s %d", url, resp.Proto, resp.StatusCode)
		}
		var got []string
		for _, v := range resp.Header.Values("Link") {
			for _, l := range strings.Split(v, ",") {
				if i, j := strings.Index(l, "<"), strings.Index(l, ">"); i >= 0 && j > i {
					got = append(got, l[i+1:j])
				}
			}
		}
		slices.Sort(got)
		return got
	}
	t.Run("no strategy", func(t *testing.T) {
		o := startOrigin(t, h2push.Config{}, "")
		if got := links(t, o.h2c+"/vod/test/v360/1.m4s"); len(got) != 0 {
			t.Errorf("Link %q, want none", got)
		}
		if got := links(t, o.h2c+"/vod/test/v360/1.m4s?push=k3"); !slices.Equal(got, want) {
			t.Errorf("?push=k3: Link %q, want %q", got, want)
		}
	})
	t.Run("default", func(t *testing.T) {
		o := startOrigin(t, h2push.Config{Default: k3}, "")
		if got := links(t, o.h2c+"/vod/test/v360/1.m4s"); !slices.Equal(got, want) {
			t.Errorf("Link %q, want %q", got, want)
		}
	})
	t.Run("rule", func(t *testing.T) {
		o := startOrigin(t, h2push.Config{}, "")
		if err := o.pusher.SaveRules(&h2push.Rules{Version: 1, Targets: map[string]*h2push.Rule{"vod/test": {Strategy: &k3}}}); err != nil {
			t.Fatal(err)
		}
		if got := links(t, o.h2c+"/vod/test/v360/1.m4s"); !slices.Equal(got, want) {
			t.Errorf("Link %q, want %q", got, want)
		}
	})
}
