package fdsp

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/testmedia"
)

// TestNetemLossUDPvsFDSP is the study's loss claim measured in one run: on an
// emulated link (20 ms RTT, 10% random loss each way, the lab's user-space netem in
// namespaces this test creates and deletes) pure UDP and FDSP with BP 100 stream
// the same asset at the same time. FFmpeg decodes both received streams; FDSP's
// every access unit keeps its slice headers; and pure UDP's PLR is higher than
// FDSP's, since FDSP's I-frames and headers ride TCP, which does not lose them.
//
// PLR counts lost UDP packets over the packets the video makes as pure UDP, the
// same denominator for both. The asset has a keyframe every 0.2 s so I-frames are
// a large share of the bytes, and the loss is high, so the difference stands well
// clear of chance (a first run: see the test log).
func TestNetemLossUDPvsFDSP(t *testing.T) {
	needNetem(t)
	dir := testmedia.AssetWith(t, testmedia.Options{SegmentDuration: 200 * time.Millisecond, Ladder: "360p:600k", Duration: 16 * time.Second})
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ref := referenceStream(t, h, "asset", 2*time.Second)

	ctx := context.Background()
	n := upNetem(t, ctx, h, netem.Impairment{Delay: netem.Duration(10 * time.Millisecond), Loss: netem.Bernoulli(10)}, 12)
	addr, inClient := n.addr, n.dial
	type run struct {
		st  Stats
		err error
		out bytes.Buffer
	}
	runs := map[Mode]*run{ModeUDP: {}, ModeFDSP: {}}
	var wg sync.WaitGroup
	for mode, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.st, r.err = Play(ctx, ClientOptions{
				Addr: addr, Stream: "vod/asset", Mode: mode, BP: 100, Output: &r.out, Dial: inClient,
				DialUDP: func(ctx context.Context, raddr string) (net.Conn, error) { return inClient(ctx, "udp", raddr) },
			})
		}()
	}
	wg.Wait()
	for mode, r := range runs {
		if r.err != nil {
			t.Fatalf("%v: %v", mode, r.err)
		}
		t.Logf("%v: PLR %.4f (UDP loss %.4f, %d of %d packets), decodable %.3f, whole AUs %d of %d, rebuffering %.0f ms in %d",
			mode, r.st.PLR, r.st.UDPLoss, r.st.Lost, r.st.Packets, r.st.Decodable, r.st.Whole, r.st.AUs, r.st.RebufferMS, r.st.RebufferCount)
		frames, log := ffmpegFrames(t, r.out.Bytes())
		t.Logf("%v: FFmpeg decoded %d frames of %d access units", mode, frames, r.st.AUs)
		if frames == 0 || r.st.AUs == 0 {
			t.Fatalf("%v: nothing decoded:\n%s", mode, log)
		}
		if mode == ModeFDSP && (r.st.Decodable != 1 || frames != r.st.AUs) {
			t.Fatalf("FDSP BP 100: decodable %.3f, %d frames of %d:\n%s", r.st.Decodable, frames, r.st.AUs, log)
		}
		if frames == r.st.AUs { // frame for frame against the sent stream
			t.Logf("%v: PSNR %.2f dB against the sent video", mode, ffmpegPSNR(t, r.out.Bytes(), ref))
		} else {
			t.Logf("%v: no PSNR: FFmpeg decoded %d fewer frames than access units, so frames do not pair up in raw H.264", mode, r.st.AUs-frames)
		}
	}
	udp, fdsp := runs[ModeUDP].st, runs[ModeFDSP].st
	if udp.Lost == 0 {
		t.Fatal("no UDP loss on a 10% lossy link: the emulation is not in the path")
	}
	if !(udp.PLR > fdsp.PLR) {
		t.Fatalf("pure UDP PLR %.4f is not higher than FDSP BP 100's %.4f", udp.PLR, fdsp.PLR)
	}
	t.Logf("PLR reduction against UDP: %s%%", strconv.FormatFloat(100*(1-fdsp.PLR/udp.PLR), 'f', 1, 64))
}
