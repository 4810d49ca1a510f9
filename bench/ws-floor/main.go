// Command ws-floor measures the floor of WebSocket push on loopback: the kernel's
// data path for the same bytes, with no server around it. "write" accepts N
// connections and, every period, writes one prebuilt frame (a WebSocket binary frame
// header and SIZE bytes of payload, as the fan-out's writev does: two iovecs, one
// non-blocking writev per socket) to each of them; "read" opens N connections and
// reads them until they close, one goroutine each, like the load generator's
// clients. On loopback the receiver's TCP processing runs in the writer's context, so
// the writer's CPU per frame is what any push server pays at least per message in
// bench/ws-steady.sh (docs/results/wspush-capacity.md, 2026-11-25).
//
//	ws-floor write -listen 127.0.0.1:19560 -n 4000 -size 25000 -every 2s -for 40s
//	ws-floor read -connect 127.0.0.1:19560 -n 4000
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ws-floor write|read [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "write":
		err = write(os.Args[2:])
	case "read":
		err = read(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (write, read)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ws-floor:", err)
		os.Exit(1)
	}
}

// stats is what the writer reports on stdout as JSON.
type stats struct {
	Conns    int    `json:"conns"`
	Sizes    []int  `json:"payload_bytes"`
	Frames   int64  `json:"frames"`  // frames written whole by the one writev
	Partial  int64  `json:"partial"` // writevs that took only part of the frame (finished blocking)
	Bytes    int64  `json:"bytes"`   // bytes written
	SndBuf   int    `json:"sndbuf"`  // SO_SNDBUF asked (0: the kernel's)
	Lowat    int    `json:"notsent_lowat"`
	Mode     string `json:"mode"`
	Rounds   int64  `json:"rounds"`
	Duration string `json:"duration"`
}

func write(args []string) error {
	fs := flag.NewFlagSet("write", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:19560", "address to accept the readers on")
	n := fs.Int("n", 1000, "connections to wait for")
	sizeList := fs.String("size", "25000", "payload bytes per frame; a comma-separated list is used in turn, one size per round (the segments of a looped asset)")
	every := fs.Duration("every", 2*time.Second, "period of the frames")
	dur := fs.Duration("for", 40*time.Second, "how long to write after the last reader connected")
	sndbuf := fs.Int("sndbuf", 0, "SO_SNDBUF of each socket (0: the kernel's autotuning)")
	lowat := fs.Int("lowat", 0, "TCP_NOTSENT_LOWAT of each socket (0: none)")
	mode := fs.String("mode", "writev", "writev: header and payload copied by one writev; sendfile: the header by send(MSG_MORE), the payload from a memfd by sendfile (no copy on the sender); sendfile1: header and payload from one memfd, one sendfile; sendfile1-file: the same from a regular file in -dir (written by one write, so its page cache may hold it in large folios, as the archive nginx serves)")
	dir := fs.String("dir", os.TempDir(), "where -mode sendfile1-file puts its files (unlinked once open)")
	status := fs.String("status", "", "file holding the frames written so far, rewritten after each round")
	_ = fs.Parse(args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	var sizes []int
	for _, f := range strings.Split(*sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad -size %q", *sizeList)
		}
		sizes = append(sizes, n)
	}
	frames := make([]frame, len(sizes))
	for i, n := range sizes {
		if frames[i], err = newFrame(n, *mode, *dir); err != nil {
			return err
		}
	}
	conns := make([]*net.TCPConn, 0, *n)
	fds := make([]uintptr, 0, *n)
	for len(conns) < *n {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		tc := c.(*net.TCPConn)
		if *sndbuf > 0 {
			_ = tc.SetWriteBuffer(*sndbuf)
		}
		rc, _ := tc.SyscallConn()
		_ = rc.Control(func(fd uintptr) {
			if *lowat > 0 {
				_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, *lowat)
			}
			fds = append(fds, fd)
		})
		conns = append(conns, tc)
	}
	st := stats{Mode: *mode, Conns: *n, Sizes: sizes, SndBuf: *sndbuf, Lowat: *lowat, Duration: dur.String()}
	tick := time.NewTicker(*every)
	defer tick.Stop()
	end := time.Now().Add(*dur)
	for time.Now().Before(end) {
		<-tick.C
		f := &frames[st.Rounds%int64(len(frames))]
		st.Rounds++
		head, payload, total := f.head, f.payload, len(f.head)+len(f.payload)
		for i, fd := range fds {
			var w uintptr
			var e syscall.Errno
			switch *mode {
			case "sendfile":
				w, e = f.sendfile(fd)
			case "sendfile1", "sendfile1-file":
				var off int64
				w, _, e = syscall.RawSyscall6(syscall.SYS_SENDFILE, fd, uintptr(f.whole), uintptr(unsafe.Pointer(&off)), uintptr(total), 0, 0)
			default:
				w, _, e = syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&f.iov[0])), 2)
			}
			if e != 0 && e != syscall.EAGAIN {
				return fmt.Errorf("writev: %w", e)
			}
			if e == syscall.EAGAIN {
				w = 0
			}
			st.Bytes += int64(w)
			if int(w) == total {
				st.Frames++
				continue
			}
			// Partial: finish it blocking, as the fan-out's drain would.
			st.Partial++
			rest := append(head[min(int(w), len(head)):len(head):len(head)], payload[max(0, int(w)-len(head)):]...)
			k, err := conns[i].Write(rest)
			st.Bytes += int64(k)
			if err != nil {
				return err
			}
		}
		if *status != "" {
			writeStatus(*status, st.Frames+st.Partial)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	if *status != "" {
		_ = os.Remove(*status)
	}
	return json.NewEncoder(os.Stdout).Encode(st)
}

func read(args []string) error {
	fs := flag.NewFlagSet("read", flag.ExitOnError)
	addr := fs.String("connect", "127.0.0.1:19560", "the writer's address")
	n := fs.Int("n", 1000, "connections")
	_ = fs.Parse(args)
	done := make(chan error, *n)
	for i := 0; i < *n; i++ {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			return err
		}
		go func() {
			buf := make([]byte, 32<<10)
			for {
				if _, err := c.Read(buf); err != nil {
					c.Close()
					if errors.Is(err, io.EOF) {
						err = nil
					}
					done <- err
					return
				}
			}
		}()
	}
	var first error
	for i := 0; i < *n; i++ {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// writeStatus replaces the status file (rename: a reader never sees half of it). Not
// fsutil.WriteFileAtomic: its fsync would be charged to the floor being measured, and
// the file is the bench's scratch in its own temporary folder.
func writeStatus(path string, frames int64) {
	tmp := path + ".tmp"
	if os.WriteFile(tmp, []byte(fmt.Sprintln(frames)), 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

// frame is one prebuilt WebSocket binary frame: the header (FIN, opcode 2, 16- or
// 64-bit length, unmasked from a server) and the payload, built once and shared by
// every socket, as the fan-out's frames are.
type frame struct {
	head, payload []byte
	iov           []unix.Iovec
	memfd         int // the payload in a memory file, for -mode sendfile
	whole         int // header and payload in a memory file, for -mode sendfile1
}

func newFrame(size int, mode, dir string) (frame, error) {
	head := []byte{0x82, 126, byte(size >> 8), byte(size)}
	if size > 0xffff {
		head = []byte{0x82, 127, 0, 0, 0, 0, byte(size >> 24), byte(size >> 16), byte(size >> 8), byte(size)}
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	iov := make([]unix.Iovec, 2)
	iov[0].Base, iov[1].Base = &head[0], &payload[0]
	iov[0].SetLen(len(head))
	iov[1].SetLen(len(payload))
	fd, err := unix.MemfdCreate("ws-floor", 0)
	if err != nil {
		return frame{}, err
	}
	if _, err := unix.Write(fd, payload); err != nil {
		return frame{}, err
	}
	whole, err := unix.MemfdCreate("ws-floor", 0)
	if mode == "sendfile1-file" {
		whole, err = regularFile(dir)
	}
	if err != nil {
		return frame{}, err
	}
	if _, err := unix.Write(whole, append(append([]byte(nil), head...), payload...)); err != nil {
		return frame{}, err
	}
	return frame{head: head, payload: payload, iov: iov, memfd: fd, whole: whole}, nil
}

// regularFile opens a new, unlinked file in dir (its pages stay in the page cache
// while it is open).
func regularFile(dir string) (int, error) {
	f, err := os.CreateTemp(dir, "ws-floor-*")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return -1, err
	}
	return unix.Dup(int(f.Fd()))
}

// sendfile sends the header with MSG_MORE (it waits for the payload in the same
// segment) and the payload by reference from the memfd; it returns the bytes sent.
func (f *frame) sendfile(sock uintptr) (uintptr, syscall.Errno) {
	w, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, sock, uintptr(unsafe.Pointer(&f.head[0])), uintptr(len(f.head)), unix.MSG_MORE|unix.MSG_DONTWAIT, 0, 0)
	if e != 0 || int(w) < len(f.head) {
		return w, e
	}
	var off int64
	k, _, e := syscall.RawSyscall6(syscall.SYS_SENDFILE, sock, uintptr(f.memfd), uintptr(unsafe.Pointer(&off)), uintptr(len(f.payload)), 0, 0)
	if e != 0 {
		return w, e
	}
	return w + k, 0
}
