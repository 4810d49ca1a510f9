package fdsp

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
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
			st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: tc.mode, BP: tc.bp, Output: &out,
				// Five sessions at once on a loaded machine (the race detector, CI):
				// a datagram read late is the scheduler's doing, not loss; a playout
				// delay well above that keeps it from counting as lost (14 of 658
				// were, at the default 500 ms, with other work at load 5-9).
				PlayoutDelay: 3 * time.Second})
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

// TestTCPBytesIsWhatThePlanWrites: the byte count adaptive BP predicts from is
// exactly the TCP part plan makes, in every mode and at every BP step.
func TestTCPBytesIsWhatThePlanWrites(t *testing.T) {
	h := testAsset(t)
	st, err := h.Stream("asset", false)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := newMediaReader(st, "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rd.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeFDSP, ModeTCP, ModeUDP} {
		for bp := 0; bp <= 100; bp += bpStep {
			hdr, aus := plan(ss, rd.ps, mode, bp, 1)
			var b bytes.Buffer
			_ = WriteFrame(&b, FrameSubstream, hdr.Marshal())
			for _, a := range aus {
				_ = WriteFrame(&b, FrameAU, a.au.Marshal())
			}
			for _, a := range ss.audio {
				_ = WriteFrame(&b, FrameAudio, a.Marshal())
			}
			_ = WriteFrame(&b, FrameSubstreamOK, u32Payload(hdr.Index))
			if got := tcpBytes(ss, rd.ps, mode, bp); got != b.Len() {
				t.Errorf("%s BP %d: tcpBytes %d, the plan writes %d", mode, bp, got, b.Len())
			}
		}
	}
}

// TestClientMeasuresForAdaptiveBP: over loopback the client sends a TCPReport
// for every substream (the server's controller has goodputs and, past the
// start-up, windows from them), sizes its UDP receive buffer from the stream's
// rate, counts no socket drops, and samples a playhead that moves with the media.
func TestClientMeasuresForAdaptiveBP(t *testing.T) {
	h := testAsset(t)
	var logs lockedBuffer
	s := startServer(t, h, Options{Substream: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: ModeFDSP, BP: BPAuto, SampleInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	var ss *session
	for _, x := range s.sessions {
		ss = x
	}
	s.mu.Unlock()
	if ss == nil {
		t.Fatal("no session kept after the play")
	}
	ss.bp.mu.Lock()
	rates, windows, path := len(ss.bp.rates), len(ss.bp.windows), ss.bp.path
	ss.bp.mu.Unlock()
	// The server read its socket's TCP_INFO at each TCPReport (Linux), and logged
	// each plan's inputs at debug level.
	if runtime.GOOS == "linux" && (path.rtt <= 0 || path.mss <= 0 || path.segsOut == 0) {
		t.Errorf("TCP path %+v: want the socket's RTT, MSS and segments sent", path)
	}
	if n := strings.Count(logs.String(), "fdsp adaptive BP"); n < 4 {
		t.Errorf("%d debug lines of adaptive BP's inputs, want one per substream (4):\n%s", n, logs.String())
	}
	// 4 substreams: every one gives a goodput, the three past the start-up a window
	// (at most keepMeasure are kept).
	if rates != keepMeasure || windows != keepMeasure {
		t.Errorf("controller kept %d goodputs and %d windows, want %d of each", rates, windows, keepMeasure)
	}
	if st.RcvbufWanted < minRcvbuf {
		t.Errorf("receive buffer asked %d, want at least %d", st.RcvbufWanted, minRcvbuf)
	}
	// The kernel reports twice what it grants the data; without privileges the
	// grant is capped at net.core.rmem_max, so only its presence is checked then.
	if st.RcvbufBytes <= 0 || os.Geteuid() == 0 && st.RcvbufBytes < 2*st.RcvbufWanted {
		t.Errorf("receive buffer granted %d of %d asked", st.RcvbufBytes, st.RcvbufWanted)
	}
	if st.SocketDrops != 0 {
		t.Errorf("%d datagrams dropped by the socket on loopback", st.SocketDrops)
	}
	var last float64
	n := 0
	for _, x := range st.Samples {
		if x.PlayheadS == nil {
			continue
		}
		if *x.PlayheadS < last {
			t.Errorf("playhead went back from %.3f to %.3f s", last, *x.PlayheadS)
		}
		last = *x.PlayheadS
		n++
	}
	if n < 4 || last < 4 || last > 8.1 {
		t.Errorf("%d samples with a playhead, the last at %.3f s: want it moving through the 8 s asset", n, last)
	}
}

// lockedBuffer is a log destination the test reads while the server may still write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
