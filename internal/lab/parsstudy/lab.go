package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/pkg"
	"github.com/streambed/streambed/internal/transport/pars"
)

const port = 8080

// lab is the emulated network with the real origin in its server host.
type lab struct {
	nw     *netem.Network
	origin *http.Server
	base   string // http://server:8080
	assets map[time.Duration]*hub.Asset
	named  map[string]*hub.Asset // other content, by name (smallContent)
}

// smallContent is the start-up part's asset with a small first segment.
const smallContent = "360p-1s"

// condition is one network setting of the study.
type condition struct {
	Name      string // as it appears in the results: "loss=1%", "rtt=150ms", …
	Rate      netem.Rate
	RTT       time.Duration
	Loss      float64 // percent
	Competing int     // background TCP flows, server → client
}

func (c condition) profile(queue netem.Queue) netem.Profile {
	return netem.Symmetric(netem.Impairment{
		Rate: netem.ConstantRate(c.Rate), Delay: netem.Duration(c.RTT / 2),
		Loss: netem.Bernoulli(netem.Percent(c.Loss)), Queue: queue,
	})
}

func (c condition) String() string {
	return fmt.Sprintf("%s (%s, RTT %s, loss %g%%, %d competing)", c.Name, c.Rate, c.RTT, c.Loss, c.Competing)
}

// packageContent packages one synthetic asset per segment duration, cached under dir
// and named prefix + "seg-" + duration.
func packageContent(ctx context.Context, dir, prefix string, durs []time.Duration, length time.Duration, ladder string, log io.Writer) (map[time.Duration]string, error) {
	rungs, err := pkg.ParseLadder(ladder)
	if err != nil {
		return nil, err
	}
	out := map[time.Duration]string{}
	for _, d := range durs {
		name := prefix + "seg-" + d.String()
		o := filepath.Join(dir, name)
		fmt.Fprintf(log, "content: %s (%s of %s, cached in %s)\n", name, length, ladder, o)
		if _, err := pkg.Package(ctx, pkg.Options{
			Synthetic: length, OutDir: o, Name: name, SegmentDuration: d,
			Ladder: rungs, AudioBitrate: 128000, Preset: "veryfast",
		}); err != nil {
			return nil, fmt.Errorf("packaging %s: %w", name, err)
		}
		out[d] = o
	}
	return out, nil
}

// upLab builds the network and starts the origin in the server host, sending with
// congestion control cc.
func upLab(ctx context.Context, dirs map[time.Duration]string, named map[string]string, first condition, queue netem.Queue, cc string, seed uint64) (*lab, error) {
	h := hub.New()
	l := &lab{assets: map[time.Duration]*hub.Asset{}, named: map[string]*hub.Asset{}}
	for name, dir := range named {
		a, err := hub.OpenAsset(dir)
		if err != nil {
			return nil, err
		}
		h.AddAsset(a)
		l.named[name] = a
	}
	for d, dir := range dirs {
		a, err := hub.OpenAsset(dir)
		if err != nil {
			return nil, err
		}
		h.AddAsset(a)
		l.assets[d] = a
	}
	nw, err := netem.Up(ctx, netem.TwoHosts(first.profile(queue)), netem.Options{Name: "pars-study", Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	l.nw = nw
	cfg := server.DefaultConfig()
	srv := server.New(cfg, h, slog.New(slog.DiscardHandler), nil)
	srv.Handle(pars.IndexPattern, pars.IndexHandler(h))
	srv.Handle("GET /bulk", http.HandlerFunc(bulk))
	var ln net.Listener
	if err := nw.Do("server", func() (err error) {
		ln, err = pars.ListenCC(ctx, fmt.Sprintf("0.0.0.0:%d", port), cc)
		return err
	}); err != nil {
		nw.Close()
		return nil, err
	}
	l.origin = &http.Server{Handler: srv.Handler(), Protocols: new(http.Protocols)}
	l.origin.Protocols.SetHTTP1(true)
	l.origin.Protocols.SetUnencryptedHTTP2(true) // ParS with -streams 2 speaks h2c on each connection
	go l.origin.Serve(ln)
	l.base = fmt.Sprintf("http://%s:%d", nw.Server(), port)
	return l, nil
}

// setSlowStartAfterIdle sets net.ipv4.tcp_slow_start_after_idle in the origin's
// namespace (the sender's setting: 1, the default, collapses the window of a
// connection idle for longer than its retransmission timeout) and reads it back.
func (l *lab) setSlowStartAfterIdle(v int) error {
	const knob = "/proc/sys/net/ipv4/tcp_slow_start_after_idle"
	return l.nw.Do("server", func() error {
		if err := os.WriteFile(knob, []byte(strconv.Itoa(v)), 0o644); err != nil {
			return fmt.Errorf("tcp_slow_start_after_idle: %w", err)
		}
		b, err := os.ReadFile(knob)
		if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(v) {
			return fmt.Errorf("tcp_slow_start_after_idle reads %q after writing %d (%v)", b, v, err)
		}
		return nil
	})
}

func (l *lab) close() {
	if l.origin != nil {
		l.origin.Close()
	}
	if l.nw != nil {
		l.nw.Close()
	}
}

// dial opens TCP connections from the client host.
func (l *lab) dial(ctx context.Context, network, addr string) (c net.Conn, err error) {
	err = l.nw.Do("client", func() error {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// segmentURLs lists the video segment URLs of the asset with segment duration d,
// their sizes and numbers.
func (l *lab) segmentURLs(d time.Duration) ([]string, []int64, []uint64, error) {
	a := l.assets[d]
	if a == nil {
		return nil, nil, nil, fmt.Errorf("no asset with %s segments", d)
	}
	desc := a.Descriptor()
	t := desc.Tracks[0] // the video rung
	var urls []string
	var sizes []int64
	var nums []uint64
	for _, s := range t.Segments {
		urls = append(urls, fmt.Sprintf("%s/vod/%s/%s/%d.m4s", l.base, a.Info().Name, t.ID, s.Number))
		fi, err := os.Stat(filepath.Join(a.Dir(), s.Path))
		if err != nil {
			return nil, nil, nil, err
		}
		sizes = append(sizes, fi.Size())
		nums = append(nums, s.Number)
	}
	return urls, sizes, nums, nil
}

// bulk streams zeros until the client goes away: a competing flow.
func bulk(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	buf := make([]byte, 64<<10)
	for {
		if _, err := w.Write(buf); err != nil {
			return
		}
		if r.Context().Err() != nil {
			return
		}
	}
}

// competitors are m long-lived TCP downloads from the origin to the client host.
type competitors struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bytes  atomic.Int64
	start  time.Time
}

func (l *lab) startCompetitors(ctx context.Context, m int) *competitors {
	ctx, cancel := context.WithCancel(ctx)
	c := &competitors{cancel: cancel, start: time.Now()}
	tr := &http.Transport{DialContext: l.dial, DisableCompression: true}
	for i := 0; i < m; i++ {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for ctx.Err() == nil { // reconnect if a flow breaks
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.base+"/bulk", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
					continue
				}
				buf := make([]byte, 64<<10)
				for {
					n, err := resp.Body.Read(buf)
					c.bytes.Add(int64(n))
					if err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		}()
	}
	return c
}

// stop ends the flows and returns their mean total rate in bit/s.
func (c *competitors) stop() float64 {
	if c == nil {
		return 0
	}
	c.cancel()
	c.wg.Wait()
	return float64(c.bytes.Load()) * 8 / time.Since(c.start).Seconds()
}

// sleepCtx sleeps d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

var errNoAria = errors.New("aria2c not found (Debian package aria2)")

func hasAria() bool {
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if fi, err := os.Stat(filepath.Join(dir, "aria2c")); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}
