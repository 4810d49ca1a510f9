package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streambed/streambed/internal/lab/netem"
)

// The SRT peer: srt-live-transmit (Debian srt-tools) at both ends of the emulated
// link, the sender a listener in the server host fed by this program's pacer over
// local UDP, the receiver a caller in the client host handing what SRT delivers
// (after its latency window: retransmission until the deadline, then drop) to
// this program's UDP socket, where tsReceiver times each access unit.
//
//	pacer ─udp─► srt-live-transmit (listener) ══ emulated link ══ srt-live-transmit (caller) ─udp─► tsReceiver
//	                       server host                                  client host

// srtPorts are the fixed ports inside the run's own namespaces.
const (
	srtPort   = 9000
	srtInPort = 5000
)

// srtStats are the counters of srt-live-transmit's last JSON statistics line
// (-pf json, printed every 100 packets, so the last few packets may be missing).
type srtStats struct {
	RecvPackets    int     `json:"recv_packets"`
	RecvLost       int     `json:"recv_lost"`        // losses detected (before retransmission)
	RecvDropped    int     `json:"recv_dropped"`     // not recovered by the deadline: dropped
	RecvBelated    int     `json:"recv_belated"`     // arrived after the deadline
	SendRetrans    int     `json:"send_retransmits"` // sender's retransmissions
	SendDropped    int     `json:"send_dropped"`
	RTTms          float64 `json:"rtt_ms"`
	LatencyMS      int     `json:"tsbpd_delay_ms"`
	ReceiverReport bool    `json:"receiver_report"` // a receiver line was read
}

// srtResult is one SRT run measured at the receiver.
type srtResult struct {
	Sent     int     `json:"datagrams_sent"`
	Received int     `json:"datagrams_received"`
	PLR      float64 `json:"plr"` // datagrams (SRT packets) not delivered / sent
	CCGaps   int     `json:"ts_cc_gaps"`
	AUs      int     `json:"access_units"`
	AUsSent  int     `json:"access_units_sent"`
	playoutResult
	SRT srtStats `json:"srt"`
}

// runSRT streams the scheduled datagrams over SRT with the given latency window
// across nw and measures what arrives. dir keeps the statistics files.
// jitterBuffer is the player's own playout delay behind SRT's window.
// viaStdin hands the datagrams to the SRT sender through its standard input (a
// pipe: a slow reader holds the pacer back) instead of a local UDP socket, whose
// default receive buffer (212 992 bytes here; srt-live-transmit has no option to
// grow it) overflows when a large I-frame's datagrams come within one frame's
// time: loss before SRT that is not SRT's.
func runSRT(ctx context.Context, nw *netem.Network, ds []timedDatagram, latency, jitterBuffer time.Duration, dir string, viaStdin bool) (srtResult, error) {
	var res srtResult
	if _, err := exec.LookPath("srt-live-transmit"); err != nil {
		return res, errors.New("srt-live-transmit not found: apt-get install srt-tools (the Makefile's TEST_DEPS has it)")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	server, client := nw.Server(), nw.Addr("client")
	lat := strconv.Itoa(int(latency / time.Millisecond))

	// The receiver's socket first, so nothing SRT delivers is missed.
	var rc *net.UDPConn
	if err := nw.Do("client", func() (err error) {
		rc, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(client, 0)))
		return err
	}); err != nil {
		return res, err
	}
	defer rc.Close()
	forceReadBuffer(rc, 8<<20)
	rx := newTSReceiver()
	var rxMu sync.Mutex
	rxDone := make(chan struct{})
	go func() {
		defer close(rxDone)
		buf := make([]byte, 2048)
		for {
			n, err := rc.Read(buf)
			if err != nil {
				return
			}
			at := time.Now()
			rxMu.Lock()
			rx.datagram(buf[:n], at)
			rxMu.Unlock()
		}
	}()

	txStats, rxStats := filepath.Join(dir, "srt-sender-stats.json"), filepath.Join(dir, "srt-receiver-stats.json")
	_ = os.Remove(txStats)
	_ = os.Remove(rxStats)
	input := fmt.Sprintf("udp://%s:%d", server, srtInPort)
	var stdinR, stdinW *os.File
	if viaStdin {
		input = "file://con"
		var err error
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			return res, err
		}
		defer stdinR.Close()
		defer stdinW.Close()
	}
	tx := nw.CommandContext(ctx, "server", "srt-live-transmit", "-a", "no", "-s", "100", "-pf", "json", "-f", "-statsout", txStats,
		"-chunk", strconv.Itoa(datagramSize), input, fmt.Sprintf("srt://:%d?mode=listener&latency=%s", srtPort, lat))
	if viaStdin {
		tx.Stdin = stdinR
	}
	txp, err := startWatching(tx, "Accepted SRT target connection")
	if err != nil {
		return res, fmt.Errorf("SRT sender: %w", err)
	}
	defer txp.stop()
	time.Sleep(200 * time.Millisecond) // the listener binds; nothing to wait on in its output
	start := time.Now()                // the viewer asks: the session starts
	rcv := nw.CommandContext(ctx, "client", "srt-live-transmit", "-a", "no", "-s", "100", "-pf", "json", "-f", "-statsout", rxStats,
		fmt.Sprintf("srt://%s:%d?mode=caller&latency=%s", server, srtPort, lat), fmt.Sprintf("udp://%s:%d", client, rc.LocalAddr().(*net.UDPAddr).Port))
	rcvp, err := startWatching(rcv, "")
	if err != nil {
		return res, fmt.Errorf("SRT receiver: %w", err)
	}
	defer rcvp.stop()
	select {
	case <-txp.seen:
	case <-time.After(15 * time.Second):
		return res, fmt.Errorf("SRT: no connection within 15 s; sender: %s receiver: %s", txp.output(), rcvp.output())
	case <-ctx.Done():
		return res, ctx.Err()
	}
	var in io.Writer = stdinW
	if !viaStdin {
		var conn net.Conn
		if err := nw.Do("server", func() (err error) {
			conn, err = net.Dial("udp", netip.AddrPortFrom(server, srtInPort).String())
			return err
		}); err != nil {
			return res, err
		}
		defer conn.Close()
		in = conn
	}
	if err := pace(ctx, in, ds, time.Now()); err != nil {
		return res, err
	}
	if viaStdin {
		// srt-live-transmit reads a file input through a buffer: push the last
		// datagrams out with null TS packets (the receiver does not count them).
		if err := pace(ctx, in, nullFlush(), time.Now()); err != nil {
			return res, err
		}
	}
	// The tail: SRT holds each packet for the latency window, retransmissions
	// included.
	select {
	case <-time.After(latency + 2*time.Second):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	rcvp.stop()
	txp.stop()
	rc.Close()
	<-rxDone
	rxMu.Lock()
	defer rxMu.Unlock()
	rx.finish()
	res.Sent, res.Received, res.CCGaps, res.AUs = len(ds), rx.Datagrams, rx.CCGaps, len(rx.AUs)
	res.AUsSent = countAUs(ds)
	if res.Sent > 0 {
		res.PLR = max(0, 1-float64(res.Received)/float64(res.Sent))
	}
	res.playoutResult = playout(rx.AUs, start, jitterBuffer)
	res.SRT = readSRTStats(txStats, rxStats)
	return res, nil
}

func countAUs(ds []timedDatagram) int {
	rx := newTSReceiver()
	for _, d := range ds {
		rx.datagram(d.Data, time.Time{})
	}
	return len(rx.AUs)
}

// forceReadBuffer gives the receiving socket room for a few seconds of the
// stream, past rmem_max (SO_RCVBUFFORCE, as root), so a receiving process that is
// descheduled for a moment does not lose datagrams SRT delivered.
func forceReadBuffer(c *net.UDPConn, n int) {
	if rc, err := c.SyscallConn(); err == nil {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
		}); err == nil && serr == nil {
			return
		}
	}
	_ = c.SetReadBuffer(n) // capped at rmem_max
}

// proc is a process this run started, its output watched.
type proc struct {
	cmd  *exec.Cmd
	seen chan struct{} // closed when a line contains the awaited text
	done chan struct{} // closed when it has exited
	mu   sync.Mutex
	out  []string
}

// startWatching starts cmd and closes seen when a line of its output contains
// want.
func startWatching(cmd *exec.Cmd, want string) (*proc, error) {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, seen: make(chan struct{}), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			p.mu.Lock()
			if len(p.out) < 50 {
				p.out = append(p.out, sc.Text())
			}
			p.mu.Unlock()
			if !found && want != "" && strings.Contains(sc.Text(), want) {
				found = true
				close(p.seen)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() { _ = cmd.Wait(); pw.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.out, " | ")
}

// stop ends the process (SIGINT, on which srt-live-transmit closes its files)
// and waits for it; after 3 s it is killed.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// readSRTStats reads the last statistics line of each side.
func readSRTStats(txPath, rxPath string) srtStats {
	type line struct {
		Link struct {
			RTT float64 `json:"rtt"`
		} `json:"link"`
		Send struct {
			Retrans int `json:"packetsRetransmitted"`
			Dropped int `json:"packetsDropped"`
		} `json:"send"`
		Recv struct {
			Packets int `json:"packets"`
			Lost    int `json:"packetsLost"`
			Dropped int `json:"packetsDropped"`
			Belated int `json:"packetsBelated"`
			Delay   int `json:"msTsbPdDelay"`
		} `json:"recv"`
	}
	last := func(path string) (line, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return line{}, false
		}
		var l line
		ok := false
		for _, s := range strings.Split(string(b), "\n") {
			var x line
			if json.Unmarshal([]byte(strings.TrimSpace(s)), &x) == nil {
				l, ok = x, true
			}
		}
		return l, ok
	}
	var st srtStats
	if t, ok := last(txPath); ok {
		st.SendRetrans, st.SendDropped = t.Send.Retrans, t.Send.Dropped
	}
	if r, ok := last(rxPath); ok {
		st.ReceiverReport = true
		st.RecvPackets, st.RecvLost, st.RecvDropped, st.RecvBelated = r.Recv.Packets, r.Recv.Lost, r.Recv.Dropped, r.Recv.Belated
		st.RTTms, st.LatencyMS = r.Link.RTT, r.Recv.Delay
	}
	return st
}
