//go:build !linux

package wspush

import (
	"errors"
	"syscall"
)

var errNoTCPInfo = errors.New("TCP_INFO is read on Linux only")

func tcpStats(syscall.RawConn) (TCPStats, error) { return TCPStats{}, errNoTCPInfo }

func setNotSentLowat(syscall.RawConn, int) error { return errNoTCPInfo }
