package fdsp

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestLoopbackModes streams the test asset over loopback in each mode: every
// access unit arrives whole, nothing is lost, and FFmpeg decodes every frame of
// what the client wrote.
func TestLoopbackModes(t *testing.T) {
	h := testAsset(t)
	s := startServer(t, h, Options{Substream: 2 * time.Second})
	for _, tc := range []struct {
		mode Mode
		bp   uint8
	}{{ModeFDSP, 0}, {ModeFDSP, 100}, {ModeFDSP, BPAuto}, {ModeTCP, 0}, {ModeUDP, 0}} {
		t.Run(tc.mode.String()+"-bp"+map[bool]string{true: "auto", false: ""}[tc.bp == BPAuto], func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: tc.mode, BP: tc.bp, Output: &out})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", st)
			if st.EndReason != "ended" || st.AUs != 200 || st.Whole != st.AUs || st.Lost != 0 || st.Decodable != 1 {
				t.Fatalf("stats %+v", st)
			}
			if st.Substreams != 4 || st.RebufferCount != 1 || st.StartupMS <= 0 {
				t.Fatalf("substreams %d, rebuffering %d (want 4 and 1: the start-up)", st.Substreams, st.RebufferCount)
			}
			switch tc.mode {
			case ModeTCP:
				if st.Expected != 0 || st.UDPBytes != 0 {
					t.Fatalf("pure TCP sent %d UDP packets", st.Expected)
				}
			default:
				if st.Expected == 0 {
					t.Fatal("no UDP packets")
				}
			}
			frames, log := ffmpegFrames(t, out.Bytes())
			if frames != st.AUs {
				t.Fatalf("ffmpeg decoded %d frames of %d:\n%s", frames, st.AUs, log)
			}
		})
	}
}
