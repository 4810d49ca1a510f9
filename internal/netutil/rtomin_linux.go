package netutil

import (
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ListenRTOMin listens on a TCP address whose connections retransmit a lost packet
// after at least rtoMin instead of the kernel's 200 ms (Linux 6.15+ TCP_RTO_MIN_US, set
// on the listener and inherited by every accepted connection); 0 leaves the kernel's.
//
// Why an origin of small live responses wants it: a response that is alone on its
// connection (an LL-HLS part or blocking-reload answer over HTTP/1.1) has nothing
// behind it to reveal a lost tail packet, so the sender waits for a tail loss probe —
// 2 × SRTT, plus the RTO minimum when the response was a single packet (to allow for a
// delayed ACK) — or for the retransmission timeout, at least SRTT + the RTO minimum.
// At 50 ms RTT a lost one-packet part is about 300 ms late with the default, 150 ms
// with 50 ms. Below the client's delayed-ACK time (40 ms for Linux, up to 200 ms for
// others) the probes become spurious: cheap duplicates, not harm, for a live origin.
func ListenRTOMin(ctx context.Context, network, addr string, rtoMin time.Duration) (net.Listener, error) {
	return ListenTCP(ctx, network, addr, rtoMin, "")
}

// ListenTCP is ListenRTOMin with the connections' congestion control too: cc (for
// example cubic or bbr) is set on the listener with TCP_CONGESTION and inherited by
// every accepted connection; "" keeps the system's default. An origin sets it to choose
// for its own traffic what this machine's default would (docs/results/latency.md: BBR
// collapses its pacing rate after a tail loss on an idle LL-HLS connection).
func ListenTCP(ctx context.Context, network, addr string, rtoMin time.Duration, cc string) (net.Listener, error) {
	lc := net.ListenConfig{}
	if rtoMin != 0 && (rtoMin < time.Millisecond || rtoMin > 200*time.Millisecond) {
		return nil, fmt.Errorf("TCP RTO minimum %s: want 1ms to 200ms", rtoMin)
	}
	if rtoMin > 0 || cc != "" {
		us := int(rtoMin / time.Microsecond)
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var rerr, cerr error
			if err := c.Control(func(fd uintptr) {
				if us > 0 {
					rerr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MIN_US, us)
				}
				if cc != "" {
					cerr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
				}
			}); err != nil {
				return err
			}
			if rerr != nil {
				return fmt.Errorf("TCP RTO minimum %s (TCP_RTO_MIN_US needs Linux 6.15 or later): %w", rtoMin, rerr)
			}
			if cerr != nil {
				return fmt.Errorf("TCP congestion control %q (see /proc/sys/net/ipv4/tcp_available_congestion_control): %w", cc, cerr)
			}
			return nil
		}
	}
	return lc.Listen(ctx, network, addr)
}

// Congestion is a TCP connection's congestion control ("" when it cannot be read).
func Congestion(c net.Conn) string {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ""
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	_ = rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return strings.TrimRight(name, "\x00")
}

// RTOMin is a TCP connection's RTO minimum (0 when it cannot be read).
func RTOMin(c net.Conn) time.Duration {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var us int
	_ = rc.Control(func(fd uintptr) {
		us, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MIN_US)
	})
	return time.Duration(us) * time.Microsecond
}
