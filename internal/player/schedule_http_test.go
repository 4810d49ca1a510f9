package player_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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
type avOrigin struct {
	*httptest.Server
	inflight, maxInflight, conns atomic.Int32
}

func newAVOrigin(t *testing.T) *avOrigin {
	o := &avOrigin{}
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
func TestConcurrentDownloadsOverHTTP(t *testing.T) {
	for _, proto := range []httppull.Protocol{httppull.HTTP1, httppull.H2C} {
		for _, seq := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sequential=%v", proto, seq), func(t *testing.T) {
				o := newAVOrigin(t)
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
				if rep.EndReason != "ended" || rep.Requests != 11 || rep.MediaRequests != 8 || rep.Errors != 0 || rep.StallCount != 0 {
					t.Errorf("end %s, requests %d (%d media), errors %d, stalls %d; want ended, 11 (8), 0, 0",
						rep.EndReason, rep.Requests, rep.MediaRequests, rep.Errors, rep.StallCount)
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
				t.Logf("%s %s: start-up %.0f ms, %d media requests in flight at most, %d connections",
					proto, map[bool]string{false: "concurrent", true: "sequential"}[seq], *rep.StartupDelayMS, maxIn, conns)
			})
		}
	}
}
