//go:build linux

package wspush

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/streambed/streambed/internal/netutil"
)

// tcpStats reads TCP_INFO from a connected TCP socket.
func tcpStats(rc syscall.RawConn) (TCPStats, error) {
	info, err := netutil.TCPInfo(rc)
	if err != nil {
		return TCPStats{}, err
	}
	// tcpi_delivery_rate_app_limited is bit 0 of the eighth byte, a bit-field that
	// x/sys/unix leaves as padding.
	raw := (*[8]byte)(unsafe.Pointer(info))
	return TCPStats{
		RTT:          time.Duration(info.Rtt) * time.Microsecond,
		MinRTT:       time.Duration(info.Min_rtt) * time.Microsecond,
		DeliveryRate: float64(info.Delivery_rate) * 8,
		AppLimited:   raw[7]&1 != 0,
		NotSent:      int64(info.Notsent_bytes),
		Unacked:      int64(info.Unacked) * int64(info.Snd_mss),
		Cwnd:         int(info.Snd_cwnd),
		Retrans:      int(info.Total_retrans),
	}, nil
}

// setNotSentLowat caps the bytes the kernel keeps unsent for the socket: writes block
// beyond it, so a backlog waits in the session, where a policy can see it and a
// switch or skip can still act on it, instead of in a send buffer of megabytes.
func setNotSentLowat(rc syscall.RawConn, n int) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
	})
	if err != nil {
		return err
	}
	return serr
}
