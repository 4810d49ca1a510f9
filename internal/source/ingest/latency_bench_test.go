package ingest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
)

// BenchmarkIngestToServable measures how long a chunk takes from the encoder's
// socket to being servable, at 1 and 10 channels ingesting at once in real time:
// each channel is one long-running POST over loopback carrying one-frame chunks of
// 10 kB (2 Mbit/s of 25 fps video, a keyframe every 50 frames: 2 s segments), paced
// at 25 chunks a second. b.N is the number of chunks per channel.
//
//   - push: from the moment the encoder starts writing a chunk to the moment a hub
//     subscriber (what a WebSocket push session reads) holds it;
//   - pull: from the moment the encoder starts writing the chunk that completes a
//     segment (the next segment's first: an encoder says a segment ended only by
//     starting the next) to the moment the hub answers a reader waiting for that
//     segment (Await: when a GET stops being 404).
//
// Both include the HTTP/1.1 chunked transfer on loopback, the box parsing and the
// hub's append; they exclude the reader's own HTTP response. Reported as p50/p99 in
// milliseconds (docs/results/ingest.md has a run and its command):
//
//	go test ./internal/source/ingest -run '^$' -bench IngestToServable -benchtime 500x
func BenchmarkIngestToServable(b *testing.B) {
	for _, channels := range []int{1, 10} {
		b.Run(fmt.Sprintf("channels=%d", channels), func(b *testing.B) { benchIngest(b, channels) })
	}
}

func benchIngest(b *testing.B, channels int) {
	h := hub.New()
	defer h.Close()
	in := New(Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := http.NewServeMux()
	for _, p := range Patterns {
		mux.Handle(p, in)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	const frameBytes = 10_000
	payload := make([]byte, frameBytes)
	chunk := func(i int) []byte {
		flags := cmaf.NonSyncSampleFlags
		if i%50 == 0 {
			flags = cmaf.SyncSampleFlags
		}
		f, err := cmaf.AppendFragment(nil, uint32(i+1), 1, uint64(i*frameTicks),
			[]cmaf.Sample{{Duration: frameTicks, Size: frameBytes, Flags: flags, Data: payload}})
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	var mu sync.Mutex
	var push, pull []time.Duration
	var wg sync.WaitGroup
	for ci := range channels {
		name := fmt.Sprintf("ch%d", ci)
		c, err := in.AddChannel(ctx, h, ChannelOptions{Name: name, Token: testToken, SegmentDuration: 2 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		sent := make([]time.Time, b.N+1) // when the encoder began writing chunk i
		var sentMu sync.Mutex
		sentAt := func(i int) time.Time {
			sentMu.Lock()
			defer sentMu.Unlock()
			return sent[i]
		}
		pr, pw := io.Pipe()
		wg.Add(3)
		go func() { // the encoder
			defer wg.Done()
			defer pw.Close()
			if _, err := pw.Write(videoHeader(b, 2_000_000)); err != nil {
				return
			}
			tick := time.NewTicker(40 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i <= b.N; i++ {
				body := chunk(i)
				sentMu.Lock()
				sent[i] = time.Now()
				sentMu.Unlock()
				if _, err := pw.Write(body); err != nil {
					return
				}
				<-tick.C
			}
		}()
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", srv.URL+Path(name, "video", "cmfv"), pr)
			req.Header.Set("Authorization", "Bearer "+testToken)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		// The track exists once its header arrived: subscribe then.
		for len(c.Info().Tracks) == 0 {
			time.Sleep(time.Millisecond)
		}
		sub := c.Subscribe(4096, "video")
		go func() { // push: every chunk
			defer wg.Done()
			for ev := range sub.C {
				if ev.Chunk == nil {
					continue
				}
				at := time.Now()
				i := int(ev.Chunk.Start / frameTicks)
				if i > b.N {
					break
				}
				mu.Lock()
				push = append(push, at.Sub(sentAt(i)))
				mu.Unlock()
				if i == b.N {
					break
				}
			}
			sub.Stop()
		}()
		wg.Add(1)
		go func() { // pull: each complete segment
			defer wg.Done()
			for n := uint64(0); int(n+1)*50 <= b.N; n++ {
				if _, err := c.Await(ctx, "video", n); err != nil {
					return
				}
				at := time.Now()
				mu.Lock()
				pull = append(pull, at.Sub(sentAt(int(n+1)*50)))
				mu.Unlock()
			}
		}()
	}
	b.ResetTimer()
	wg.Wait()
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"push", push}, {"pull", pull}} {
		if len(m.d) == 0 {
			continue
		}
		sort.Slice(m.d, func(i, j int) bool { return m.d[i] < m.d[j] })
		q := func(p float64) float64 { return float64(m.d[int(p*float64(len(m.d)-1))]) / 1e6 }
		b.ReportMetric(q(0.5), m.name+"-p50-ms")
		b.ReportMetric(q(0.99), m.name+"-p99-ms")
		b.ReportMetric(float64(len(m.d)), m.name+"-samples")
	}
}
