package httppull

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/netutil"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/source/looplive"
)

// origin is a tiny stand-in for the real origin's URL contract:
//
//	/vod/demo/manifest.mpd   static, $Number$ from 1, "$RepresentationID$/$Number$.m4s"
//	/live/demo/manifest.mpd  dynamic, $Number$ from 0, segment n available at AST+(n+1)·D
//	/time                    UTCTiming http-iso, on a server clock that runs `skew` ahead
//
// Segments are fake bytes of known sizes: the player downloads, it does not decode.
type origin struct {
	segDur   time.Duration
	segments int // on demand
	skew     time.Duration
	ast      time.Time // live, server clock
	reps     []testRep

	wire netutil.Counter // server-side socket bytes
}

type testRep struct {
	id   string
	kind media.Kind
	bps  int
}

const initSize = 700

func (o *origin) segSize(r testRep, n uint64) int {
	return int(float64(r.bps)*o.segDur.Seconds()/8) + int(n)
}

func (o *origin) now() time.Time { return time.Now().Add(o.skew) }

func (o *origin) rep(id string) (testRep, bool) {
	for _, r := range o.reps {
		if r.id == id {
			return r, true
		}
	}
	return testRep{}, false
}

func (o *origin) mpd(live bool) string {
	ms := o.segDur.Milliseconds()
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	if live {
		fmt.Fprintf(&b, `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" availabilityStartTime="%s" publishTime="%s" minimumUpdatePeriod="PT1S" timeShiftBufferDepth="PT10S" suggestedPresentationDelay="PT%.3fS" minBufferTime="PT1S">`,
			o.ast.UTC().Format(time.RFC3339Nano), o.now().UTC().Format(time.RFC3339), 3*o.segDur.Seconds())
	} else {
		fmt.Fprintf(&b, `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT%.3fS" minBufferTime="PT1S">`,
			(time.Duration(o.segments) * o.segDur).Seconds())
	}
	start := 1
	if live {
		start = 0
	}
	b.WriteString(`<Period id="0" start="PT0S">`)
	for _, kind := range []media.Kind{media.Video, media.Audio} {
		fmt.Fprintf(&b, `<AdaptationSet contentType="%s" mimeType="%s/mp4"><SegmentTemplate timescale="1000" duration="%d" startNumber="%d" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>`,
			kind, kind, ms, start)
		for _, r := range o.reps {
			if r.kind == kind {
				fmt.Fprintf(&b, `<Representation id="%s" bandwidth="%d"/>`, r.id, r.bps)
			}
		}
		b.WriteString(`</AdaptationSet>`)
	}
	b.WriteString(`</Period>`)
	if live {
		b.WriteString(`<UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="/time"/>`)
	}
	b.WriteString(`</MPD>`)
	return b.String()
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/time":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, o.now().UTC().Format("2006-01-02T15:04:05.000Z"))
	case len(parts) == 3 && parts[2] == "manifest.mpd":
		w.Header().Set("Content-Type", "application/dash+xml")
		fmt.Fprint(w, o.mpd(parts[0] == "live"))
	case len(parts) == 4 && (parts[0] == "vod" || parts[0] == "live"):
		rep, ok := o.rep(parts[2])
		if !ok {
			http.NotFound(w, r)
			return
		}
		if parts[3] == "init.mp4" {
			w.Write(make([]byte, initSize))
			return
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(parts[3], ".m4s"), 10, 64)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if parts[0] == "live" {
			tl := looplive.Schedule{Start: o.ast, SegmentDuration: o.segDur, DVRWindow: 10 * time.Second}
			switch err := tl.Check(n, o.now()); {
			case errors.Is(err, media.ErrGone):
				http.Error(w, err.Error(), http.StatusGone)
				return
			case err != nil:
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
		} else if n < 1 || n > uint64(o.segments) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(make([]byte, o.segSize(rep, n)))
	default:
		http.NotFound(w, r)
	}
}

// counting wraps the server's listener so the test sees the server side of the wire.
type countingListener struct {
	net.Listener
	o *origin
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return netutil.NewCountingConn(c, &l.o.wire), nil
}

func newOrigin() *origin {
	return &origin{
		segDur: 200 * time.Millisecond, segments: 4,
		reps: []testRep{{"v1", media.Video, 400_000}, {"v2", media.Video, 1_200_000}, {"a1", media.Audio, 64_000}},
	}
}

// start serves o over proto: http1 (HTTP/1.1 only), h2c (HTTP/1.1 and h2c) or h2 (TLS).
func start(t *testing.T, o *origin, proto Protocol) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(o)
	s.Listener = countingListener{Listener: s.Listener, o: o}
	switch proto {
	case HTTP1:
		s.Start()
	case H2C:
		p := new(http.Protocols)
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		s.Config.Protocols = p
		s.Start()
	case H2:
		s.EnableHTTP2 = true
		s.StartTLS()
	}
	t.Cleanup(s.Close)
	return s
}

var protocols = []Protocol{HTTP1, H2C, H2}

func TestFetch(t *testing.T) {
	for _, proto := range protocols {
		t.Run(string(proto), func(t *testing.T) {
			o := newOrigin()
			s := start(t, o, proto)
			c, err := NewClient(ClientOptions{Protocol: proto, Insecure: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			resp, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: s.URL + "/vod/demo/v2/3.m4s", TrackID: "v2", Number: 3})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(o.segSize(o.reps[1], 3))
			if resp.PayloadBytes != want || resp.Body != nil {
				t.Errorf("payload %d (body kept: %v), want %d", resp.PayloadBytes, resp.Body != nil, want)
			}
			wantProto := map[Protocol]string{HTTP1: "HTTP/1.1", H2C: "HTTP/2.0", H2: "HTTP/2.0"}[proto]
			if resp.Protocol != wantProto || c.Protocol() != wantProto {
				t.Errorf("protocol %q, want %q", resp.Protocol, wantProto)
			}
			if resp.End.Before(resp.FirstByte) || resp.FirstByte.Before(resp.Start) {
				t.Errorf("timings out of order: %v %v %v", resp.Start, resp.FirstByte, resp.End)
			}
			if resp.OverheadBytes <= 0 {
				t.Errorf("overhead %d", resp.OverheadBytes)
			}
			rd, wr := c.WireBytes()
			if rd+wr <= want {
				t.Errorf("wire bytes %d ≤ payload", rd+wr)
			}
			// The client's socket count equals the server's, byte for byte.
			waitEqual(t, func() (int64, int64) { return rd + wr, serverWire(o) })
			if proto == HTTP1 {
				// One request on a fresh cleartext connection: wire = payload + overhead exactly.
				if !resp.OverheadExact || resp.OverheadBytes != rd+wr-want {
					t.Errorf("HTTP/1.1 overhead %d (exact %v), want %d", resp.OverheadBytes, resp.OverheadExact, rd+wr-want)
				}
				if resp.OverheadBytes < 100 || resp.OverheadBytes > 400 {
					t.Errorf("HTTP/1.1 request and response headers of %d bytes?", resp.OverheadBytes)
				}
			} else if resp.OverheadExact {
				t.Errorf("HTTP/2 overhead claims to be exact")
			}
			// A kept body.
			resp, err = c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestManifest, URL: s.URL + "/vod/demo/manifest.mpd", KeepBody: true})
			if err != nil || !strings.Contains(string(resp.Body), "<MPD") || resp.PayloadBytes != int64(len(resp.Body)) {
				t.Errorf("manifest: %v, %d bytes", err, resp.PayloadBytes)
			}
		})
	}
}

// waitEqual polls until a and b agree (the server counts a write after the client has
// read it) or fails after a second.
func waitEqual(t *testing.T, f func() (int64, int64)) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		a, b := f()
		if a == b {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("client counted %d bytes on the wire, server %d", a, b)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFetchErrors(t *testing.T) {
	o := newOrigin()
	o.ast = o.now().Add(-30 * time.Second)
	s := start(t, o, HTTP1)
	c, _ := NewClient(ClientOptions{Protocol: HTTP1})
	tests := []struct {
		url  string
		want error
	}{
		{s.URL + "/vod/demo/v1/99.m4s", media.ErrNotFound},
		{s.URL + "/live/demo/v1/1000.m4s", media.ErrNotFound}, // not yet: the origin answers 404
		{s.URL + "/live/demo/v1/1.m4s", media.ErrGone},        // left the 10 s window
	}
	for _, tc := range tests {
		_, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: tc.url})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.url, err, tc.want)
		}
	}
	h2c, _ := NewClient(ClientOptions{Protocol: H2C})
	if _, err := h2c.Fetch(context.Background(), player.SegmentRequest{URL: "https://example.com/x"}); err == nil {
		t.Errorf("h2c accepted an https URL")
	}
	h2, _ := NewClient(ClientOptions{Protocol: H2})
	if _, err := h2.Fetch(context.Background(), player.SegmentRequest{URL: s.URL + "/time"}); err == nil {
		t.Errorf("h2 accepted an http URL")
	}
	if _, err := NewClient(ClientOptions{Protocol: "spdy"}); err == nil {
		t.Errorf("unknown protocol accepted")
	}
	// h2c against a server that speaks only HTTP/1.1 fails rather than falling back.
	if _, err := h2c.Fetch(context.Background(), player.SegmentRequest{URL: s.URL + "/time"}); err == nil {
		t.Errorf("h2c prior knowledge against an HTTP/1.1-only server succeeded")
	}
}

func TestPlayVOD(t *testing.T) {
	for _, proto := range protocols {
		t.Run(string(proto), func(t *testing.T) {
			o := newOrigin()
			s := start(t, o, proto)
			c, err := NewClient(ClientOptions{Protocol: proto, Insecure: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			u := s.URL + "/vod/demo/manifest.mpd"
			p, err := player.New(player.Config{URL: u, Fetcher: c, Load: dash.Load, ABR: abr.Fixed{TrackID: "v2"}, Transport: string(proto)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// manifest + 2 inits + 4 video + 4 audio segments
			wantPayload := int64(len(o.mpd(false))) + 2*initSize
			for n := uint64(1); n <= 4; n++ {
				wantPayload += int64(o.segSize(o.reps[1], n) + o.segSize(o.reps[2], n))
			}
			if rep.Requests != 11 || rep.MediaRequests != 8 || rep.PayloadBytes != wantPayload {
				t.Errorf("requests %d (%d media), payload %d; want 11 (8), %d", rep.Requests, rep.MediaRequests, rep.PayloadBytes, wantPayload)
			}
			if rep.EndReason != "ended" || rep.StartupDelayMS == nil || rep.PlayedS < 0.79 || rep.PlayedS > 0.81 {
				t.Errorf("end %s, start-up %v, played %v", rep.EndReason, rep.StartupDelayMS, rep.PlayedS)
			}
			if rep.PerTrackS["v2"] < 0.79 || rep.AvgBitrateKbps != 1200 || rep.Switches != 0 {
				t.Errorf("per track %v, bitrate %v, switches %d", rep.PerTrackS, rep.AvgBitrateKbps, rep.Switches)
			}
			if rep.OverheadSource != "socket" || rep.WireBytes != rep.PayloadBytes+rep.OverheadBytes || rep.OverheadBytes <= 0 {
				t.Errorf("overhead %d from %s, wire %d", rep.OverheadBytes, rep.OverheadSource, rep.WireBytes)
			}
			waitEqual(t, func() (int64, int64) { return rep.WireBytes, serverWire(o) })
			if rep.ThroughputKbps <= 0 || rep.Protocol == "" || rep.Transport != string(proto) {
				t.Errorf("throughput %v, protocol %q, transport %q", rep.ThroughputKbps, rep.Protocol, rep.Transport)
			}
			t.Logf("%s: %s wire %d = payload %d + overhead %d (per-request %d)", proto, rep.Protocol, rep.WireBytes, rep.PayloadBytes, rep.OverheadBytes, rep.HeaderEstimateB)
		})
	}
}

func TestPlayLive(t *testing.T) {
	for _, proto := range []Protocol{HTTP1, H2C} {
		t.Run(string(proto), func(t *testing.T) {
			o := newOrigin()
			o.segDur = 400 * time.Millisecond
			o.skew = 2 * time.Second // the origin's clock is ahead: only UTCTiming makes this play
			o.ast = o.now().Add(-20 * time.Second)
			s := start(t, o, proto)
			c, _ := NewClient(ClientOptions{Protocol: proto})
			defer c.Close()
			p, err := player.New(player.Config{URL: s.URL + "/live/demo/manifest.mpd", Fetcher: c, Load: dash.Load, Duration: 2500 * time.Millisecond, Transport: string(proto)})
			if err != nil {
				t.Fatal(err)
			}
			// A progress printer reads the player while it runs (-race checks the locking).
			done := make(chan struct{})
			polled := make(chan int)
			go func() {
				n := 0
				for {
					select {
					case <-done:
						polled <- n
						return
					case <-time.After(10 * time.Millisecond):
						if st := p.Status(); st.State == "playing" && st.Latency != nil {
							n++
						}
					}
				}
			}()
			rep, err := p.Run(context.Background())
			close(done)
			if n := <-polled; n == 0 {
				t.Errorf("Status never showed live playback")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Live || rep.EndReason != "duration" || rep.PlayedS < 1 {
				t.Fatalf("live %v, end %s, played %v", rep.Live, rep.EndReason, rep.PlayedS)
			}
			// The origin's clock is exactly 2 s ahead. The player's estimate can be off by
			// at most half the /time round trip (where in it the origin stamped its
			// time), which it reports: hold it to that, not to a fixed ± that a loaded
			// machine's round trip can exceed. 1 ms: the origin stamps whole milliseconds.
			if rep.ClockSlackMS == nil {
				t.Errorf("no clock offset slack reported (clock source %q)", rep.ClockSource)
			} else if d := math.Abs(rep.ClockOffsetMS - 2000); d > *rep.ClockSlackMS+1 {
				t.Errorf("clock offset %v ms, want 2000 ± %v (half the /time round trip)", rep.ClockOffsetMS, *rep.ClockSlackMS)
			}
			// Delay 3 segments (1.2 s) behind the edge, plus up to a segment in production,
			// plus start-up; generous bounds for a loaded CI machine.
			if rep.LatencyMS == nil || *rep.LatencyMS < 1000 || *rep.LatencyMS > 3500 {
				t.Errorf("latency %v ms", rep.LatencyMS)
			}
			if rep.Errors > 3 {
				t.Errorf("%d failed requests: segments requested before they were available?", rep.Errors)
			}
			t.Logf("%s: start-up %.0f ms, latency %.0f ms, clock offset %.1f ± %.1f ms, stalls %d, requests %d, errors %d", proto, *rep.StartupDelayMS, *rep.LatencyMS, rep.ClockOffsetMS, ptrOr(rep.ClockSlackMS), rep.StallCount, rep.Requests, rep.Errors)
		})
	}
}

func ptrOr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func serverWire(o *origin) int64 {
	r, w := o.wire.Bytes()
	return r + w
}
