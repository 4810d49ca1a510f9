package netem

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// openTUN creates a layer-3 TUN device (no packet-information header) in the calling
// thread's network namespace. The file is non-blocking, so reads and writes go
// through Go's poller and Close wakes a blocked Read. The device disappears when the
// file is closed.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "tun:"+name), nil
}

// wakeTimer is a timerfd on CLOCK_MONOTONIC read through Go's poller. It wakes a
// goroutine at an absolute time with tens of microseconds of lateness, where a Go
// timer can be up to a millisecond late.
type wakeTimer struct {
	f   *os.File
	buf [8]byte
}

func newWakeTimer() (*wakeTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	return &wakeTimer{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// arm sets the timer to fire at the absolute monotonic time at (ns); a time in the
// past fires at once.
func (t *wakeTimer) arm(at int64) error {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	at = max(at, 1) // 0 would disarm
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME, &spec, nil)
	}); err != nil {
		return err
	}
	return serr
}

// wait blocks until the timer fires or its file is closed (the network's Close
// closes it with the TUN files).
func (t *wakeTimer) wait() error {
	_, err := t.f.Read(t.buf[:])
	return err
}

// clock reads CLOCK_MONOTONIC in nanoseconds, the clock timerfd uses, through Go's
// cheap monotonic time.
type clock struct {
	base int64
	t0   time.Time
}

func newClock() clock {
	t0 := time.Now()
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return clock{base: ts.Nano(), t0: t0}
}

func (c clock) now() int64 { return c.base + int64(time.Since(c.t0)) }
