package netutil

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pacing is what a TCP sender's TCP_INFO says about how fast it sends: one
// getsockopt, cheap enough to read before each live response.
type Pacing struct {
	Rate     uint64        // pacing rate, bytes/s (tcpi_pacing_rate)
	Delivery uint64        // last delivery-rate sample, bytes/s (tcpi_delivery_rate)
	Cwnd     uint32        // congestion window, packets (tcpi_snd_cwnd)
	MSS      uint32        // sender's segment size, bytes (tcpi_snd_mss)
	RTT      time.Duration // smoothed round-trip time (tcpi_rtt)
}

// RawConnOf is the socket beneath c (through tls.Conn's and wrappers' NetConn), or
// nil when there is none (not TCP, or not this platform's kind of socket).
func RawConnOf(c net.Conn) syscall.RawConn {
	for range 8 { // wrappers of wrappers, but never a loop
		if sc, ok := c.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				return rc
			}
			return nil
		}
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = nc.NetConn()
	}
	return nil
}

// TCPInfo reads a connected TCP socket's TCP_INFO (allocating its answer: for reads
// now and then; PacingReader is the one for every response).
func TCPInfo(rc syscall.RawConn) (*unix.TCPInfo, error) {
	var info *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return nil, err
	}
	return info, serr
}

// ReadPacing reads a connection's pacing state from TCP_INFO.
func ReadPacing(rc syscall.RawConn) (Pacing, error) {
	return NewPacingReader(rc).Read()
}

// PacingReader reads one connection's TCP_INFO again and again without allocating
// (unix.GetsockoptTCPInfo allocates its answer and the RawConn callback each call):
// made once per connection, read before each live response.
type PacingReader struct {
	rc     syscall.RawConn
	info   unix.TCPInfo
	errno  syscall.Errno
	readFn func(fd uintptr)
}

// NewPacingReader reads rc's TCP_INFO (not safe for concurrent Reads).
func NewPacingReader(rc syscall.RawConn) *PacingReader {
	p := &PacingReader{rc: rc}
	p.readFn = func(fd uintptr) {
		size := uint32(unsafe.Sizeof(p.info))
		// getsockopt never blocks: no need to tell the scheduler.
		_, _, p.errno = unix.RawSyscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_INFO,
			uintptr(unsafe.Pointer(&p.info)), uintptr(unsafe.Pointer(&size)), 0)
	}
	return p
}

// Read reads the connection's pacing state.
func (p *PacingReader) Read() (Pacing, error) {
	if err := p.rc.Control(p.readFn); err != nil {
		return Pacing{}, err
	}
	if p.errno != 0 {
		return Pacing{}, fmt.Errorf("TCP_INFO: %w", p.errno)
	}
	i := &p.info
	return Pacing{Rate: i.Pacing_rate, Delivery: i.Delivery_rate, Cwnd: i.Snd_cwnd,
		MSS: i.Snd_mss, RTT: time.Duration(i.Rtt) * time.Microsecond}, nil
}

// ReinitCongestion restarts a connection's congestion control from its initial
// state, keeping the algorithm: TCP_CONGESTION set to another algorithm and back.
// Linux re-initialises congestion control only when the name changes
// (tcp_set_congestion_control returns at once for the algorithm in use, else
// tcp_reinit_congestion_control runs the new one's init). For BBR that init
// (bbr_init) empties the bandwidth filter, enters STARTUP and paces at its high gain
// (2.89) × cwnd / srtt: a connection whose estimate had collapsed sends at once at
// a rate its window and round trip allow, not at the collapsed estimate. The window
// and RTT are the socket's and stay. Only an algorithm whose name starts with prefix
// is restarted ("": any); it returns the algorithm (unchanged) and whether it did.
func ReinitCongestion(rc syscall.RawConn, prefix string) (name string, done bool, err error) {
	if cerr := rc.Control(func(fd uintptr) {
		name, err = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if err != nil {
			err = fmt.Errorf("TCP_CONGESTION: %w", err)
			return
		}
		name = strings.TrimRight(name, "\x00")
		if !strings.HasPrefix(name, prefix) {
			return
		}
		other := "reno" // built in, and allowed without CAP_NET_ADMIN by default
		if name == other {
			other = "cubic"
		}
		if err = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, other); err != nil {
			err = fmt.Errorf("TCP_CONGESTION %s (from %s): %w", other, name, err)
			return
		}
		if err = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil {
			err = fmt.Errorf("TCP_CONGESTION back to %s (now %s): %w", name, other, err)
			return
		}
		done = true
	}); cerr != nil {
		return "", false, cerr
	}
	return name, done, err
}
