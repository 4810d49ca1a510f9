//go:build !linux

package netutil

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Pacing is what a TCP sender's TCP_INFO says about how fast it sends (Linux only).
type Pacing struct {
	Rate, Delivery uint64
	Cwnd, MSS      uint32
	RTT            time.Duration
}

var errNoTCPInfo = errors.New("TCP pacing state: only on Linux (TCP_INFO)")

// RawConnOf is nil outside Linux: the pacing guard has nothing to read.
func RawConnOf(net.Conn) syscall.RawConn { return nil }

// ReadPacing needs Linux.
func ReadPacing(syscall.RawConn) (Pacing, error) { return Pacing{}, errNoTCPInfo }

// ReinitCongestion needs Linux.
func ReinitCongestion(syscall.RawConn, string) (string, bool, error) { return "", false, errNoTCPInfo }

// PacingReader reads nothing outside Linux.
type PacingReader struct{}

// NewPacingReader needs Linux.
func NewPacingReader(syscall.RawConn) *PacingReader { return &PacingReader{} }

// Read needs Linux.
func (*PacingReader) Read() (Pacing, error) { return Pacing{}, errNoTCPInfo }
