package avc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/testmedia"
)

// x264Variant is one encoding of the fixture clip: moving test pattern, 320x240 at
// 25 fps for 3 s, a keyframe every second, four slices per frame.
type x264Variant struct {
	name  string
	cabac bool
	args  []string
}

var x264Variants = []x264Variant{
	{"cabac-high-slices4", true, []string{"-profile:v", "high", "-x264-params", "slices=4:keyint=25:min-keyint=25:scenecut=0:bframes=2"}},
	{"cavlc-baseline-slices4", false, []string{"-profile:v", "baseline", "-x264-params", "slices=4:keyint=25:min-keyint=25:scenecut=0:cabac=0"}},
}

// x264Fixture returns the Annex-B bytes of a variant, encoded by FFmpeg once per
// machine and cached under <repo>/.cache/avc.
func x264Fixture(t testing.TB, v x264Variant) []byte {
	t.Helper()
	root, err := testmedia.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, ".cache", "avc", v.name+".h264")
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return b
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("ffmpeg not found: the avc tests encode their fixtures with it; `make test` installs it")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "out.h264")
	args := []string{"-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=3",
		"-c:v", "libx264", "-preset", "veryfast", "-b:v", "400k", "-pix_fmt", "yuv420p"}
	args = append(append(args, v.args...), "-f", "h264", "-y", tmp)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteFileAtomic(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}
