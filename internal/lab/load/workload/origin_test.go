package workload

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
)

// segment is the test channel's segment duration: short, so a session of a few
// seconds covers several segments.
const segment = 640 * time.Millisecond

// originLog is the origin's own record of the requests it received, by kind: the
// reference the generator's counts are compared with.
type originLog struct {
	mu     sync.Mutex
	counts map[Kind]uint64
	other  []string
	audio  map[string]bool // audio track IDs
	protos map[int]int     // requests by HTTP major version
	video  []videoRequest  // every video segment request, in arrival order
}

// videoRequest is a video segment request as the origin saw it arrive.
type videoRequest struct {
	number uint64
	at     time.Time
}

func (l *originLog) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Logged on arrival: a request the generator counted has arrived by the time
		// the generator returns.
		res := layout.Parse(r.URL.Path)
		l.mu.Lock()
		l.protos[r.ProtoMajor]++
		switch res.Kind {
		case layout.KindManifest, layout.KindPlaylist:
			l.counts[KindManifest]++
		case layout.KindInit:
			l.counts[KindInit]++
		case layout.KindSegment:
			if l.audio[res.Track] {
				l.counts[KindAudio]++
			} else {
				l.counts[KindVideo]++
				l.video = append(l.video, videoRequest{res.Number, time.Now()})
			}
		default:
			l.other = append(l.other, r.URL.Path)
		}
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *originLog) snapshot() (map[Kind]uint64, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := map[Kind]uint64{}
	for k, v := range l.counts {
		c[k] = v
	}
	return c, append([]string(nil), l.other...)
}

// origin serves the short-segment test asset looped live as channel "live" through
// the real origin, logging every request; it returns http://HOST and the log.
func origin(t *testing.T) (string, *originLog) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test")
	if err := os.Symlink(testmedia.AssetWith(t, testmedia.Options{SegmentDuration: segment}), dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := &originLog{counts: map[Kind]uint64{}, audio: map[string]bool{}, protos: map[int]int{}}
	for _, tr := range a.Info().TracksOf(media.Audio) {
		log.audio[tr.ID] = true
	}
	h := hub.New()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", DVRWindow: 20 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart}); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS = "127.0.0.1:0", ""
	srv := server.New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	srv.Use(log.middleware)
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(done) }()
	t.Cleanup(func() { cancel(); <-done; h.Close() })
	return "http://" + ls.HTTP.Addr().(*net.TCPAddr).String(), log
}
