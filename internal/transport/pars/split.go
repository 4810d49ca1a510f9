package pars

import "fmt"

// Range is a byte range [Off, Off+Len) of a resource.
type Range struct {
	Off, Len int64
}

// End is the offset just past the range.
func (r Range) End() int64 { return r.Off + r.Len }

// Header is the value of an HTTP Range header asking for r ("bytes=first-last").
func (r Range) Header() string { return fmt.Sprintf("bytes=%d-%d", r.Off, r.End()-1) }

// Split cuts a resource of size bytes into at most n contiguous ranges of at least
// minLen bytes each (except when the whole resource is smaller). The ranges are as
// even as integer division allows: the first size%k ranges are one byte longer, so
// the last range is the short one when the size does not divide. Split never returns
// an empty range; a resource of size 0 gives no ranges.
func Split(size int64, n int, minLen int64) []Range {
	if size <= 0 {
		return nil
	}
	k := int64(max(n, 1))
	if minLen > 0 {
		k = min(k, max(size/minLen, 1))
	}
	k = min(k, size)
	base, extra := size/k, size%k
	out := make([]Range, 0, k)
	var off int64
	for i := int64(0); i < k; i++ {
		l := base
		if i < extra {
			l++
		}
		out = append(out, Range{Off: off, Len: l})
		off += l
	}
	return out
}
