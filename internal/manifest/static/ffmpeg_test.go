package static

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// TestFFmpegReadsAssetFiles packages a 6 s clip with FFmpeg into the asset layout,
// writes our manifests for it and lets ffprobe's DASH and HLS demuxers read every
// packet through them: an outside reader's check that the manifests resolve to real
// segments in the right order.
func TestFFmpegReadsAssetFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the FFmpeg round trip")
	}
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install ffmpeg): FFmpeg round trip skipped", tool)
		}
	}
	dir := t.TempDir()
	if k := os.Getenv("KEEP_FFMPEG_DIR"); k != "" {
		dir = k
	}
	for _, r := range []string{"r0", "r1", "r2"} {
		if err := os.Mkdir(filepath.Join(dir, r), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-nostdin",
		"-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=6",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=6",
		"-map", "0:v", "-map", "0:v", "-map", "1:a",
		"-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
		"-b:v:0", "200k", "-s:v:0", "160x90", "-b:v:1", "400k", "-c:a", "aac", "-b:a", "64k",
		"-f", "dash", "-seg_duration", "2", "-use_template", "1", "-use_timeline", "1",
		"-init_seg_name", "r$RepresentationID$/init.mp4", "-media_seg_name", "r$RepresentationID$/$Number$.m4s",
		"-adaptation_sets", "id=0,streams=v id=1,streams=a", filepath.Join(dir, "ffmpeg.mpd"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	a := assetFromFFmpegMPD(t, dir, 2*time.Second, 6*time.Second)
	if err := WriteAssetFiles(dir, a); err != nil {
		t.Fatal(err)
	}

	// The truth: every packet of each track, read from its init and segments joined.
	truth := map[string]int{}
	for _, tr := range a.Tracks {
		joined := filepath.Join(t.TempDir(), tr.ID+".mp4")
		var all []byte
		for _, p := range append([]string{tr.InitPath}, segmentPaths(tr)...) {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		if err := os.WriteFile(joined, all, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, s := range probe(t, joined) {
			truth[tr.ID] = s.packets
		}
	}
	t.Logf("packets in the segment files: %v", truth)
	byWidth := map[int]string{160: "r0", 320: "r1", 0: "r2"}

	// HLS: ffprobe reads every packet of every track through master.m3u8.
	hlsStreams := probe(t, filepath.Join(dir, MultivariantFile))
	seen := map[string]bool{}
	for _, s := range hlsStreams {
		id := byWidth[s.width]
		seen[id] = true
		if s.packets != truth[id] {
			t.Errorf("HLS %s: read %d packets, the segments hold %d", id, s.packets, truth[id])
		}
	}
	t.Logf("HLS reads %v", hlsStreams)
	if len(seen) != 3 {
		t.Errorf("HLS: ffprobe saw tracks %v", seen)
	}

	// DASH: ffprobe reads through our manifest.mpd exactly what it reads through
	// FFmpeg's own MPD of the same files. (FFmpeg's DASH demuxer drops the AAC priming
	// packet and looks for one segment too many with either MPD.)
	ours, theirs := probe(t, filepath.Join(dir, ManifestFile)), probe(t, filepath.Join(dir, "ffmpeg.mpd"))
	if fmt.Sprint(ours) != fmt.Sprint(theirs) || len(ours) != 3 {
		t.Errorf("DASH: ffprobe reads %v through manifest.mpd, %v through FFmpeg's MPD", ours, theirs)
	}
	for _, s := range ours {
		if id := byWidth[s.width]; s.kind == "video" && s.packets != truth[id] {
			t.Errorf("DASH %s: read %d packets, the segments hold %d", id, s.packets, truth[id])
		}
	}
}

type probed struct {
	kind           string
	width, packets int
}

// probe lists the streams ffprobe finds in name with their packet counts, sorted.
func probe(t *testing.T, name string) []probed {
	t.Helper()
	cmd := exec.Command("ffprobe", "-v", "error", "-count_packets",
		"-show_entries", "stream=codec_type,width,nb_read_packets", "-of", "csv=p=0", filepath.Base(name))
	cmd.Dir = filepath.Dir(name)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", name, err)
	}
	var ps []probed
	seen := map[probed]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, ",")
		if len(f) < 2 {
			continue
		}
		p := probed{kind: f[0]}
		p.packets, _ = strconv.Atoi(f[len(f)-1])
		if len(f) == 3 {
			p.width, _ = strconv.Atoi(f[1])
		}
		if !seen[p] { // HLS programs repeat the streams they share
			seen[p] = true
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return fmt.Sprint(ps[i]) < fmt.Sprint(ps[j]) })
	return ps
}

func segmentPaths(tr *media.Track) []string {
	var out []string
	for _, s := range tr.Segments {
		out = append(out, s.Path)
	}
	return out
}

// assetFromFFmpegMPD describes FFmpeg's output as a media.Asset, taking each track's
// segment times from FFmpeg's own SegmentTimeline.
func assetFromFFmpegMPD(t *testing.T, dir string, d, total time.Duration) *media.Asset {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ffmpeg.mpd"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sets []struct {
			ContentType string `xml:"contentType,attr"`
			FrameRate   string `xml:"frameRate,attr"`
			Reps        []struct {
				ID         string `xml:"id,attr"`
				Codecs     string `xml:"codecs,attr"`
				Bandwidth  int    `xml:"bandwidth,attr"`
				Width      int    `xml:"width,attr"`
				Height     int    `xml:"height,attr"`
				SampleRate int    `xml:"audioSamplingRate,attr"`
				Template   struct {
					Timescale   uint32 `xml:"timescale,attr"`
					StartNumber uint64 `xml:"startNumber,attr"`
					S           []struct {
						T *uint64 `xml:"t,attr"`
						D uint64  `xml:"d,attr"`
						R int     `xml:"r,attr"`
					} `xml:"SegmentTimeline>S"`
				} `xml:"SegmentTemplate"`
			} `xml:"Representation"`
		} `xml:"Period>AdaptationSet"`
	}
	if err := xml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	a := &media.Asset{Version: media.AssetVersion, Name: "ffmpeg", SegmentDurationMS: d.Milliseconds(), DurationMS: total.Milliseconds(), Fingerprint: "test"}
	for _, as := range m.Sets {
		for _, r := range as.Reps {
			tr := &media.Track{ID: "r" + r.ID, Kind: media.Kind(as.ContentType), Codec: r.Codecs, Bandwidth: r.Bandwidth,
				Width: r.Width, Height: r.Height, SampleRate: r.SampleRate, Timescale: r.Template.Timescale,
				InitPath: "r" + r.ID + "/init.mp4"}
			if tr.Kind == media.Video {
				tr.FrameRate = strings.TrimSuffix(as.FrameRate, "/1")
			} else {
				tr.Channels = 1
			}
			n, tm := r.Template.StartNumber, uint64(0)
			for _, s := range r.Template.S {
				if s.T != nil {
					tm = *s.T
				}
				for i := 0; i <= s.R; i++ {
					tr.Segments = append(tr.Segments, media.SegmentRef{Number: n, Start: tm, Duration: s.D, Path: fmt.Sprintf("%s/%d.m4s", tr.ID, n)})
					n, tm = n+1, tm+s.D
				}
			}
			a.Tracks = append(a.Tracks, tr)
		}
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	return a
}
