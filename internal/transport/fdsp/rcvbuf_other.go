//go:build !linux

package fdsp

import "net"

// setRcvbuf asks for n bytes of receive buffer; 0: the grant is unknown here.
func setRcvbuf(c net.Conn, n int) int {
	if u, ok := c.(*net.UDPConn); ok {
		_ = u.SetReadBuffer(n)
	}
	return 0
}

// socketDrops is unknown off Linux.
func socketDrops(net.Conn) int64 { return -1 }
