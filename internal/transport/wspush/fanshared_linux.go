//go:build linux

package wspush

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Shared frames: the payload of a large frame is the same for every viewer, and
// only its header of a few bytes can differ (a segment's first chunk carries its
// number counted from the viewer's join point). writev copies the whole frame into
// each viewer's socket: on loopback that copy is the largest single part of the
// origin's steady-state CPU, and each socket holds its own copy until the reader
// takes it. A frame written to several viewers in one flush is instead put once in a
// memory file (memfd), header and payload as they go on the wire, and sendfile()d
// to each of them: the sockets reference the file's pages, as nginx's sendfile
// references the page cache's (docs/results/wspush-capacity.md, 2026-11-25).

// sharedMinPayload: smaller frames go by writev, where a copy costs less than the
// file (one-frame chunks of a low-latency channel are a few kB).
const sharedMinPayload = 8 << 10

// sharedKey names one frame as it goes on the wire: the chunk's bytes (shared, so
// their address names them within a flush) and the viewer's header.
type sharedKey struct {
	data *byte
	n    int
	head [maxFrameHead]byte
	hn   uint8
}

// sharedFile is a frame's memory file; fd < 0 until a second viewer wants it (one
// viewer's frame is cheaper written by writev), failed when it could not be made.
type sharedFile struct {
	fd     int
	size   int
	failed bool
}

// sharedFrames holds one flush's files (by value: no allocation per frame once the
// map has grown); release closes them (the sockets keep the pages they reference).
type sharedFrames struct {
	m map[sharedKey]sharedFile
	// The sendfile being made: its file, the offset the kernel advances, the raw
	// function (bound once, no allocation per write).
	cur sharedFile
	off int64
	fn  func(fd uintptr) bool
}

// fileFor returns the memory file holding head+data, made at its second use in the
// flush; ok false means write it by writev.
func (sf *sharedFrames) fileFor(head, data []byte) (sharedFile, bool) {
	if len(data) < sharedMinPayload || len(head) > maxFrameHead {
		return sharedFile{}, false
	}
	k := sharedKey{data: &data[0], n: len(data), hn: uint8(len(head))}
	copy(k.head[:], head)
	if sf.m == nil {
		sf.m = map[sharedKey]sharedFile{}
	}
	f, seen := sf.m[k]
	switch {
	case !seen:
		sf.m[k] = sharedFile{fd: -1, size: len(head) + len(data)}
		return sharedFile{}, false
	case f.failed:
		return sharedFile{}, false
	case f.fd < 0:
		fd, err := newFrameFile(head, data)
		if err != nil {
			f.failed = true
			sf.m[k] = f
			return sharedFile{}, false
		}
		f.fd = fd
		sf.m[k] = f
	}
	return f, true
}

// release closes the flush's files; clear keeps the map's room for the next flush.
func (sf *sharedFrames) release() {
	for _, f := range sf.m {
		if f.fd >= 0 {
			_ = unix.Close(f.fd)
		}
	}
	clear(sf.m)
}

// memfdName is the frame files' name (in /proc/PID/fd), NUL-terminated once here:
// unix.MemfdCreate would allocate it per file.
var memfdName = []byte("wspush-frame\x00")

// newFrameFile makes a memory file holding head and data.
func newFrameFile(head, data []byte) (int, error) {
	r, _, e := syscall.Syscall(unix.SYS_MEMFD_CREATE, uintptr(unsafe.Pointer(&memfdName[0])), unix.MFD_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	fd := int(r)
	for _, b := range [][]byte{head, data} {
		for len(b) > 0 {
			n, err := unix.Write(fd, b)
			if err != nil {
				unix.Close(fd)
				return -1, err
			}
			b = b[n:]
		}
	}
	return fd, nil
}

// sendShared writes the frame in f to s's socket with one non-blocking sendfile and
// returns the bytes written, as writev does (a full socket: fewer bytes, or 0).
func (fo *fanout) sendShared(s *session, f sharedFile) (int, error) {
	fo.sendfiles++
	if fo.shared.fn == nil {
		fo.shared.fn = fo.sendfileFD
	}
	fo.shared.cur, fo.wn, fo.werr = f, 0, nil
	err := s.raw.Write(fo.shared.fn)
	fo.shared.cur = sharedFile{}
	if err != nil {
		return 0, err
	}
	return fo.wn, fo.werr
}

// sendfileFD is the raw sendfile, made as writevFD's writev is (a non-blocking
// socket: it cannot block).
func (fo *fanout) sendfileFD(fd uintptr) bool {
	f := fo.shared.cur
	for {
		fo.shared.off = 0
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDFILE, fd, uintptr(f.fd), uintptr(unsafe.Pointer(&fo.shared.off)), uintptr(f.size), 0, 0)
		switch e {
		case 0:
			fo.wn = int(n)
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
		default:
			fo.werr = e
		}
		return true
	}
}
