package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/testmedia"
)

// TestSRTHarnessMeasuresLoss streams the same TS over SRT (srt-live-transmit at
// both ends) across two emulated links in namespaces the test creates and
// deletes: a clean one, where everything arrives and nothing is counted lost;
// and a lossy one (10 % loss each way, 20 ms RTT) with a latency window of one
// RTT, too short for SRT to retransmit everything, where SRT's own counters show
// losses and retransmissions, datagrams go missing at the receiver and the TS
// continuity counters show the gaps.
func TestSRTHarnessMeasuresLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: streams over emulated links")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (CI runs as root)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("skipped: no /dev/net/tun")
	}
	if _, err := exec.LookPath("srt-live-transmit"); err != nil {
		t.Fatal("srt-live-transmit not found: `make test` installs srt-tools (TEST_DEPS)")
	}
	dir := testmedia.AssetWith(t, testmedia.Options{Ladder: "360p:600k", Duration: 8 * time.Second})
	ts := filepath.Join(t.TempDir(), "not-made-yet", "clip.ts") // as -asset finds the cache folder
	if err := makeTS(context.Background(), dir, ts); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ts)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := schedule(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		link    netem.Impairment
		latency time.Duration
		lossy   bool
		stdin   bool // the datagrams reach the SRT sender through a pipe (-srt-input stdin)
	}{
		{"clean", netem.Impairment{Delay: netem.Duration(10 * time.Millisecond)}, 120 * time.Millisecond, false, false},
		{"clean-stdin", netem.Impairment{Delay: netem.Duration(10 * time.Millisecond)}, 120 * time.Millisecond, false, true},
		{"lossy", netem.Impairment{Delay: netem.Duration(10 * time.Millisecond), Loss: netem.Bernoulli(10)}, 20 * time.Millisecond, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			nw, err := netem.Up(ctx, netem.TwoHosts(netem.Symmetric(c.link)), netem.Options{Name: "fdspsrt-test", Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := nw.Close(); err != nil {
					t.Errorf("netem close: %v", err)
				}
			}()
			r, err := runSRT(ctx, nw, ds, c.latency, 50*time.Millisecond, t.TempDir(), c.stdin)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", r)
			if !r.SRT.ReceiverReport || r.AUsSent == 0 || r.StartupMS <= 0 {
				t.Fatalf("nothing measured: %+v", r)
			}
			if !c.lossy {
				if r.Received != r.Sent || r.PLR != 0 || r.CCGaps != 0 || r.AUs != r.AUsSent || r.SRT.RecvDropped != 0 {
					t.Fatalf("clean link: %d of %d datagrams, %d CC gaps, %d of %d access units, SRT dropped %d", r.Received, r.Sent, r.CCGaps, r.AUs, r.AUsSent, r.SRT.RecvDropped)
				}
				return
			}
			if r.SRT.RecvLost == 0 || r.SRT.SendRetrans == 0 {
				t.Fatalf("SRT saw no loss or retransmitted nothing on a 10%% loss link: %+v", r.SRT)
			}
			if r.PLR <= 0 || r.Received >= r.Sent || r.CCGaps == 0 {
				t.Fatalf("no loss after ARQ measured with a 1-RTT window: PLR %.4f, %d of %d datagrams, %d CC gaps", r.PLR, r.Received, r.Sent, r.CCGaps)
			}
			if r.PLR >= 0.10 {
				t.Fatalf("PLR %.4f: at least the link's loss, so SRT recovered nothing", r.PLR)
			}
		})
	}
}
