package hls

import (
	"errors"
	"strings"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

// TestHostileMultivariant: thousands of identical variants are refused (not parsed
// in quadratic time), and up to the bound their IDs stay unique.
func TestHostileMultivariant(t *testing.T) {
	variant := "#EXT-X-STREAM-INF:BANDWIDTH=1000\nv/playlist.m3u8\n"
	many := "#EXTM3U\n" + strings.Repeat(variant, 20000)
	if _, err := ParseMultivariant([]byte(many), "http://o/master.m3u8"); !errors.Is(err, media.ErrInvalidMedia) {
		t.Fatalf("20000 variants: err %v, want ErrInvalidMedia", err)
	}
	mv, err := ParseMultivariant([]byte("#EXTM3U\n"+strings.Repeat(variant, maxVariants)), "http://o/master.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range mv.Variants {
		if seen[v.ID] {
			t.Fatalf("duplicate ID %q", v.ID)
		}
		seen[v.ID] = true
	}
}

// TestDurationTagsBounded: durations that do not fit a time.Duration are refused.
func TestDurationTagsBounded(t *testing.T) {
	for _, pl := range []string{
		"#EXTM3U\n#EXT-X-TARGETDURATION:10000000000\n#EXTINF:2,\ns.m4s\n",
		"#EXTM3U\n#EXT-X-TARGETDURATION:NaN\n#EXTINF:2,\ns.m4s\n",
		"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:+Inf,\ns.m4s\n",
		"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:1e300,\ns.m4s\n",
	} {
		if _, err := ParseMedia([]byte(pl), "http://o/v/playlist.m3u8"); !errors.Is(err, media.ErrInvalidMedia) {
			t.Errorf("%q: err %v, want ErrInvalidMedia", pl, err)
		}
	}
}
