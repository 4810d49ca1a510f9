package netutil

import (
	"context"
	"fmt"
	"net"
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
	lc := net.ListenConfig{}
	if rtoMin > 0 {
		if rtoMin < time.Millisecond || rtoMin > 200*time.Millisecond {
			return nil, fmt.Errorf("TCP RTO minimum %s: want 1ms to 200ms", rtoMin)
		}
		us := int(rtoMin / time.Microsecond)
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MIN_US, us)
			}); err != nil {
				return err
			}
			if serr != nil {
				return fmt.Errorf("TCP RTO minimum %s (TCP_RTO_MIN_US needs Linux 6.15 or later): %w", rtoMin, serr)
			}
			return nil
		}
	}
	return lc.Listen(ctx, network, addr)
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
