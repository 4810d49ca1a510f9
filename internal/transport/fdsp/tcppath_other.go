//go:build !linux

package fdsp

import "net"

// readTCPPath: TCP_INFO is read on Linux only; adaptive BP then predicts from the
// measured goodput alone.
func readTCPPath(net.Conn) (tcpPath, bool) { return tcpPath{}, false }
