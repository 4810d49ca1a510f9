package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/server"
)

// ffmpegIngestArgs is the FFmpeg command line of docs/protocols/ingest.md: a live
// test source encoded in real time (-re) to CMAF, one HTTP POST per track.
func ffmpegIngestArgs(base, channel, token string, seconds int) []string {
	auth := "Authorization: Bearer " + token + "\r\n"
	cmaf := []string{"-f", "mp4", "-movflags", "cmaf+frag_keyframe+empty_moov+default_base_moof", "-write_prft", "wallclock",
		"-method", "POST", "-headers", auth}
	args := []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=320x180:rate=25:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=48000:duration=%d", seconds),
		"-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
		"-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-b:v", "300k"}
	args = append(args, cmaf...)
	args = append(args, base+Path(channel, "video", "cmfv"),
		"-map", "1:a", "-c:a", "aac", "-b:a", "64k", "-frag_duration", "200000")
	args = append(args, cmaf...)
	return append(args, base+Path(channel, "audio", "cmfa"))
}

// warnings records the origin's warnings and errors.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	w.mu.Lock()
	w.msgs = append(w.msgs, b.String())
	w.mu.Unlock()
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// ffmpegOrigin serves an origin with the ingest channel "live" on a loopback port
// for FFmpeg to feed; it records the origin's warnings.
func ffmpegOrigin(t *testing.T) (string, *hub.Channel, *Ingest, *warnings) {
	t.Helper()
	warn := &warnings{}
	h := hub.New()
	in := New(Config{}, slog.New(warn))
	ctx, cancel := context.WithCancel(context.Background())
	c, err := in.AddChannel(ctx, h, ChannelOptions{Name: "live", Token: testToken, SegmentDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS = "127.0.0.1:0", ""
	srv := server.New(cfg, h, slog.New(warn), nil)
	for _, p := range Patterns {
		srv.Handle(p, in)
	}
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(served) }()
	t.Cleanup(func() { cancel(); <-served; h.Close() })
	return "http://" + ls.HTTP.Addr().String(), c, in, warn

}

// TestFFmpegIngest has FFmpeg encode a live test source and POST it to the origin,
// one request per track, as a user's encoder would. While it runs, the channel's
// MPDs validate, ffprobe opens the MPD and the HLS playlist over HTTP, and every
// listed segment parses and follows the one before; when FFmpeg ends, both tracks
// ended cleanly with nothing dropped and no warning.
func TestFFmpegIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the live FFmpeg encode (about 14 s)")
	}
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install FFmpeg (Debian: apt-get install ffmpeg) — `make test` does this", tool)
		}
	}
	base, c, in, warn := ffmpegOrigin(t)

	const seconds = 14
	enc := exec.Command("ffmpeg", ffmpegIngestArgs(base, "live", testToken, seconds)...)
	var encOut bytes.Buffer
	enc.Stdout, enc.Stderr = &encOut, &encOut
	t.Logf("ffmpeg %s", strings.Join(enc.Args[1:], " "))
	if err := enc.Start(); err != nil {
		t.Fatal(err)
	}
	encoded := make(chan error, 1)
	go func() { encoded <- enc.Wait() }()

	// While the encoder runs: wait for three complete segments in both tracks.
	deadline := time.Now().Add(3 * seconds * time.Second)
	for {
		if n, ok := c.Latest(time.Now()); ok && n >= 2 {
			break
		}
		select {
		case err := <-encoded:
			t.Fatalf("ffmpeg ended before three segments were complete: %v\n%s\nwarnings: %v", err, encOut.String(), warn.msgs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no three complete segments after %v; ffmpeg says: %s", 3*seconds*time.Second, encOut.String())
		}
	}
	tracks := []string{"video", "audio"}
	if resp, err := http.Get(base + "/live/live/manifest-timeline.mpd"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("while live, at %s:\n%s", time.Now().UTC().Format(time.RFC3339Nano), b)
	}
	checkManifests(t, base, "live", tracks)
	for _, m := range []string{"manifest.mpd", "manifest-timeline.mpd", "master.m3u8"} {
		probeStreams(t, base+"/live/live/"+m)
	}
	checkSegments(t, base, c, tracks)

	select {
	case err := <-encoded:
		if err != nil || encOut.Len() > 0 {
			t.Errorf("ffmpeg: %v\n%s", err, encOut.String())
		}
	case <-time.After(3 * seconds * time.Second):
		_ = enc.Process.Kill()
		t.Fatal("ffmpeg did not finish")
	}
	st, err := in.Status("live")
	if err != nil || len(st) != 2 {
		t.Fatalf("status %+v %v", st, err)
	}
	t.Logf("after FFmpeg: %+v", st)
	for _, s := range st {
		if s.Connected || s.Dropped != 0 || s.Chunks == 0 || s.Latency <= 0 || s.Latency > 10*time.Second {
			t.Errorf("track %s after FFmpeg ended: %+v", s.ID, s)
		}
	}
	if w, _ := c.Window(time.Now()); len(w["video"]) != seconds/2 || len(w["audio"]) != seconds/2 {
		t.Errorf("after FFmpeg ended: %d video and %d audio segments, want %d", len(w["video"]), len(w["audio"]), seconds/2)
	}
	for _, tr := range c.Info().Tracks {
		if tr.Bandwidth == 0 || tr.Codec == "" {
			t.Errorf("track %+v", tr)
		}
	}
	warn.mu.Lock()
	defer warn.mu.Unlock()
	if len(warn.msgs) > 0 {
		t.Errorf("the origin warned: %s", strings.Join(warn.msgs, "\n"))
	}
}

// probeStreams has ffprobe open a live manifest over HTTP and checks it finds H.264
// video and AAC audio.
func probeStreams(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-print_format", "json", "-show_streams", url).Output()
	if err != nil {
		t.Errorf("ffprobe %s: %v %s", url, err, out)
		return
	}
	var p struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
			Height    int    `json:"height"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe output: %v\n%s", err, out)
	}
	var got []string
	for _, s := range p.Streams {
		got = append(got, s.CodecType+":"+s.CodecName)
	}
	if g := strings.Join(got, ","); !strings.Contains(g, "video:h264") || !strings.Contains(g, "audio:aac") {
		t.Errorf("ffprobe %s sees %s, want H.264 video and AAC audio", url, g)
	}
}

// checkSegments fetches every segment in the channel's window over /live and checks
// it parses as CMAF, video starts with a keyframe, and each one starts where the one
// before ended.
func checkSegments(t *testing.T, base string, c *hub.Channel, tracks []string) {
	t.Helper()
	w, err := c.Window(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tracks {
		tr, _ := c.Info().Track(id)
		var end uint64
		for i, ref := range w[id] {
			resp, err := http.Get(fmt.Sprintf("%s/live/live/%s/%d.m4s", base, id, ref.Number))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s segment %d: %d", id, ref.Number, resp.StatusCode)
				continue
			}
			seg, err := cmaf.ParseSegment(b, cmaf.TrackDefaults{})
			if err != nil {
				t.Errorf("%s segment %d: %v", id, ref.Number, err)
				continue
			}
			start := seg.Fragments[0].BaseMediaDecodeTime
			if i > 0 && start != end || tr.Kind == "video" && !seg.Fragments[0].Keyframe() {
				t.Errorf("%s segment %d starts at %d (previous ended at %d), keyframe %v", id, ref.Number, start, end, seg.Fragments[0].Keyframe())
			}
			if want := c.Timeline().SegmentDuration; tr.Kind == "video" && (ref.Number*uint64(want.Seconds())*uint64(tr.Timescale) != start) {
				t.Errorf("video segment %d starts at %d, not at n·D", ref.Number, start)
			}
			end = start + seg.Duration()
		}
	}
}

// TestFFmpegDASHMuxerIngest: the one-request-per-segment form. FFmpeg's dash muxer
// PUTs each init and segment as a file (init-stream0.m4s, chunk-stream0-00001.m4s)
// and its MPD, with the token as the Basic password in the URL (it cannot send other
// headers to its segment requests). The channel gets both tracks, numbered alike,
// and serves manifests that players open.
func TestFFmpegDASHMuxerIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the live FFmpeg encode (about 10 s)")
	}
	base, c, _, warn := ffmpegOrigin(t)
	const seconds = 10
	runDASHMuxer(t, base, seconds)
	n, ok := c.Latest(time.Now())
	if !ok || n < 2 {
		t.Fatalf("after %d s of segments: latest complete %d, %v; warnings %v", seconds, n, ok, warn.msgs)
	}
	tracks := []string{"stream0", "stream1"}
	if got := c.Info().Tracks; len(got) != 2 || got[0].ID != "stream0" || got[0].Kind != "video" || got[1].Kind != "audio" {
		t.Fatalf("tracks %+v", got)
	}
	checkManifests(t, base, "live", tracks)
	probeStreams(t, base+"/live/live/manifest-timeline.mpd")
	checkSegments(t, base, c, tracks)
}

// TestFFmpegDASHMuxerTemplateIngest: the one-request-per-segment form with the
// encoder's own SegmentTemplate names. FFmpeg's dash muxer PUTs
// {RepresentationID}/init.m4s and {RepresentationID}/seg-{Number%05d}.m4s (the init
// segments and the first audio segment before its first MPD) and its MPD, whose
// templates the channel reads: the tracks are the Representation ids "0" and "1",
// and their segments are served, each following the one before.
func TestFFmpegDASHMuxerTemplateIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the live FFmpeg encode (about 8 s)")
	}
	base, c, in, warn := ffmpegOrigin(t)
	const seconds = 8
	runDASHMuxer(t, base, seconds, "-init_seg_name", "$RepresentationID$/init.m4s", "-media_seg_name", "$RepresentationID$/seg-$Number%05d$.m4s")
	n, ok := c.Latest(time.Now())
	if !ok || n < 2 {
		t.Fatalf("after %d s of segments: latest complete %d, %v; warnings %v", seconds, n, ok, warn.msgs)
	}
	tracks := []string{"0", "1"}
	if got := c.Info().Tracks; len(got) != 2 || got[0].ID != "0" || got[0].Kind != "video" || got[1].ID != "1" || got[1].Kind != "audio" {
		t.Fatalf("tracks %+v, want video 0 and audio 1, the MPD's Representation ids", got)
	}
	ch, err := in.channel("live")
	if err != nil {
		t.Fatal(err)
	}
	tm := ch.templates.Load()
	if tm == nil {
		t.Fatal("the channel has no templates from FFmpeg's MPD")
	}
	for path, want := range map[string]string{"0/init.m4s": "0", "1/seg-00042.m4s": "1"} {
		if rep, ok, err := tm.match(path); !ok || err != nil || rep != want {
			t.Errorf("FFmpeg's MPD maps %s to %q %v %v, want %q", path, rep, ok, err, want)
		}
	}
	checkManifests(t, base, "live", tracks)
	probeStreams(t, base+"/live/live/manifest-timeline.mpd")
	checkSegments(t, base, c, tracks)
	warn.mu.Lock()
	defer warn.mu.Unlock()
	if len(warn.msgs) > 0 {
		t.Errorf("the origin warned: %s", strings.Join(warn.msgs, "\n"))
	}
}

// runDASHMuxer runs FFmpeg's dash muxer in real time for seconds of testsrc2 and a
// tone, PUTting every file to the origin's channel "live" with the token as the Basic
// password; names are the muxer's own options (-init_seg_name, -media_seg_name).
func runDASHMuxer(t *testing.T, base string, seconds int, names ...string) {
	t.Helper()
	u := strings.Replace(base, "http://", "http://ingest:"+testToken+"@", 1) + "/ingest/live/manifest.mpd"
	args := []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=320x180:rate=25:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=48000:duration=%d", seconds),
		"-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-keyint_min", "50",
		"-sc_threshold", "0", "-bf", "0", "-b:v", "300k", "-c:a", "aac", "-b:a", "64k",
		"-f", "dash", "-seg_duration", "2", "-use_timeline", "1"}
	args = append(append(args, names...), "-method", "PUT", u)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
}
