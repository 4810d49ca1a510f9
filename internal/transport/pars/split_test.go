package pars

import (
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		size    int64
		n       int
		minLen  int64
		wantLen []int64
	}{
		{"even", 12, 3, 0, []int64{4, 4, 4}},
		{"uneven last range is the short one", 10, 3, 0, []int64{4, 3, 3}},
		{"uneven by n-1", 11, 4, 0, []int64{3, 3, 3, 2}},
		{"one connection", 1000, 1, 0, []int64{1000}},
		{"more connections than bytes", 3, 8, 0, []int64{1, 1, 1}},
		{"min range caps the count", 40 << 10, 8, 16 << 10, []int64{20 << 10, 20 << 10}},
		{"smaller than min range", 1000, 4, 16 << 10, []int64{1000}},
		{"empty", 0, 4, 0, nil},
		{"n zero means one", 5, 0, 0, []int64{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.size, tt.n, tt.minLen)
			if len(got) != len(tt.wantLen) {
				t.Fatalf("Split(%d, %d, %d) = %v, want lengths %v", tt.size, tt.n, tt.minLen, got, tt.wantLen)
			}
			var off int64
			for i, r := range got {
				if r.Off != off || r.Len != tt.wantLen[i] || r.Len <= 0 {
					t.Fatalf("range %d = %+v, want off %d len %d (all: %v)", i, r, off, tt.wantLen[i], got)
				}
				off = r.End()
			}
			if off != max(tt.size, 0) {
				t.Fatalf("ranges cover %d bytes, want %d", off, tt.size)
			}
		})
	}
}

// TestSplitCovers checks every size and n up to small bounds: contiguous, complete,
// non-empty, at most n ranges, lengths differing by at most one byte.
func TestSplitCovers(t *testing.T) {
	for size := int64(1); size <= 200; size++ {
		for n := 1; n <= 9; n++ {
			rs := Split(size, n, 0)
			if len(rs) > n || len(rs) == 0 {
				t.Fatalf("Split(%d, %d) gave %d ranges", size, n, len(rs))
			}
			var off int64
			lo, hi := rs[0].Len, rs[0].Len
			for _, r := range rs {
				if r.Off != off || r.Len <= 0 {
					t.Fatalf("Split(%d, %d) = %v: gap, overlap or empty range", size, n, rs)
				}
				off = r.End()
				lo, hi = min(lo, r.Len), max(hi, r.Len)
			}
			if off != size || hi-lo > 1 {
				t.Fatalf("Split(%d, %d) = %v: covers %d, lengths %d..%d", size, n, rs, off, lo, hi)
			}
		}
	}
}

func TestRangeHeader(t *testing.T) {
	if got := (Range{Off: 100, Len: 50}).Header(); got != "bytes=100-149" {
		t.Fatalf("Header = %q", got)
	}
}

func TestContentRange(t *testing.T) {
	tests := []struct {
		in   string
		r    Range
		size int64
		ok   bool
	}{
		{"bytes 0-99/1000", Range{0, 100}, 1000, true},
		{"bytes 900-999/1000", Range{900, 100}, 1000, true},
		{"bytes 5-5/*", Range{5, 1}, -1, true},
		{"bytes */1000", Range{}, 0, false},
		{"bytes 10-5/100", Range{}, 0, false},
		{"items 0-1/2", Range{}, 0, false},
		{"bytes 0-1", Range{}, 0, false},
		{"", Range{}, 0, false},
	}
	for _, tt := range tests {
		r, size, ok := contentRange(tt.in)
		if ok != tt.ok || (ok && (r != tt.r || size != tt.size)) {
			t.Errorf("contentRange(%q) = %v, %d, %v; want %v, %d, %v", tt.in, r, size, ok, tt.r, tt.size, tt.ok)
		}
	}
}
