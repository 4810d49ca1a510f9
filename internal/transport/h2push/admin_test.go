package h2push_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

const token = "t0ken"

// api calls the admin API and returns the status and body.
func api(t *testing.T, method, url, body, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pushedWith requests path on a new h2c connection and returns what was promised.
func pushedWith(t *testing.T, base, path string) []string {
	t.Helper()
	c := pushclient.New(pushclient.Options{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Get(ctx, base+path)
	if err != nil || s.Status != 200 {
		t.Fatalf("GET %s: %v", path, err)
	}
	var out []string
	for _, p := range c.Pending() {
		out = append(out, pathOf(p.URL))
	}
	slices.Sort(out)
	return out
}

func TestAdminNeedsToken(t *testing.T) {
	o := startOrigin(t, h2push.Config{AdminToken: token}, "")
	for _, u := range []string{"/admin/push", "/admin/push/api/rules", "/admin/push/api/targets"} {
		if code, _ := api(t, "GET", o.h2c+u, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d", u, code)
		}
		if code, _ := api(t, "GET", o.h2c+u, "", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d", u, code)
		}
	}
	if code, _ := api(t, "PUT", o.h2c+"/admin/push/api/rules", `{"targets":{}}`, ""); code != http.StatusUnauthorized {
		t.Errorf("PUT without token: %d", code)
	}
	code, body := api(t, "GET", o.h2c+"/admin/push?token="+token, "", "")
	if code != 200 || !strings.Contains(body, "push rules") {
		t.Errorf("the page with ?token=: %d", code)
	}
	// No token configured: the page is off for everyone.
	off := startOrigin(t, h2push.Config{}, "")
	if code, body := api(t, "GET", off.h2c+"/admin/push/api/rules", "", ""); code != http.StatusUnauthorized || !strings.Contains(body, "admin_token") {
		t.Errorf("no token configured: %d %s", code, body)
	}
}

func TestAdminDiscoversResources(t *testing.T) {
	o := startOrigin(t, h2push.Config{AdminToken: token}, "")
	code, body := api(t, "GET", o.h2c+"/admin/push/api/resources?target=vod/test", "", token)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var doc struct {
		Resources []h2push.Pushable `json:"resources"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range doc.Resources {
		paths = append(paths, r.Path)
	}
	for _, want := range []string{"/vod/test/manifest.mpd", "/vod/test/a64/init.mp4", "/vod/test/v360/init.mp4", "/vod/test/v180/1.m4s", "/vod/test/a64/4.m4s"} {
		if !slices.Contains(paths, want) {
			t.Errorf("resources lack %s: %v", want, paths)
		}
	}
	if len(paths) != 3+3+12 {
		t.Errorf("%d resources, want 3 manifests, 3 inits and 12 segments", len(paths))
	}
	if code, _ := api(t, "GET", o.h2c+"/admin/push/api/resources?target=vod/nope", "", token); code != http.StatusNotFound {
		t.Errorf("unknown asset: %d", code)
	}
	if code, _ := api(t, "GET", o.h2c+"/admin/push/api/resources?target=../etc", "", token); code != http.StatusBadRequest {
		t.Errorf("bad target: %d", code)
	}
}

func TestAdminRefusesInvalidRules(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.json")
	o := startOrigin(t, h2push.Config{AdminToken: token}, rules)
	for _, tc := range []struct {
		target, body, msg string
	}{
		{"vod/test", `{"push":["/vod/test/v180/99.m4s"]}`, "no such segment"},
		{"vod/test", `{"push":["/vod/test/v999/init.mp4"]}`, "no track"},
		{"vod/test", `{"push":["/vod/other/a64/init.mp4"]}`, "outside /vod/test/"},
		{"vod/test", `{"push":["/vod/test/../../etc/passwd"]}`, "not a clean absolute path"},
		{"vod/test", `{"push":["/etc/passwd"]}`, "outside"},
		{"vod/test", `{"strategy":"k0"}`, "push strategy"},
		{"vod/test", `{"strategy":"all","extra":1}`, "unknown field"},
		{"vod/nope", `{"strategy":"all"}`, "no such asset"},
		{"live/loop", `{"push":["/live/loop/v180/5.m4s"]}`, "live segments"},
		{"page:/", `{"push":["/missing.js"]}`, "nor a file of the page"},
		{"page:/", `{"strategy":"init"}`, "no strategy of its own"},
		{"nonsense", `{}`, "target"},
	} {
		code, body := api(t, "PUT", o.h2c+"/admin/push/api/rule?target="+tc.target, tc.body, token)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.msg) {
			t.Errorf("%s %s: %d %s; want 400 with %q", tc.target, tc.body, code, body, tc.msg)
		}
	}
	if _, err := os.Stat(rules); !os.IsNotExist(err) {
		t.Errorf("refused rules were written: %v", err)
	}
	if got := pushedWith(t, o.h2c, "/vod/test/manifest.mpd"); len(got) != 0 {
		t.Errorf("refused rules are in force: %v", got)
	}
}

// TestRulesApplyAtOnceAndSurviveRestart saves rules through the API and checks that
// the next request follows them, on this origin and on a new one reading the file.
func TestRulesApplyAtOnceAndSurviveRestart(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "h2push", "rules.json")
	o := startOrigin(t, h2push.Config{AdminToken: token}, rules)
	if got := pushedWith(t, o.h2c, "/vod/test/manifest.mpd"); len(got) != 0 {
		t.Fatalf("before any rule: %v", got)
	}
	code, body := api(t, "PUT", o.h2c+"/admin/push/api/rule?target=vod/test",
		`{"push":["/vod/test/a64/init.mp4","/vod/test/v360/init.mp4"]}`, token)
	if code != 200 {
		t.Fatalf("save: %d %s", code, body)
	}
	want := []string{"/vod/test/a64/init.mp4", "/vod/test/v360/init.mp4"}
	if got := pushedWith(t, o.h2c, "/vod/test/manifest.mpd"); !slices.Equal(got, want) {
		t.Errorf("after saving: pushed %v, want %v", got, want)
	}
	// A strategy in the rule applies to the stream's requests; ?push= still wins.
	if code, body := api(t, "PUT", o.h2c+"/admin/push/api/rule?target=vod/test", `{"strategy":"k2"}`, token); code != 200 {
		t.Fatalf("save: %d %s", code, body)
	}
	if got := pushedWith(t, o.h2c, "/vod/test/v180/1.m4s"); !slices.Equal(got, []string{"/vod/test/v180/2.m4s"}) {
		t.Errorf("k2 by rule: %v", got)
	}
	if got := pushedWith(t, o.h2c, "/vod/test/v180/1.m4s?push=none"); len(got) != 0 {
		t.Errorf("?push=none under a k2 rule: %v", got)
	}
	if code, body := api(t, "PUT", o.h2c+"/admin/push/api/rule?target=page:/", `{"push":["/vod/test/manifest.mpd"]}`, token); code != 200 {
		t.Fatalf("page rule: %d %s", code, body)
	}
	code, body = api(t, "GET", o.h2c+"/admin/push/api/rules", "", token)
	if code != 200 || !strings.Contains(body, `"k2"`) || !strings.Contains(body, `"page:/"`) {
		t.Fatalf("rules: %d %s", code, body)
	}
	o.stop()

	// A new origin reads the file: the rules are in force without any request to the API.
	again := startOrigin(t, h2push.Config{AdminToken: token}, rules)
	if got := pushedWith(t, again.h2c, "/vod/test/v360/2.m4s"); !slices.Equal(got, []string{"/vod/test/v360/3.m4s"}) {
		t.Errorf("after a restart: %v", got)
	}
	if got := pushedWith(t, again.h2c, "/"); !slices.Contains(got, "/vod/test/manifest.mpd") {
		t.Errorf("page rule after a restart: %v", got)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(rules), ".rules.json.tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	if code, _ := api(t, "DELETE", again.h2c+"/admin/push/api/rule?target=vod/test", "", token); code != 200 {
		t.Errorf("delete: %d", code)
	}
	if got := pushedWith(t, again.h2c, "/vod/test/v360/2.m4s"); len(got) != 0 {
		t.Errorf("after deleting the rule: %v", got)
	}
}
