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
	if len(items) == 1 && items[0].text == nil {
		if f, ok := fo.shared.fileFor(items[0].head(&fo.heads[0]), items[0].data); ok {
			return fo.sendShared(s, f)
		}
	}
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
//
// The socket is non-blocking, so the system call cannot block, and it is made
// without telling the scheduler (RawSyscall): a loopback write of a segment runs
// the receiver's side too and takes tens of µs, long enough that with one P the
// runtime's monitor thread took the P away during nearly every write and then kept
// polling every 20 µs — a sixth of a busy origin's CPU went to that thread and its
// context switches (docs/results/wspush-capacity.md).
func (fo *fanout) writevFD(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&fo.iov[0])), uintptr(len(fo.iov)))
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
