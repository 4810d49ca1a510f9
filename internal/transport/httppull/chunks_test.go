package httppull

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/player"
)

// TestChunkedResponseIsReportedChunkByChunk: an LL-DASH origin writes a segment in
// progress one chunk at a time; each chunk is reported while the response is still
// open (the server writes the next chunk only after the report of the previous one),
// for every protocol.
func TestChunkedResponseIsReportedChunkByChunk(t *testing.T) {
	const chunks = 4
	var parts [][]byte
	for i := range chunks {
		var b []byte
		if i == 0 {
			b = cmaf.StypBox()
		}
		b, err := cmaf.AppendFragment(b, uint32(i+1), 1, uint64(i)*40, []cmaf.Sample{{Duration: 40, Size: 3, Data: []byte{1, 2, byte(i)}}})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, b)
	}
	for _, proto := range []Protocol{HTTP1, H2C} {
		t.Run(string(proto), func(t *testing.T) {
			reported := make(chan player.Chunk, chunks)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i, p := range parts {
					w.Write(p)
					w.(http.Flusher).Flush()
					if i+1 < len(parts) {
						select {
						case <-reported:
						case <-r.Context().Done():
							return
						}
					}
				}
			}))
			srv.Config.Protocols = new(http.Protocols)
			srv.Config.Protocols.SetHTTP1(true)
			srv.Config.Protocols.SetUnencryptedHTTP2(true)
			srv.Start()
			defer srv.Close()
			c, err := NewClient(ClientOptions{Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got []player.Chunk
			c.SetChunkSink(func(ch player.Chunk) {
				got = append(got, ch)
				reported <- ch
			})
			req := player.SegmentRequest{Kind: player.RequestMedia, URL: srv.URL + "/live/c/v1/7.m4s", TrackID: "v1", Number: 7, Chunks: true}
			resp, err := c.Fetch(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != chunks {
				t.Fatalf("%d reports, want %d", len(got), chunks)
			}
			for i, ch := range got {
				if ch.Request != req || ch.Decoded != uint64(i+1)*40 || ch.Last != 40 {
					t.Errorf("report %d: %+v", i, ch)
				}
			}
			var total int64
			for _, p := range parts {
				total += int64(len(p))
			}
			if resp.PayloadBytes != total {
				t.Errorf("payload %d bytes, want %d", resp.PayloadBytes, total)
			}
		})
	}
}

func TestNonCMAFBodyIsReadWholeWithoutReports(t *testing.T) {
	const body = "this is not an ISO BMFF box at all, but the body must still be read"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body))
	}))
	defer srv.Close()
	c, err := NewClient(ClientOptions{Protocol: HTTP1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	c.SetChunkSink(func(player.Chunk) { n++ })
	resp, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: srv.URL + "/x.m4s", Chunks: true})
	if err != nil || resp.PayloadBytes != int64(len(body)) || n != 0 {
		t.Fatalf("payload %v, %d reports, %v", resp, n, err)
	}
}

func TestNoChunkReportsUnlessAsked(t *testing.T) {
	seg, err := cmaf.AppendFragment(cmaf.StypBox(), 1, 1, 0, []cmaf.Sample{{Duration: 40, Size: 1, Data: []byte{1}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(seg) }))
	defer srv.Close()
	c, err := NewClient(ClientOptions{Protocol: HTTP1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	c.SetChunkSink(func(player.Chunk) { n++ })
	if _, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: srv.URL + "/1.m4s"}); err != nil || n != 0 {
		t.Fatalf("%d reports for a request that did not ask (whole segments: VOD, non-low-latency live), %v", n, err)
	}
}
