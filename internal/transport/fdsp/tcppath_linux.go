//go:build linux

package fdsp

import (
	"net"
	"time"

	"github.com/streambed/streambed/internal/netutil"
)

// readTCPPath reads TCP_INFO from the session's connection; false when it is not
// a TCP socket or the read fails.
func readTCPPath(c net.Conn) (tcpPath, bool) {
	sc := socketOf(c)
	if sc == nil {
		return tcpPath{}, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return tcpPath{}, false
	}
	info, err := netutil.TCPInfo(rc)
	if err != nil {
		return tcpPath{}, false
	}
	return tcpPath{rtt: time.Duration(info.Rtt) * time.Microsecond, mss: int(info.Snd_mss),
		retrans: info.Total_retrans, segsOut: info.Segs_out}, true
}
