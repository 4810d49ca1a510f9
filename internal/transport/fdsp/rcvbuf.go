package fdsp

import (
	"net"
	"syscall"
	"time"
)

// The client's UDP socket must hold what arrives while the client is not reading:
// a slow clip's I-frame is about a second of the stream's bytes sent over one
// frame time (the server paces each access unit over its own duration), and on a
// busy machine the reader can be descheduled for tens of milliseconds. The
// kernel's default (212 992 bytes here) holds about 90 datagrams, a fifth of such
// an I-frame. So the buffer is sized from the stream's rate when its first
// Substream frame says it: the playout delay's worth (no packet is useful later
// than that) plus one second for an I-frame burst, doubled because the kernel
// charges each datagram's whole buffer (about twice a 1.2 kB payload).
const (
	minRcvbuf = 1 << 20
	maxRcvbuf = 64 << 20
)

// rcvbufFor is the receive buffer a stream of rate bytes/s needs with this playout delay.
func rcvbufFor(rate float64, playout time.Duration) int {
	n := int(2 * rate * (playout + time.Second).Seconds())
	return min(maxRcvbuf, max(minRcvbuf, n))
}

// substreamRate is the substream's bytes per second if all of it went over UDP:
// its UDP packets at the full payload size over its duration (an upper bound).
func substreamRate(h Substream, aus []AU) float64 {
	if h.Duration == 0 {
		return 0
	}
	var b float64
	for _, a := range aus {
		for _, n := range a.NALs {
			b += float64(n.Size)
		}
	}
	if b == 0 {
		b = float64(h.UDPPackets) * MaxPayload
	}
	return b / (float64(h.Duration) / 90000)
}

// rawConn is what a UDP socket made by net exposes (and a wrapper may pass on).
type rawConn interface {
	SyscallConn() (syscall.RawConn, error)
}

// socketOf is c's socket, unwrapping a wrapper that names its inner connection.
func socketOf(c net.Conn) rawConn {
	for c != nil {
		if r, ok := c.(rawConn); ok {
			return r
		}
		u, ok := c.(interface{ Unwrap() net.Conn })
		if !ok {
			return nil
		}
		c = u.Unwrap()
	}
	return nil
}
