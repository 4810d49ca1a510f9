package fdsp

import (
	"math"
	"time"
)

// tcpPath is what the server's own TCP socket knows of the path (TCP_INFO): the
// smoothed RTT, the segment size, and how many of its segments it had to send
// again over the connection.
type tcpPath struct {
	rtt     time.Duration
	mss     int
	retrans uint32 // segments retransmitted
	segsOut uint32 // segments sent
}

// lossLimitedRate is the goodput (bytes/s) a loss-based TCP flow sustains in
// congestion avoidance with segment size mss, round-trip time rtt and loss rate p
// (Mathis et al. 1997: MSS/RTT × √(3/2)/√p); 0 when one of them is unknown. A
// TCP part larger than what slow start carries before its first loss ends up near
// it; a smaller one can go much faster, which is why a goodput measured on small
// parts must not be extrapolated to large ones.
func lossLimitedRate(mss int, rtt time.Duration, p float64) float64 {
	if mss <= 0 || rtt <= 0 || p <= 0 {
		return 0
	}
	return float64(mss) / rtt.Seconds() * math.Sqrt(1.5/p)
}
