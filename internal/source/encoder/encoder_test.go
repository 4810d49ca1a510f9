package encoder

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/testmedia"
)

// receiver records every POSTed body by path, as an ingest endpoint would see it.
type receiver struct {
	mu     sync.Mutex
	bodies map[string]*bytes.Buffer
	auth   map[string]string
	types  map[string]string
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	r := &receiver{bodies: map[string]*bytes.Buffer{}, auth: map[string]string{}, types: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		r.mu.Lock()
		buf := &bytes.Buffer{}
		r.bodies[req.URL.Path] = buf
		r.auth[req.URL.Path] = req.Header.Get("Authorization")
		r.types[req.URL.Path] = req.Header.Get("Content-Type")
		r.mu.Unlock()
		b := make([]byte, 32<<10)
		for {
			n, err := req.Body.Read(b)
			r.mu.Lock()
			buf.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				break
			}
		}
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) body(path string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.bodies[path]; ok {
		return append([]byte(nil), b.Bytes()...)
	}
	return nil
}

// split cuts a posted body into its init (ftyp+moov) and the rest (fragments).
func split(t *testing.T, b []byte) (init, media []byte) {
	t.Helper()
	off := 0
	for off+8 <= len(b) {
		size := int(binary.BigEndian.Uint32(b[off:]))
		typ := string(b[off+4 : off+8])
		if size < 8 || off+size > len(b) {
			t.Fatalf("box %q at %d: size %d overruns %d bytes", typ, off, size, len(b))
		}
		off += size
		if typ == "moov" {
			return b[:off], b[off:]
		}
	}
	t.Fatalf("no moov in %d bytes", len(b))
	return nil, nil
}

// complete keeps the whole moof+mdat pairs of b (a live body may end mid-fragment).
func complete(b []byte) []byte {
	off, end := 0, 0
	for off+8 <= len(b) {
		size := int(binary.BigEndian.Uint32(b[off:]))
		if size < 8 || off+size > len(b) {
			break
		}
		off += size
		if string(b[off-size+4:off-size+8]) == "mdat" {
			end = off
		}
	}
	return b[:end]
}

func TestReplayPostsEveryTrackLive(t *testing.T) {
	if testing.Short() {
		t.Skip("posts in real time for 5 s")
	}
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	rec, srv := newReceiver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var segs int
	err = Replay(ctx, a, ReplayOptions{Base: srv.URL + "/ingest/ch", Token: "secret", ChunkDuration: 200 * time.Millisecond,
		Progress: func(p ReplayProgress) { segs = p.Segments }})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if segs < 1 {
		t.Errorf("no complete segment posted in 5 s of 2 s segments")
	}
	start := time.Now().Add(-10 * time.Second)
	for _, tr := range a.Info().Tracks {
		ext := ".cmfv"
		if tr.Kind == "audio" {
			ext = ".cmfa"
		}
		path := "/ingest/ch/Streams(" + tr.ID + ext + ")"
		body := rec.body(path)
		if body == nil {
			t.Fatalf("nothing posted to %s", path)
		}
		if rec.auth[path] != "Bearer secret" || rec.types[path] != tr.MimeType() {
			t.Errorf("%s: Authorization %q, Content-Type %q", path, rec.auth[path], rec.types[path])
		}
		init, rest := split(t, body)
		in, err := cmaf.ParseInit(init)
		if err != nil {
			t.Fatalf("%s: init: %v", path, err)
		}
		frags, err := cmaf.ParseSegment(complete(rest), in.Defaults)
		if err != nil || len(frags.Fragments) < 2 {
			t.Fatalf("%s: %d fragments, %v", path, len(frags.Fragments), err)
		}
		// Media time is time since the Unix epoch, and fragments follow each other.
		first := frags.Fragments[0]
		at := time.Unix(0, 0).Add(tr.Duration(first.BaseMediaDecodeTime))
		if at.Before(start) || at.After(time.Now()) {
			t.Errorf("%s: first tfdt is %v, not the last seconds since the epoch", path, at)
		}
		for i := 1; i < len(frags.Fragments); i++ {
			prev := frags.Fragments[i-1]
			if got := frags.Fragments[i].BaseMediaDecodeTime; got != prev.BaseMediaDecodeTime+prev.Duration() {
				t.Errorf("%s: fragment %d at %d, the previous ended at %d", path, i, got, prev.BaseMediaDecodeTime+prev.Duration())
			}
		}
	}
}

func TestReplayStopsWhenIngestRefuses(t *testing.T) {
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 100))
		http.Error(w, `{"error":"wrong token"}`, http.StatusForbidden)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = Replay(ctx, a, ReplayOptions{Base: srv.URL + "/ingest/ch", Token: "bad"})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("Replay against a refusing origin: %v", err)
	}
	if ctx.Err() != nil {
		t.Errorf("Replay went on until its deadline instead of stopping at the refusal")
	}
}

func TestFFmpegArgs(t *testing.T) {
	l, err := LadderNamed("published")
	if err != nil {
		t.Fatal(err)
	}
	if l.Bitrate() != 10_192_000 || len(l.Tracks()) != 10 || l.SegmentDuration() != 1920*time.Millisecond {
		t.Errorf("published ladder: %d bit/s, tracks %v, segments %v", l.Bitrate(), l.Tracks(), l.SegmentDuration())
	}
	now := time.Unix(1_700_000_001, 500e6)
	args := strings.Join(FFmpegArgs(FFmpegOptions{Base: "http://o/ingest/ch/", Token: "t", Ladder: l, Now: now}), " ")
	for _, want := range []string{
		"-f lavfi -i testsrc2=size=1920x1080:rate=25",
		"split=8[s0][s1][s2][s3][s4][s5][s6][s7]",
		"[s0]scale=-2:144[v0]",
		"-g 48 -keyint_min 48 -sc_threshold 0",
		"-movflags cmaf+frag_keyframe+empty_moov+default_base_moof+frag_discont",
		"-method POST",
		"-headers Authorization: Bearer t\r\n",
		"http://o/ingest/ch/Streams(v1080.cmfv)",
		"-b:a 128000",
		"http://o/ingest/ch/Streams(a128.cmfa)",
		"-output_ts_offset 1700000000.640", // the 1.92 s boundary at or before now
	} {
		if !strings.Contains(args, want) {
			t.Errorf("ffmpeg arguments lack %q:\n%s", want, args)
		}
	}
	if _, err := LadderNamed("huge"); err == nil {
		t.Error("an unknown ladder was accepted")
	}
}

// FFmpeg, the real encoder, posts CMAF an ingest endpoint can parse.
func TestFFmpegPostsCMAF(t *testing.T) {
	if testing.Short() {
		t.Skip("runs FFmpeg for 3 s")
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg not found: install it (Debian: apt-get install ffmpeg); `make test` does")
	}
	rec, srv := newReceiver(t)
	l := Ladder{Name: "tiny", Video: Ladders["small"].Video[:1], Audio: []int{64000}, FPS: 25, GOP: 25}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last Progress
	now := time.Now()
	err := RunFFmpeg(ctx, "", FFmpegArgs(FFmpegOptions{Base: srv.URL + "/ingest/ch", Ladder: l, Duration: 3 * time.Second, Preset: "ultrafast", Now: now}),
		func(p Progress) { last = p })
	if err != nil {
		t.Fatal(err)
	}
	if last.Frame < 50 {
		t.Errorf("progress reported %d frames for 3 s at 25 fps", last.Frame)
	}
	for _, path := range []string{"/ingest/ch/Streams(v180.cmfv)", "/ingest/ch/Streams(a64.cmfa)"} {
		body := rec.body(path)
		if body == nil {
			t.Fatalf("FFmpeg posted nothing to %s", path)
		}
		init, rest := split(t, body)
		in, err := cmaf.ParseInit(init)
		if err != nil {
			t.Fatalf("%s: init: %v", path, err)
		}
		frags, err := cmaf.ParseSegment(complete(rest), in.Defaults)
		if err != nil || len(frags.Fragments) == 0 {
			t.Fatalf("%s: fragments: %v", path, err)
		}
		first := frags.Fragments[0]
		at := time.Unix(0, 0).Add(time.Duration(float64(first.BaseMediaDecodeTime) / float64(in.Info.Timescale) * float64(time.Second)))
		if d := at.Sub(now.Truncate(l.SegmentDuration())); d < -time.Second || d > time.Second {
			t.Errorf("%s: first tfdt at %v, want about %v (epoch-based)", path, at, now.Truncate(l.SegmentDuration()))
		}
		if in.Info.Kind == "video" && !first.Keyframe() {
			t.Errorf("%s: the first fragment does not start with a keyframe", path)
		}
		for i := 1; i < len(frags.Fragments); i++ {
			prev := frags.Fragments[i-1]
			if got := frags.Fragments[i].BaseMediaDecodeTime; got != prev.BaseMediaDecodeTime+prev.Duration() {
				t.Errorf("%s: fragment %d at %d, the previous ended at %d", path, i, got, prev.BaseMediaDecodeTime+prev.Duration())
			}
		}
	}
}
