package avc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/testmedia"
)

// TestSplitCMAFSamples runs the split over the samples of a packaged asset, as the
// FDSP server reads them from the hub.
func TestSplitCMAFSamples(t *testing.T) {
	dir := testmedia.Asset(t)
	a, err := media.LoadAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := a.Stream().TracksOf(media.Video)[0]
	init, err := os.ReadFile(filepath.Join(dir, v.InitPath))
	if err != nil {
		t.Fatal(err)
	}
	ps, lsize, err := FromInit(init)
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmaf.ParseInit(init)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[NALType]int{}
	for _, ref := range v.Segments {
		b, err := os.ReadFile(filepath.Join(dir, ref.Path))
		if err != nil {
			t.Fatal(err)
		}
		seg, err := cmaf.ParseSegment(b, in.Defaults)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range seg.Fragments {
			for i, s := range f.Samples {
				nals, err := SampleNALs(s.Data, lsize)
				if err != nil {
					t.Fatal(err)
				}
				idr := false
				for _, n := range nals {
					kinds[Type(n)]++
					idr = idr || Type(n) == NALSliceIDR
					for _, bp := range []int{0, 100} {
						k, err := ps.Split(n, bp)
						if err != nil {
							t.Fatalf("segment %d sample %d: %v", ref.Number, i, err)
						}
						if k < 1 || k > len(n) {
							t.Fatalf("split at %d of %d", k, len(n))
						}
					}
				}
				if idr != s.IsSync() {
					t.Fatalf("segment %d sample %d: IDR %v but sync %v", ref.Number, i, idr, s.IsSync())
				}
			}
		}
	}
	if kinds[NALSliceIDR] == 0 || kinds[NALSlice] == 0 {
		t.Fatalf("NAL units seen: %v", kinds)
	}
}
