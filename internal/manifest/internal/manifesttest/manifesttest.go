// Package manifesttest holds what the manifest packages' tests share: a synthetic
// stream, golden files (go test ... -update rewrites them) and MPD schema validation
// with xmllint.
package manifesttest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/media"
)

// Update is set by `go test ./internal/manifest/... -update`: golden files are rewritten.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Golden compares got with testdata/name, or rewrites that file under -update.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test with -update if the change is intended):\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, w, g)
		}
	}
	return "(only line endings differ)"
}

// SchemaRel is where the DASH schema lives, relative to a parent folder of the repo.
const SchemaRel = "shared/conformance/dash-schema/DASH-MPD.xsd"

// SchemaEnv names a schema file explicitly, wherever it is.
const SchemaEnv = "STREAMBED_DASH_SCHEMA"

// SchemaPath returns $STREAMBED_DASH_SCHEMA when set (whether or not the file is
// there), else looks for SchemaRel in the current folder and each of its parents.
func SchemaPath() (string, bool) {
	if p := os.Getenv(SchemaEnv); p != "" {
		_, err := os.Stat(p)
		return p, err == nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, SchemaRel)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// schemaMissing says why validation cannot run. On CI (CI=true) and when
// $STREAMBED_DASH_SCHEMA names a file that is not there the test fails: CI always has
// the schema, and a test that validates nothing must not pass there. Elsewhere (a
// clone without ../shared) it skips; `make test` prints the skip in its output.
func schemaMissing(t testing.TB, path string) {
	t.Helper()
	if path != "" {
		t.Fatalf("DASH schema %s (from $%s) not found: MPD schema validation cannot run", path, SchemaEnv)
	}
	msg := fmt.Sprintf("DASH schema %s not found in any parent folder of the package (CI has it at ../shared next to the repo; or set $%s): MPD schema validation", SchemaRel, SchemaEnv)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " cannot run, and CI=true requires it")
	}
	t.Skip(msg + " SKIPPED")
}

// ValidateMPD checks mpd against the MPEG DASH schema with xmllint. A missing xmllint
// fails the test; a missing schema fails it on CI and skips it elsewhere
// (schemaMissing).
func ValidateMPD(t testing.TB, name string, mpd []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint not found: install libxml2-utils (apt-get install libxml2-utils) to validate MPDs")
	}
	schema, ok := SchemaPath()
	if !ok {
		schemaMissing(t, schema)
	}
	f := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.WriteFile(f, mpd, 0o644); err != nil {
		t.Fatal(err)
	}
	ValidateMPDFile(t, xmllint, schema, f)
}

// ValidateMPDFile runs xmllint on a file already on disk.
func ValidateMPDFile(t testing.TB, xmllint, schema, file string) {
	t.Helper()
	out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", schema, file).CombinedOutput()
	if err != nil {
		t.Errorf("%s does not validate against %s: %v\n%s", filepath.Base(file), schema, err, out)
	}
}

// Stream is the synthetic ladder of the tests: two video rungs (90 kHz) and one AAC
// track at 48 kHz whose segments are cut on 1024-sample frames, so their durations
// differ from D and from each other (94, 94, 94, 93 frames for D = 2 s).
func Stream(name string, d time.Duration) *media.Stream {
	return &media.Stream{
		Name:            name,
		SegmentDuration: d,
		Tracks: []*media.Track{
			{ID: "v360", Kind: media.Video, Codec: "avc1.64001e", Bandwidth: 800_000, Width: 640, Height: 360, FrameRate: "25", Timescale: 90000},
			{ID: "v720", Kind: media.Video, Codec: "avc1.64001f", Bandwidth: 3_000_000, Width: 1280, Height: 720, FrameRate: "25", Timescale: 90000},
			{ID: "a128", Kind: media.Audio, Codec: "mp4a.40.2", Bandwidth: 128_000, SampleRate: 48000, Channels: 2, Language: "en", Timescale: 48000},
		},
	}
}

// boundary is the media time where segment index k starts: k·D for video, the next
// AAC frame boundary at or after it for audio.
func boundary(t *media.Track, d time.Duration, k uint64) uint64 {
	ticks := k * uint64(d) / uint64(time.Millisecond) * uint64(t.Timescale) / 1000
	if t.Kind == media.Audio {
		ticks = (ticks + 1023) / 1024 * 1024
	}
	return ticks
}

// Segments lists segment indexes [from, from+count) of t, numbered index+numberOffset,
// with the last one ending at total when total > 0. Sizes are 90% of the declared
// bandwidth, so AVERAGE-BANDWIDTH has something to show.
func Segments(t *media.Track, d time.Duration, from, count, numberOffset uint64, total time.Duration) []media.SegmentRef {
	var out []media.SegmentRef
	end := uint64(0)
	if total > 0 {
		end = boundary(t, total, 1)
	}
	for k := from; k < from+count; k++ {
		s, e := boundary(t, d, k), boundary(t, d, k+1)
		if end > 0 && e > end {
			e = end
		}
		dur := e - s
		out = append(out, media.SegmentRef{
			Number:   k + numberOffset,
			Start:    s,
			Duration: dur,
			Size:     int64(float64(t.Bandwidth) / 8 * 0.9 * t.Seconds(dur)),
		})
	}
	return out
}

// Asset is a packaged asset of the synthetic stream lasting total, in the layout of
// media.Asset (segments numbered from 1).
func Asset(name string, d, total time.Duration) *media.Asset {
	s := Stream(name, d)
	n := uint64((total + d - 1) / d)
	a := &media.Asset{
		Version:           media.AssetVersion,
		Name:              name,
		SegmentDurationMS: d.Milliseconds(),
		DurationMS:        total.Milliseconds(),
		Source:            "synthetic",
		Fingerprint:       "test",
		Tracks:            s.Tracks,
	}
	for _, t := range a.Tracks {
		t.InitPath = t.ID + "/init.mp4"
		t.Segments = Segments(t, d, 0, n, 1, total)
		for i := range t.Segments {
			t.Segments[i].Path = fmt.Sprintf("%s/%d.m4s", t.ID, t.Segments[i].Number)
		}
	}
	return a
}

// Live is a live presentation of the synthetic stream at now: segments of exactly
// tl.SegmentDuration numbered from 0 at AvailabilityStart, each available once it
// ends, the window keeping TimeShiftBufferDepth of them (at least one), as a looped
// channel's schedule does.
func Live(tl media.Timeline, now time.Time, addr manifest.Addressing) *manifest.Presentation {
	s := Stream("live", tl.SegmentDuration)
	s.Live = true
	p := &manifest.Presentation{
		Stream:         s,
		Addressing:     addr,
		Segments:       map[string][]media.SegmentRef{},
		InitTemplate:   manifest.AssetInitTemplate,
		MediaTemplate:  manifest.AssetNumberTemplate,
		PlaylistFormat: manifest.AssetPlaylistFormat,
		Live:           true,
		Timeline:       tl,
		PublishTime:    now,
		UTCTimingURL:   "/time",
	}
	if addr == manifest.Timeline {
		p.MediaTemplate = manifest.AssetTimeTemplate
	}
	if first, last, ok := window(tl, now); ok {
		for _, t := range s.Tracks {
			p.Segments[t.ID] = Segments(t, tl.SegmentDuration, first, last-first+1, 0, 0)
		}
	}
	return p
}

// window is the first and last complete segment within the DVR window at now.
func window(tl media.Timeline, now time.Time) (first, last uint64, ok bool) {
	el := now.Sub(tl.AvailabilityStart)
	if el < tl.SegmentDuration {
		return 0, 0, false
	}
	last = uint64(el/tl.SegmentDuration) - 1
	keep := max(uint64(tl.TimeShiftBufferDepth/tl.SegmentDuration), 1)
	if last+1 > keep {
		first = last + 1 - keep
	}
	return first, last, true
}
