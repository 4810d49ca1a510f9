package wsrelay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/transport/wspush"
)

// BenchmarkRelayHop measures what one relay hop adds: the same chunks (track,
// segment, index) received directly from the origin and through an edge on
// loopback, arrival time at the edge's viewer minus at the origin's, over 10 s of
// one-frame chunks per iteration. Run: go test ./internal/source/wsrelay -run '^$'
// -bench RelayHop -benchtime 3x. It reports the median, p90 and p99 in ms; it
// asserts nothing about them (docs/results/relay.md records them).
func BenchmarkRelayHop(b *testing.B) {
	var d []time.Duration
	for range b.N {
		got := measureHop(b, 10*time.Second)
		if len(got) < 100 {
			b.Fatalf("%d chunks matched, want hundreds", len(got))
		}
		d = append(d, got...)
	}
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "ms-p50/hop")
	b.ReportMetric(q(0.9), "ms-p90/hop")
	b.ReportMetric(q(0.99), "ms-p99/hop")
	b.ReportMetric(float64(len(d)), "chunks")
}

func measureHop(b *testing.B, span time.Duration) []time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := newOrigin(b, ctx)
	e := newEdge(b, ctx, o.wsURL())
	end := time.Now().Add(10 * time.Second)
	for len(e.channel.Info().Tracks) == 0 && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	var mu sync.Mutex
	at := map[string][2]time.Time{}
	recv := func(url string, side int) {
		c, err := wspush.Dial(ctx, url, wspush.DialOptions{Start: wspush.Start{Policy: "fixed"}})
		if err != nil {
			b.Error(err)
			return
		}
		defer c.CloseNow()
		seg := map[uint8]uint64{}
		for {
			m, err := c.Next(ctx)
			if err != nil {
				return
			}
			f := m.Frame
			if f == nil || f.Kind != wspush.KindChunk {
				continue
			}
			n, i := seg[f.Track], f.Sequence
			if f.Start {
				n, i = c.Ready.Base+f.Sequence, 0
				seg[f.Track] = n
			}
			key := fmt.Sprintf("%s/%d/%d", c.Ready.Tracks[f.Track].ID, n, i)
			mu.Lock()
			v := at[key]
			v[side] = m.At
			at[key] = v
			mu.Unlock()
		}
	}
	go recv(o.wsURL(), 0)
	go recv(e.wsURL(), 1)
	time.Sleep(span)
	cancel()
	mu.Lock()
	defer mu.Unlock()
	var d []time.Duration
	for _, v := range at {
		if !v[0].IsZero() && !v[1].IsZero() {
			d = append(d, v[1].Sub(v[0]))
		}
	}
	return d
}
