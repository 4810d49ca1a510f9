//go:build linux

package wspush

import (
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkLoopbackFrameWrite measures the sender's CPU (its own thread's user +
// system time, getrusage RUSAGE_THREAD; not wall time) for one frame written to a
// loopback TCP socket whose reader keeps up, the way the fan-out writes it and an
// alternative:
//
//   - writev: one writev of the frame header and the shared payload (the fan-out's
//     path; the kernel copies the payload into the socket);
//   - sendfile: the header with send(MSG_MORE), then sendfile of the payload from a
//     memfd holding it once (no copy into the socket, as nginx's sendfile; one more
//     system call).
//
// On loopback the receiver's protocol processing runs in the sender's context and
// is charged to it; the receiver's copy to user space is the reader's. Run:
//
//	go test -run '^$' -bench LoopbackFrameWrite -benchtime 20000x ./internal/transport/wspush/
func BenchmarkLoopbackFrameWrite(b *testing.B) {
	for _, size := range []int{25_000, 2_800} {
		for _, how := range []string{"writev", "sendfile"} {
			b.Run(how+"/"+strconv.Itoa(size), func(b *testing.B) { benchFrameWrite(b, how, size) })
		}
	}
}

const benchConns = 64

func benchFrameWrite(b *testing.B, how string, size int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var fds []int
	for range benchConns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		defer s.Close()
		go func() { _, _ = io.Copy(io.Discard, c) }() // the reader keeps up
		f, err := s.(*net.TCPConn).File()             // a blocking duplicate: no poller in the measured loop
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	head := []byte{0x82, 126, byte((size + 12) >> 8), byte(size + 12), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	mfd, err := unix.MemfdCreate("chunk", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(mfd)
	if _, err := unix.Write(mfd, payload); err != nil {
		b.Fatal(err)
	}
	iov := make([]unix.Iovec, 2)
	iov[0].Base, iov[1].Base = &head[0], &payload[0]
	iov[0].SetLen(len(head))
	iov[1].SetLen(len(payload))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var r0, r1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &r0)
	b.ResetTimer()
	for i := range b.N {
		fd := fds[i%benchConns]
		switch how {
		case "writev":
			n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), 2)
			if e != 0 || int(n) != len(head)+size {
				b.Fatalf("writev: %d %v", n, e)
			}
		case "sendfile":
			if err := unix.Send(fd, head, unix.MSG_MORE); err != nil {
				b.Fatal(err)
			}
			off := int64(0)
			for off < int64(size) {
				if _, err := unix.Sendfile(fd, mfd, &off, size-int(off)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &r1)
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()+r1.Stime.Nano()-r0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "sender-cpu-µs/op")
}
