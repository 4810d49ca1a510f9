//go:build linux

package fdsp

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setRcvbuf asks for n bytes of receive buffer: SO_RCVBUF (capped by
// net.core.rmem_max), then SO_RCVBUFFORCE past the cap when the process may
// (CAP_NET_ADMIN). It returns what the kernel granted as getsockopt reports it
// (twice the request, the kernel's bookkeeping share included); 0: unknown.
func setRcvbuf(c net.Conn, n int) int {
	rc := socketOf(c)
	if rc == nil {
		return 0
	}
	raw, err := rc.SyscallConn()
	if err != nil {
		return 0
	}
	got := 0
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
		got, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		if got < 2*n && unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) == nil {
			got, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		}
	})
	return got
}

// socketDrops is the socket's count of datagrams the kernel dropped before the
// client read them (SO_MEMINFO's SK_MEMINFO_DROPS: receive buffer full, or a bad
// UDP checksum); -1: unknown.
func socketDrops(c net.Conn) int64 {
	rc := socketOf(c)
	if rc == nil {
		return -1
	}
	raw, err := rc.SyscallConn()
	if err != nil {
		return -1
	}
	drops := int64(-1)
	_ = raw.Control(func(fd uintptr) {
		var mi [unix.SK_MEMINFO_VARS]uint32
		l := uint32(len(mi) * 4)
		if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO, uintptr(unsafe.Pointer(&mi)), uintptr(unsafe.Pointer(&l)), 0); e == 0 {
			drops = int64(mi[unix.SK_MEMINFO_DROPS])
		}
	})
	return drops
}
