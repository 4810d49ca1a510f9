package player_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// avMPD is 0.8 s of video and audio in 200 ms segments.
const avMPD = `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT0.8S" minBufferTime="PT0.2S">
 <Period>
  <AdaptationSet contentType="video" mimeType="video/mp4">
   <SegmentTemplate timescale="1000" duration="200" startNumber="1" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
   <Representation id="v1" bandwidth="500000"/>
  </AdaptationSet>
  <AdaptationSet contentType="audio" mimeType="audio/mp4">
   <SegmentTemplate timescale="1000" duration="200" startNumber="1" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
   <Representation id="a1" bandwidth="64000"/>
  </AdaptationSet>
 </Period>
</MPD>`

// avOrigin serves avMPD over HTTP/1.1 and h2c; each media segment takes 40 ms to
// answer. It counts the media requests it serves at once and the connections.
//
// With meet set, the first media request is held until a second one is in flight
// (or 10 s pass), so a client that can download audio and video at once is seen to
// do so however the machine schedules its goroutines; one that cannot leaves the
// first request alone and the test sees one in flight.
type avOrigin struct {
	*httptest.Server
	inflight, maxInflight, conns atomic.Int32

	meet      bool
	first     atomic.Bool
	twoOnce   sync.Once
	twoInside chan struct{} // closed when two media requests are in flight at once
}

func newAVOrigin(t *testing.T, meet bool) *avOrigin {
	o := &avOrigin{meet: meet, twoInside: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/vod/av/manifest.mpd", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, avMPD) })
	mux.HandleFunc("/vod/av/{rep}/{file}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("file") == "init.mp4" {
			w.Write(make([]byte, 700))
			return
		}
		n := o.inflight.Add(1)
		for {
			m := o.maxInflight.Load()
			if n <= m || o.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		if n >= 2 {
			o.twoOnce.Do(func() { close(o.twoInside) })
		}
		if o.meet && o.first.CompareAndSwap(false, true) {
			select {
			case <-o.twoInside:
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
		}
		time.Sleep(40 * time.Millisecond)
		o.inflight.Add(-1)
		w.Write(make([]byte, 4000))
	})
	o.Server = httptest.NewUnstartedServer(mux)
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	o.Config.Protocols = p
	o.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.Start()
	t.Cleanup(o.Close)
	return o
}

// TestConcurrentDownloadsOverHTTP plays over real HTTP on the real clock (run it with
// -race): audio and video requests overlap, on two HTTP/1.1 connections or multiplexed
// on one HTTP/2 connection; Sequential keeps one request in flight.
//
// What it asserts does not depend on how busy the machine is: the origin holds the
// first media request until a second arrives (newAVOrigin), so "two in flight" is
// seen whenever the client can do it, and the player never asks for more than one per
// stream; a sequential player never has two. Stalls on the real clock depend on
// scheduling, so they are logged here; the simulated-clock tests
// (TestStartupWithTwoStreamsTakesOneDownload, schedule_test.go) assert that the same
// schedule plays without one.
func TestConcurrentDownloadsOverHTTP(t *testing.T) {
	for _, proto := range []httppull.Protocol{httppull.HTTP1, httppull.H2C} {
		for _, seq := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sequential=%v", proto, seq), func(t *testing.T) {
				o := newAVOrigin(t, !seq)
				c, err := httppull.NewClient(httppull.ClientOptions{Protocol: proto})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				p, err := player.New(player.Config{URL: o.URL + "/vod/av/manifest.mpd", Fetcher: c, Load: dash.Load,
					Sequential: seq, RequestTimeout: 10 * time.Second, Transport: string(proto)})
				if err != nil {
					t.Fatal(err)
				}
				// A progress printer reads the player while it runs.
				done := make(chan struct{})
				polls := make(chan int)
				go func() {
					n := 0
					for {
						select {
						case <-done:
							polls <- n
							return
						case <-time.After(5 * time.Millisecond):
							if st := p.Status(); st.State != "" {
								n++
							}
						}
					}
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				rep, err := p.Run(ctx)
				close(done)
				if n := <-polls; n == 0 {
					t.Errorf("Status was never read")
				}
				if err != nil {
					t.Fatal(err)
				}
				if rep.EndReason != "ended" || rep.Requests != 11 || rep.MediaRequests != 8 || rep.Errors != 0 {
					t.Errorf("end %s, requests %d (%d media), errors %d; want ended, 11 (8), 0",
						rep.EndReason, rep.Requests, rep.MediaRequests, rep.Errors)
				}
				if rep.PerTrackS["v1"] < 0.79 || rep.PerTrackS["a1"] < 0.79 {
					t.Errorf("per track %v", rep.PerTrackS)
				}
				maxIn, conns := o.maxInflight.Load(), o.conns.Load()
				switch {
				case seq && maxIn != 1:
					t.Errorf("sequential: %d media requests in flight at once, want 1", maxIn)
				case !seq && maxIn != 2:
					t.Errorf("concurrent: at most %d media requests in flight at once, want 2 (audio and video)", maxIn)
				case !seq && proto == httppull.HTTP1 && conns < 2:
					t.Errorf("HTTP/1.1: %d connections for concurrent audio and video, want 2 or more", conns)
				case proto == httppull.H2C && conns != 1:
					t.Errorf("h2c: %d connections, want 1 (multiplexed)", conns)
				}
				t.Logf("%s %s: start-up %.0f ms, %d media requests in flight at most, %d connections, %d stalls (%.0f ms; not asserted on the real clock)",
					proto, map[bool]string{false: "concurrent", true: "sequential"}[seq], *rep.StartupDelayMS, maxIn, conns, rep.StallCount, rep.StallMS)
			})
		}
	}
}
