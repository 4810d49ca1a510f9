//go:build linux

package wspush

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const fanWriteSupported = true

type iovec = unix.Iovec

// writev writes the frames of items to s's socket with one non-blocking writev and
// returns the bytes written; a full socket is not an error (fewer bytes, or 0).
func (fo *fanout) writev(s *session, items []item) (int, error) {
	if cap(fo.heads) < len(items) {
		fo.heads = make([][maxFrameHead]byte, len(items))
	}
	fo.heads = fo.heads[:len(items)]
	fo.iov = fo.iov[:0]
	for i := range items {
		fo.iov = appendIovec(fo.iov, items[i].head(&fo.heads[i]))
		fo.iov = appendIovec(fo.iov, items[i].body())
	}
	fo.wn, fo.werr = 0, nil
	if len(fo.iov) == 0 {
		return 0, nil
	}
	if err := s.raw.Write(fo.writeFn); err != nil {
		return 0, err
	}
	n, err := fo.wn, fo.werr
	clear(fo.iov) // the chunks are not kept alive by the scratch
	return n, err
}

func appendIovec(iov []iovec, b []byte) []iovec {
	if len(b) == 0 {
		return iov
	}
	v := iovec{Base: &b[0]}
	v.SetLen(len(b))
	return append(iov, v)
}

// writevFD is the raw write; it never waits (the caller hands a full socket to the
// viewer's drain goroutine), so it always reports done.
func (fo *fanout) writevFD(fd uintptr) bool {
	for {
		n, _, e := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&fo.iov[0])), uintptr(len(fo.iov)))
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
