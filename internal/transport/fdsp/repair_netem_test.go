package fdsp

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/testmedia"
)

// netemSession is a server in one namespace of an emulated link and a dialer
// from the other; the namespaces are deleted when the test ends.
type netemSession struct {
	srv  *Server
	addr string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// needNetem skips a test that needs the lab's emulated link where it cannot run.
func needNetem(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short: streams over an emulated lossy link")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (CI runs as root)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("skipped: no /dev/net/tun")
	}
}

func upNetem(t *testing.T, ctx context.Context, h *hub.Hub, link netem.Impairment, seed uint64) netemSession {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	nw, err := netem.Up(ctx, netem.TwoHosts(netem.Symmetric(link)), netem.Options{Name: "fdsp-test", Seed: seed})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var s *Server
	if err := nw.Do("server", func() (err error) {
		s, err = NewServer(h, "0.0.0.0:0", "0.0.0.0:0", Options{Substream: 2 * time.Second})
		return err
	}); err != nil {
		cancel()
		nw.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-served
		if err := nw.Close(); err != nil {
			t.Errorf("netem close: %v", err)
		}
	})
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = nw.Do("client", func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	return netemSession{srv: s, addr: netip.AddrPortFrom(nw.Server(), uint16(s.Addr().(*net.TCPAddr).Port)).String(), dial: dial}
}

// TestNetemRepairLowersPLR: on an emulated link with 5 % random loss each way
// (20 ms RTT), two FDSP sessions at BP 0 play the same asset at the same time,
// one with NACK repair and one without (the study's design). Repair's PLR is
// lower, its resends were used, the server resent within its budget, and
// FFmpeg decodes the repaired stream frame for frame.
func TestNetemRepairLowersPLR(t *testing.T) {
	needNetem(t)
	dir := testmedia.AssetWith(t, testmedia.Options{SegmentDuration: time.Second, Ladder: "360p:600k", Duration: 8 * time.Second})
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx := context.Background()
	n := upNetem(t, ctx, h, netem.Impairment{Delay: netem.Duration(10 * time.Millisecond), Loss: netem.Bernoulli(5)}, 21)
	type run struct {
		st  Stats
		err error
		out bytes.Buffer
	}
	runs := map[bool]*run{false: {}, true: {}}
	var wg sync.WaitGroup
	for repair, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.st, r.err = Play(ctx, ClientOptions{
				Addr: n.addr, Stream: "vod/asset", Mode: ModeFDSP, BP: 0, Repair: repair, Output: &r.out, Dial: n.dial,
				DialUDP: func(ctx context.Context, raddr string) (net.Conn, error) { return n.dial(ctx, "udp", raddr) },
			})
		}()
	}
	wg.Wait()
	for repair, r := range runs {
		if r.err != nil {
			t.Fatalf("repair %v: %v", repair, r.err)
		}
		t.Logf("repair %v: PLR %.4f (%d lost of %d UDP packets, %d late), repair %+v", repair, r.st.PLR, r.st.Lost, r.st.Expected, r.st.Late, r.st.Repair)
	}
	with, without := runs[true].st, runs[false].st
	if without.Lost == 0 {
		t.Fatal("no UDP loss without repair on a 5% lossy link: the emulation is not in the path")
	}
	if without.Repair != nil {
		t.Fatalf("repair stats without repair: %+v", without.Repair)
	}
	if with.Repair == nil || with.Repair.Repaired == 0 || with.Repair.Nacked == 0 {
		t.Fatalf("repair stats %+v: want packets NACKed and repaired", with.Repair)
	}
	if !(with.PLR < without.PLR) {
		t.Fatalf("PLR with repair %.4f is not lower than without %.4f", with.PLR, without.PLR)
	}
	var repaired int
	for _, p := range with.UDPParts {
		repaired += p.Repaired
	}
	if repaired != with.Repair.Repaired {
		t.Fatalf("udp_parts say %d repaired, the repair object %d", repaired, with.Repair.Repaired)
	}
	if got := n.srv.Resent.Load(); got < int64(with.Repair.Repaired) {
		t.Fatalf("server resent %d packets, the client used %d", got, with.Repair.Repaired)
	}
	if n.srv.RepairOverBudget.Load() != 0 {
		t.Logf("server: %d packets over the repair budget", n.srv.RepairOverBudget.Load())
	}
	frames, log := ffmpegFrames(t, runs[true].out.Bytes())
	if frames != with.AUs || with.Decodable != 1 {
		t.Fatalf("with repair: FFmpeg decoded %d frames of %d access units, decodable %.3f:\n%s", frames, with.AUs, with.Decodable, log)
	}
	t.Logf("PLR reduction by repair: %.1f%%", 100*(1-with.PLR/without.PLR))
}
