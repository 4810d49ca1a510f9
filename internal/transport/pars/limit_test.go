package pars

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// TestSegmentSizeLimit: a segment over MaxSegmentBytes is refused before its buffer is
// allocated, whether its size comes from the index or HEAD (ranges) or from the
// response's Content-Length (one GET); a huge claimed size is not a crash.
func TestSegmentSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		index bool
	}{{"index", 2, true}, {"head", 2, false}, {"whole", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			o, s := newTestOrigin(t, 50_000)
			o.index = tc.index
			c := newTestClient(t, tc.n, func(o *Options) { o.MaxSegmentBytes = 10_000 })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/1.m4s", s.URL), Number: 1, KeepBody: true})
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("err %v, want ErrInvalidMedia (over the limit)", err)
			}
		})
	}
	// The fuzzer's find: an index claiming 2^62 bytes.
	c := newTestClient(t, 2)
	c.learnSize("http://o/vod/a/v/1.m4s", 1<<62)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.FetchURL(ctx, "http://o/vod/a/v/1.m4s", 2); !errors.Is(err, media.ErrInvalidMedia) {
		t.Fatalf("2^62 bytes: err %v", err)
	}
}
