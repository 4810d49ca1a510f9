package wspush

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLiveSessionSetUp sets up and ends one fan-out viewer per iteration over
// loopback (the upgrade, the start message, ready, init and the segment caught up,
// the close): allocations and CPU per session, client side included. Profile the
// origin's share with -memprofile/-cpuprofile and pprof's -focus=wspush.
func BenchmarkLiveSessionSetUp(b *testing.B) {
	o := newOrigin(b, 0, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := Start{Policy: PolicyFixed, Tracks: []string{"v180"}}
	// One viewer stays throughout, as in a crowd: the channel's fan-out lives on.
	anchor, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: start})
	if err != nil {
		b.Fatal(err)
	}
	defer anchor.CloseNow()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: start})
		if err != nil {
			b.Fatal(err)
		}
		for {
			m, err := c.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if m.Frame != nil && m.Frame.Kind == KindChunk {
				break
			}
		}
		c.CloseNow()
	}
}
