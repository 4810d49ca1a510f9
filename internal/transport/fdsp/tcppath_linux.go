//go:build linux

package fdsp

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
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
	var info *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || serr != nil {
		return tcpPath{}, false
	}
	return tcpPath{rtt: time.Duration(info.Rtt) * time.Microsecond, mss: int(info.Snd_mss),
		retrans: info.Total_retrans, segsOut: info.Segs_out}, true
}
