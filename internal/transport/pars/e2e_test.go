package pars

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/testmedia"
)

// realOrigin serves the packaged test asset with the real origin and the index route.
func realOrigin(t *testing.T) (*httptest.Server, *hub.Asset) {
	t.Helper()
	dir := testmedia.Asset(t)
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	cfg := server.DefaultConfig()
	srv := server.New(cfg, h, slog.New(slog.DiscardHandler), nil)
	srv.Handle(IndexPattern, IndexHandler(h))
	s := httptest.NewServer(srv.Handler())
	t.Cleanup(s.Close)
	return s, a
}

func TestIndexHandler(t *testing.T) {
	s, a := realOrigin(t)
	tr := a.Info().Tracks[0]
	resp, err := http.Get(s.URL + "/vod/" + a.Info().Name + "/" + tr.ID + "/index.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ix Index
	if err := json.NewDecoder(resp.Body).Decode(&ix); err != nil || resp.StatusCode != 200 {
		t.Fatalf("index: %s, %v", resp.Status, err)
	}
	if ix.Track != tr.ID || len(ix.Segments) != len(tr.Segments) {
		t.Fatalf("index %+v for %d segments", ix, len(tr.Segments))
	}
	for i, s := range ix.Segments {
		fi, err := os.Stat(filepath.Join(a.Dir(), tr.Segments[i].Path))
		if err != nil || s.Size != fi.Size() || s.Number != tr.Segments[i].Number || s.Time != tr.Segments[i].Start {
			t.Fatalf("index entry %+v, file %v (%v)", s, fi, err)
		}
	}
	for _, bad := range []string{"/vod/none/v/index.json", "/vod/" + a.Info().Name + "/none/index.json"} {
		r, err := http.Get(s.URL + bad)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s, want 404", bad, r.Status)
		}
	}
	// The segment routes still answer beside the index route.
	r, err := http.Get(s.URL + "/vod/" + a.Info().Name + "/" + tr.ID + "/1.m4s")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("segment beside the index route: %s", r.Status)
	}
}

// TestPlayerOverParSAndParallel plays the whole test asset with the player over
// ParS (N=3), ParS auto and Parallel (N=3) against the real origin, and checks every
// segment arrived exactly as a plain GET gets it. The player runs on a simulated
// clock (no real-time waits); the downloads are real.
func TestPlayerOverParSAndParallel(t *testing.T) {
	s, a := realOrigin(t)
	// ParS reassembles exactly: compare every segment of every track with the file.
	c, err := New(Options{Connections: 3, MinRange: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tr := range a.Info().Tracks {
		for _, sg := range tr.Segments {
			u := s.URL + "/vod/" + a.Info().Name + "/" + tr.ID + "/" + filepath.Base(sg.Path)
			resp, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: u, KeepBody: true})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(filepath.Join(a.Dir(), sg.Path))
			if !bytes.Equal(resp.Body, want) {
				t.Fatalf("%s: ParS body differs from the file", u)
			}
		}
	}
	if st := c.Stats(); st.Heads != 0 {
		t.Fatalf("the real origin's index was not used: %+v", st)
	}

	fetchers := map[string]func() (player.Fetcher, func() error){
		"pars-3": func() (player.Fetcher, func() error) {
			c, _ := New(Options{Connections: 3})
			return c, c.Close
		},
		"pars-auto": func() (player.Fetcher, func() error) {
			c, _ := New(Options{Auto: true})
			return c, c.Close
		},
		"parallel-3": func() (player.Fetcher, func() error) {
			p, _ := NewParallel(3, ConnOptions{})
			return p, p.Close
		},
	}
	var wantBytes int64
	for _, name := range []string{"pars-3", "pars-auto", "parallel-3"} {
		t.Run(name, func(t *testing.T) {
			f, closeF := fetchers[name]()
			defer closeF()
			p, err := player.New(player.Config{
				URL: s.URL + "/vod/" + a.Info().Name + "/manifest.mpd", Fetcher: f, Load: dash.Load, ABR: abr.Fixed{TrackID: a.Info().Tracks[1].ID},
				Clock: player.NewSimClock(time.Now()), MaxBuffer: 60 * time.Second, Transport: name,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep, err := p.Run(ctx)
			if err != nil || rep.EndReason != "ended" || rep.StallCount != 0 {
				t.Fatalf("%s: end %s, stalls %d, err %v", name, rep.EndReason, rep.StallCount, err)
			}
			f.(interface{ AddToReport(*qoe.Report) }).AddToReport(&rep)
			if rep.Connections == nil || (name != "pars-auto" && *rep.Connections != 3) {
				t.Fatalf("%s: connections %v in the report", name, rep.Connections)
			}
			if name == "pars-auto" && rep.EstimatorNote == "" {
				t.Fatalf("auto: no estimator note")
			}
			if wantBytes == 0 {
				wantBytes = rep.MediaBytes
			} else if rep.MediaBytes != wantBytes {
				t.Fatalf("%s: %d media bytes, %d with the first transport", name, rep.MediaBytes, wantBytes)
			}
			if rep.WireBytes <= rep.MediaBytes || rep.OverheadSource != "socket" {
				t.Fatalf("%s: wire %d, media %d, overhead from %s", name, rep.WireBytes, rep.MediaBytes, rep.OverheadSource)
			}
		})
	}
}
