package pars

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/testmedia"
)

// leanOrigin serves the test asset as `streambed serve` does on its plain-HTTP
// listener: server.Serve, with the lean HTTP/1.1 path in front of net/http, and the
// segment index route.
func leanOrigin(t *testing.T) (base string, a *hub.Asset) {
	t.Helper()
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	cfg := server.DefaultConfig()
	cfg.HTTPS = ""
	srv := server.New(cfg, h, slog.New(slog.DiscardHandler), nil)
	srv.Handle(IndexPattern, IndexHandler(h))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, &server.Listeners{HTTP: ln}) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String(), a
}

// TestLeanOriginAnswersPipelinedRanges: the origin's plain-HTTP listener answers
// three range requests written in one go, before any answer was read, in order and
// each with its bytes (what pipelined ParS relies on); and ParS with two requests per
// HTTP/1.1 connection fetches every segment of the asset byte for byte from it.
func TestLeanOriginAnswersPipelinedRanges(t *testing.T) {
	base, a := leanOrigin(t)
	tr := a.Info().Tracks[0]
	seg := tr.Segments[0]
	file, err := os.ReadFile(filepath.Join(a.Dir(), seg.Path))
	if err != nil || len(file) < 3000 {
		t.Fatalf("segment file: %d bytes, %v", len(file), err)
	}
	path := "/vod/" + a.Info().Name + "/" + tr.ID + "/" + filepath.Base(seg.Path)
	ranges := []Range{{Off: 0, Len: 1000}, {Off: 1000, Len: 1000}, {Off: 2000, Len: int64(len(file)) - 2000}}
	nc, err := net.Dial("tcp", base[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var reqs bytes.Buffer
	for _, r := range ranges {
		fmt.Fprintf(&reqs, "GET %s HTTP/1.1\r\nHost: origin\r\nRange: %s\r\n\r\n", path, r.Header())
	}
	if _, err := nc.Write(reqs.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	for i, r := range ranges {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, file[r.Off:r.End()]) {
			t.Fatalf("response %d to %s: %s, %d bytes, %v", i, r.Header(), resp.Status, len(b), err)
		}
	}

	c := pipelinedClient(t, 4, 2, func(o *Options) { o.MinRange = 1024 })
	// The manifest over a pipelined connection (asked with gzip, which the origin
	// compresses) is the manifest net/http's client gets.
	mpd := base + "/vod/" + a.Info().Name + "/manifest.mpd"
	got, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestManifest, URL: mpd, KeepBody: true})
	if err != nil {
		t.Fatal(err)
	}
	zreq, _ := http.NewRequest(http.MethodGet, mpd, nil)
	zreq.Header.Set("Accept-Encoding", "gzip")
	zresp, err := (&http.Transport{DisableCompression: true}).RoundTrip(zreq)
	if err != nil {
		t.Fatal(err)
	}
	zresp.Body.Close()
	if zresp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("the origin did not compress the manifest (%q): this check needs it", zresp.Header.Get("Content-Encoding"))
	}
	plain, err := http.Get(mpd)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(plain.Body)
	plain.Body.Close()
	if !bytes.Equal(got.Body, want) || len(want) == 0 || got.PayloadBytes != int64(len(want)) {
		t.Fatalf("manifest over the pipelined connection: %d bytes, want %d", len(got.Body), len(want))
	}
	for _, sg := range tr.Segments {
		u := base + "/vod/" + a.Info().Name + "/" + tr.ID + "/" + filepath.Base(sg.Path)
		resp, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: u, Number: sg.Number, KeepBody: true})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(a.Dir(), sg.Path))
		if !bytes.Equal(resp.Body, want) {
			t.Fatalf("%s: ParS body differs from the file", u)
		}
	}
	if st := c.Stats(); st.Retries != 0 || st.Heads != 0 {
		t.Errorf("stats %+v: retries, or the index was not used", st)
	}
}
