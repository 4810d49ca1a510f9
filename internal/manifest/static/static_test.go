package static

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/dash"
	"github.com/streambed/streambed/internal/manifest/hls"
	"github.com/streambed/streambed/internal/manifest/internal/manifesttest"
	"github.com/streambed/streambed/internal/media"
)

// writeAsset lays out a synthetic asset with placeholder media files, as the packager
// would, and writes its manifests.
func writeAsset(t *testing.T, d, total time.Duration) (string, *media.Asset) {
	t.Helper()
	dir := t.TempDir()
	a := manifesttest.Asset("clip", d, total)
	for _, tr := range a.Tracks {
		touch(t, filepath.Join(dir, tr.InitPath))
		for _, s := range tr.Segments {
			touch(t, filepath.Join(dir, s.Path))
		}
	}
	if err := WriteAssetFiles(dir, a); err != nil {
		t.Fatal(err)
	}
	return dir, a
}

func touch(t *testing.T, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte("media"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAssetFilesConsistent(t *testing.T) {
	for _, c := range []struct{ d, total time.Duration }{
		{2 * time.Second, 9 * time.Second},
		{time.Second, 40 * time.Second},
		{10 * time.Second, 95 * time.Second},
	} {
		t.Run(c.d.String()+"/"+c.total.String(), func(t *testing.T) {
			dir, a := writeAsset(t, c.d, c.total)

			// HLS: follow every URI from master.m3u8 and add up the EXTINFs.
			master := readLines(t, filepath.Join(dir, MultivariantFile))
			playlists := uris(master)
			if len(playlists) != len(a.Tracks) {
				t.Fatalf("master.m3u8 names %d playlists, want %d: %v", len(playlists), len(a.Tracks), playlists)
			}
			for _, tr := range a.Tracks {
				rel := tr.ID + "/" + MediaPlaylistFile
				lines := readLines(t, filepath.Join(dir, rel))
				var sum float64
				for _, l := range lines {
					if v, ok := strings.CutPrefix(l, "#EXTINF:"); ok {
						f, err := strconv.ParseFloat(strings.TrimSuffix(v, ","), 64)
						if err != nil {
							t.Fatal(err)
						}
						sum += f
					}
					if v, ok := strings.CutPrefix(l, "#EXT-X-MAP:URI="); ok {
						exists(t, dir, path.Join(path.Dir(rel), strings.Trim(v, `"`)))
					}
				}
				segs := uris(lines)
				if len(segs) != len(tr.Segments) {
					t.Errorf("%s: %d segments listed, want %d", rel, len(segs), len(tr.Segments))
				}
				for _, u := range segs {
					exists(t, dir, path.Join(path.Dir(rel), u))
				}
				want := tr.Seconds(tr.Segments[len(tr.Segments)-1].End())
				if math.Abs(sum-want) > 1e-6*float64(len(segs)) {
					t.Errorf("%s: EXTINF sum %.6f, track lasts %.6f", rel, sum, want)
				}
				if tr.Kind == media.Video && math.Abs(sum-c.total.Seconds()) > 1e-9 {
					t.Errorf("%s: EXTINF sum %.6f, asset lasts %s", rel, sum, c.total)
				}
			}

			// DASH: both MPDs validate, and the $Number$ one names existing files.
			for _, name := range []string{ManifestFile, TimelineManifestFile} {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				manifesttest.ValidateMPD(t, name, b)
				if !bytes.Contains(b, []byte(`mediaPresentationDuration="`)) || !bytes.Contains(b, []byte(`type="static"`)) {
					t.Errorf("%s is not a static MPD with a duration", name)
				}
			}
			checkNumberMPD(t, dir, a)

			// The origin renders the same bytes from AssetPresentation.
			same(t, dir, ManifestFile, func(b *bytes.Buffer) error { return dash.Render(b, manifest.AssetPresentation(a, manifest.Number)) })
			same(t, dir, TimelineManifestFile, func(b *bytes.Buffer) error { return dash.Render(b, manifest.AssetPresentation(a, manifest.Timeline)) })
			same(t, dir, MultivariantFile, func(b *bytes.Buffer) error {
				return hls.RenderMultivariant(b, manifest.AssetPresentation(a, manifest.Number))
			})

			// No temporary files left behind.
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if strings.HasSuffix(p, ".tmp") {
					t.Errorf("temporary file left: %s", p)
				}
				return err
			})
		})
	}
}

// checkNumberMPD expands manifest.mpd's templates for every segment and checks the file.
func checkNumberMPD(t *testing.T, dir string, a *media.Asset) {
	t.Helper()
	var m struct {
		Sets []struct {
			Template *struct {
				StartNumber    uint64 `xml:"startNumber,attr"`
				Media          string `xml:"media,attr"`
				Initialization string `xml:"initialization,attr"`
			} `xml:"SegmentTemplate"`
			Reps []struct {
				ID string `xml:"id,attr"`
			} `xml:"Representation"`
		} `xml:"Period>AdaptationSet"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, as := range m.Sets {
		for _, r := range as.Reps {
			tr, err := a.Stream().Track(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			init, _ := manifest.ExpandTemplate(as.Template.Initialization, manifest.TemplateValues{RepresentationID: r.ID})
			exists(t, dir, init)
			for i := range tr.Segments {
				u, _ := manifest.ExpandTemplate(as.Template.Media, manifest.TemplateValues{RepresentationID: r.ID, Number: as.Template.StartNumber + uint64(i)})
				exists(t, dir, u)
				n++
			}
		}
	}
	if n == 0 {
		t.Error("manifest.mpd names no segments")
	}
}

func same(t *testing.T, dir, name string, render func(*bytes.Buffer) error) {
	t.Helper()
	var b bytes.Buffer
	if err := render(&b); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s differs from what the origin would render", name)
	}
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// uris lists the URI lines and the URI="..." attributes of EXT-X-MEDIA tags.
func uris(lines []string) []string {
	var out []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "#EXT-X-MEDIA:"):
			if _, u, ok := strings.Cut(l, `URI="`); ok {
				out = append(out, u[:strings.IndexByte(u, '"')])
			}
		case l != "" && !strings.HasPrefix(l, "#"):
			out = append(out, l)
		}
	}
	return out
}

func exists(t *testing.T, dir, rel string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
		t.Errorf("named file missing: %v", err)
	}
}

func TestRewriteReplacesFiles(t *testing.T) {
	dir, a := writeAsset(t, 2*time.Second, 9*time.Second)
	old := filepath.Join(dir, ManifestFile)
	if err := os.WriteFile(old, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAssetFiles(dir, a); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); bytes.Equal(b, []byte("stale")) {
		t.Error("manifest.mpd not replaced")
	}
}

func TestRefusesOtherLayouts(t *testing.T) {
	dir := t.TempDir()
	a := manifesttest.Asset("clip", 2*time.Second, 9*time.Second)
	a.Tracks[1].Segments[2].Path = "v720/segment-3.m4s"
	if err := WriteAssetFiles(dir, a); !errors.Is(err, media.ErrInvalidMedia) {
		t.Fatalf("error %v, want ErrInvalidMedia", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written despite the error: %v", entries)
	}
	a = manifesttest.Asset("clip", 2*time.Second, 9*time.Second)
	a.Version = 0
	if err := WriteAssetFiles(dir, a); !errors.Is(err, media.ErrInvalidMedia) {
		t.Fatalf("unversioned asset: error %v, want ErrInvalidMedia", err)
	}
}
