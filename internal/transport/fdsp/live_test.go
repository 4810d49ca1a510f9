package fdsp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
)

// TestLiveChannel plays a looped live channel over FDSP: the server starts at the
// live edge and waits for each segment as the channel makes it; the client plays
// for a while without rebuffering after start-up, and FFmpeg decodes all of it.
func TestLiveChannel(t *testing.T) {
	src := testmedia.AssetWith(t, testmedia.Options{SegmentDuration: time.Second, Ladder: "360p:600k"})
	dir := filepath.Join(t.TempDir(), "clip")
	if err := os.Symlink(src, dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", DVRWindow: 20 * time.Second, AvailabilityStart: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	s := startServer(t, h, Options{Substream: 2 * time.Second})
	var out bytes.Buffer
	st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "live/live", Mode: ModeFDSP, BP: 50, Output: &out, Duration: 7 * time.Second,
		// Each substream's TCP part completes as the channel makes its last segment,
		// about as its media time passes: a playout delay well above that keeps a
		// loaded machine (the race detector, CI) from turning it into rebuffering.
		PlayoutDelay: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.EndReason != "duration" || st.Substreams < 2 || st.Lost != 0 || st.Decodable != 1 || st.RebufferCount != 1 {
		t.Fatalf("stats %+v", st)
	}
	frames, log := ffmpegFrames(t, out.Bytes())
	if frames != st.AUs {
		t.Fatalf("decoded %d of %d frames:\n%s", frames, st.AUs, log)
	}
}
