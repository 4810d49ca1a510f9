package publish

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/source/ingest"
)

const admin = "admin-secret"

// origin is hub + ingest + publishing points behind one test server, on dir.
type origin struct {
	cancel context.CancelFunc
	h      *hub.Hub
	pts    *Points
	srv    *httptest.Server
}

func newOrigin(t *testing.T, dir string) *origin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := hub.New()
	in := ingest.New(ingest.Config{}, nil)
	pts := New(ctx, h, in, dir, nil)
	if err := pts.Restore(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range ingest.Patterns {
		mux.Handle(p, in)
	}
	pts.Routes(mux.Handle, admin)
	srv := httptest.NewServer(mux)
	o := &origin{cancel: cancel, h: h, pts: pts, srv: srv}
	t.Cleanup(func() { o.stop() })
	return o
}

func (o *origin) stop() {
	o.srv.Close()
	o.cancel()
	o.h.Close()
}

func (o *origin) call(t *testing.T, method, path, tok, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, o.srv.URL+path, strings.NewReader(body))
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

func TestAPINeedsTheAdminToken(t *testing.T) {
	o := newOrigin(t, t.TempDir())
	for _, tc := range []struct{ method, path, tok string }{
		{"GET", "/api/channels", ""}, {"GET", "/api/channels", "wrong"},
		{"POST", "/api/channels", ""}, {"DELETE", "/api/channels/x", "admin-secre"},
		{"PATCH", "/api/channels/x", ""}, {"GET", "/api/channels/x", ""},
	} {
		if code, body := o.call(t, tc.method, tc.path, tc.tok, `{"name":"x"}`); code != 401 || !strings.Contains(body, "admin token") {
			t.Errorf("%s %s token %q: %d %s", tc.method, tc.path, tc.tok, code, body)
		}
	}
	if len(o.pts.List()) != 0 {
		t.Error("an unauthenticated request made a channel")
	}
}

func TestAPICreateListChangeDelete(t *testing.T) {
	o := newOrigin(t, t.TempDir())
	code, body := o.call(t, "POST", "/api/channels", admin, `{"name":"news","preset":"pure-live","dvr_window_length":"60s","segment_addressing":"number"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var ch ChannelJSON
	if err := json.Unmarshal([]byte(body), &ch); err != nil {
		t.Fatal(err)
	}
	if ch.IngestURL != o.srv.URL+"/ingest/news" || len(ch.IngestToken) < 32 || ch.DASH != o.srv.URL+"/live/news/manifest.mpd" ||
		ch.HLS != o.srv.URL+"/live/news/master.m3u8" || ch.State != "waiting" || ch.Source != FromAPI {
		t.Errorf("created = %+v", ch)
	}
	if ch.Options.DVRWindowLength != Duration(time.Minute) || ch.Options.ArchiveLength != Duration(2*time.Minute) || !ch.Options.Archiving {
		t.Errorf("options = %+v", ch.Options)
	}
	if _, err := o.h.Channel("news"); err != nil {
		t.Errorf("the hub has no channel news: %v", err)
	}
	// Ingest takes the channel's token and no other.
	if code, _ := o.call(t, "POST", "/ingest/news/Streams(v.cmfv)", "nope", ""); code != 403 {
		t.Errorf("ingest with a wrong token: %d", code)
	}
	if code, body := o.call(t, "POST", "/api/channels", admin, `{"name":"news"}`); code != 409 {
		t.Errorf("second create: %d %s", code, body)
	}
	for name, req := range map[string]string{
		"bad JSON":       `{"name":`,
		"unknown field":  `{"name":"a","dvr_window":"60s"}`,
		"bad name":       `{"name":"a/b"}`,
		"bad duration":   `{"name":"a","dvr_window_length":"forever"}`,
		"trailing data":  `{"name":"a"} {}`,
		"unknown preset": `{"name":"a","preset":"best"}`,
	} {
		if code, body := o.call(t, "POST", "/api/channels", admin, req); code != 400 {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	code, body = o.call(t, "GET", "/api/channels", admin, "")
	var list struct {
		Channels []ChannelJSON `json:"channels"`
		Presets  []string      `json:"presets"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Channels) != 1 || len(list.Presets) != 3 {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body = o.call(t, "PATCH", "/api/channels/news", admin, `{"dvr_window_length":90}`)
	if code != 200 || !strings.Contains(body, `"dvr_window_length": "1m30s"`) {
		t.Fatalf("patch: %d %s", code, body)
	}
	c, err := o.h.Channel("news")
	if err != nil || c.Timeline().TimeShiftBufferDepth != 90*time.Second {
		t.Errorf("the hub's channel was not remade with the new DVR window: %v", err)
	}
	if code, _ := o.call(t, "PATCH", "/api/channels/nope", admin, `{}`); code != 404 {
		t.Errorf("patch of a missing channel: %d", code)
	}
	if code, _ := o.call(t, "DELETE", "/api/channels/news", admin, ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if _, err := o.h.Channel("news"); err == nil {
		t.Error("the hub still has channel news")
	}
	if code, _ := o.call(t, "GET", "/api/channels/news", admin, ""); code != 404 {
		t.Errorf("get after delete: %d", code)
	}
}

// API-made channels come back after a restart with their tokens; configured ones
// are listed and cannot be deleted through the API.
func TestChannelsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	o := newOrigin(t, dir)
	if _, err := o.pts.AddConfigured(Spec{Name: "studio", Token: "studio-token"}); err != nil {
		t.Fatal(err)
	}
	code, body := o.call(t, "POST", "/api/channels", admin, `{"name":"sport","preset":"archive-dvr","segment_duration":4}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var made ChannelJSON
	_ = json.Unmarshal([]byte(body), &made)
	if code, body := o.call(t, "DELETE", "/api/channels/studio", admin, ""); code != 409 || !strings.Contains(body, "configuration") {
		t.Errorf("deleting a configured channel: %d %s", code, body)
	}
	if fi, err := os.Stat(StateFile(dir)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v (it holds tokens: 0600)", fi, err)
	}
	o.stop()

	again := newOrigin(t, dir)
	got, err := again.pts.Get("sport")
	if err != nil {
		t.Fatalf("sport not restored: %v", err)
	}
	if got.Token != made.IngestToken || got.Preset != "archive-dvr" || got.Options.SegmentDuration != Duration(4*time.Second) || got.Options.DVRWindowLength != Duration(time.Hour) {
		t.Errorf("restored = %+v", got)
	}
	if _, err := again.h.Channel("sport"); err != nil {
		t.Errorf("restored point has no hub channel: %v", err)
	}
	if _, err := again.pts.Get("studio"); err == nil {
		t.Error("a configured channel was kept in the state file")
	}
}

func TestAdminTokenGeneratedOnce(t *testing.T) {
	dir := t.TempDir()
	a, err := AdminToken(dir, "")
	if err != nil || len(a) < 32 {
		t.Fatalf("AdminToken = %q, %v", a, err)
	}
	b, _ := AdminToken(dir, "")
	if a != b {
		t.Error("the generated admin token changed between calls")
	}
	if c, _ := AdminToken(dir, "configured"); c != "configured" {
		t.Error("a configured token was not used")
	}
}
