package server

import (
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
)

// viewerWindow is how recently a client must have asked for a stream to count as a viewer.
const viewerWindow = 30 * time.Second

// metrics is the origin's Prometheus registry (its own, not the global one).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	conns    prometheus.Gauge
	blocked  prometheus.Gauge // LL-HLS playlist reloads being held

	perKind map[string]*kindMetrics // read-only after newMetrics: label handles per kind

	mu      sync.RWMutex
	viewers map[string]map[string]time.Time // "live/demo" → client host → last request
}

// kindMetrics caches the label handles of one kind, so a request costs no label hashing.
type kindMetrics struct {
	bytes    prometheus.Counter
	byStatus sync.Map                           // int status → prometheus.Counter
	ok       atomic.Pointer[prometheus.Counter] // status 200's, without hashing an interface key
}

// counter is the request counter of status, made on first use (so /metrics lists
// only the statuses that were answered).
func (km *kindMetrics) counter(m *metrics, kind string, status int) prometheus.Counter {
	if status == http.StatusOK {
		if c := km.ok.Load(); c != nil {
			return *c
		}
	}
	c, ok := km.byStatus.Load(status)
	if !ok {
		c, _ = km.byStatus.LoadOrStore(status, m.requests.WithLabelValues(kind, strconv.Itoa(status)))
	}
	pc := c.(prometheus.Counter)
	if status == http.StatusOK {
		km.ok.Store(&pc)
	}
	return pc
}

// kinds are every value kindOf returns.
var kinds = []string{"manifest", "init", "segment", "part", "api", "time", "metrics", "page"}

func newMetrics(h *hub.Hub) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streambed_http_requests_total", Help: "HTTP requests by kind of resource and status code.",
		}, []string{"kind", "status"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streambed_http_response_bytes_total", Help: "Response body bytes sent, by kind of resource.",
		}, []string{"kind"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "streambed_http_open_connections", Help: "Client connections currently open.",
		}),
		blocked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "streambed_hls_blocked_reloads", Help: "LL-HLS blocking playlist reloads being held.",
		}),
		viewers: map[string]map[string]time.Time{},
		perKind: map[string]*kindMetrics{},
	}
	for _, k := range kinds {
		m.perKind[k] = &kindMetrics{bytes: m.bytesOut.WithLabelValues(k)}
	}
	m.reg.MustRegister(m.requests, m.bytesOut, m.conns, m.blocked, m, archiveCollector{h},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

var viewersDesc = prometheus.NewDesc("streambed_stream_viewers",
	"Clients that requested the stream in the last 30 s.", []string{"stream"}, nil)

// Describe and Collect make metrics a collector of per-stream viewers.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) { ch <- viewersDesc }

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for stream, clients := range m.viewers {
		for c, seen := range clients {
			if now.Sub(seen) > viewerWindow {
				delete(clients, c)
			}
		}
		if len(clients) == 0 {
			delete(m.viewers, stream)
			continue
		}
		ch <- prometheus.MustNewConstMetric(viewersDesc, prometheus.GaugeValue, float64(len(clients)), stream)
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) connState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		m.conns.Inc()
	case http.StateClosed, http.StateHijacked:
		m.conns.Dec()
	}
}

// kindOf classifies a request path, parsed into res, for the metrics' kind label.
func kindOf(res layout.Resource, path string) string {
	switch res.Kind {
	case layout.KindManifest, layout.KindPlaylist:
		return "manifest"
	case layout.KindInit:
		return "init"
	case layout.KindSegment:
		return "segment"
	case layout.KindPart:
		return "part"
	}
	switch {
	case strings.HasPrefix(path, "/api/"):
		return "api"
	case path == "/time":
		return "time"
	case path == "/metrics":
		return "metrics"
	}
	return "page"
}

// streamKeyOf returns "live/NAME" or "vod/NAME" for media paths, "" for others (so a
// junk path cannot add a label): res.StreamKey() for res parsed from path, without
// allocating, as the key's bytes are the start of the path.
func streamKeyOf(res layout.Resource, path string) string {
	if res.Stream == "" {
		return ""
	}
	n := len("/vod/")
	if res.Live {
		n = len("/live/")
	}
	if end := n + len(res.Stream); len(path) >= end && path[n:end] == res.Stream {
		return path[1:end]
	}
	return res.StreamKey()
}

func (m *metrics) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		// Parsed once for the whole chain (the lean path has done it already), and
		// carried on the recorder to the middleware and handlers within.
		var rec *recorder
		var now time.Time // the lean path's clock read (zero: read it when needed)
		if hw, ok := w.(*h1Writer); ok {
			rec = &hw.rec // the lean path's, pooled with its exchange: no allocation
			now = hw.c.clock()
		} else {
			rec = new(recorder)
		}
		*rec = recorder{ResponseWriter: w, status: http.StatusOK, now: now,
			parsed: layout.Parsed{Path: path, Res: layout.ParseFor(w, path)}}
		next.ServeHTTP(rec, r)
		res := rec.parsed.Res
		if r.URL.Path != path { // a handler within rewrote it: count what it answered
			path = r.URL.Path
			res = layout.Parse(path)
		}
		kind := kindOf(res, path)
		km := m.perKind[kind]
		km.counter(m, kind, rec.status).Inc()
		km.bytes.Add(float64(rec.bytes))
		if rec.status < 400 {
			m.sawViewer(r, streamKeyOf(res, path), now)
		}
	})
}

// sawViewer notes that the request's client watches the stream in its path. The write
// lock is taken at most about once a second per client and stream.
func (m *metrics) sawViewer(r *http.Request, st string, now time.Time) {
	if st == "" {
		return
	}
	if now.IsZero() {
		now = time.Now()
	}
	host := r.RemoteAddr // "1.2.3.4:5678" or "[::1]:5678": drop the port, keep no copy
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	m.mu.RLock()
	last, ok := m.viewers[st][host]
	m.mu.RUnlock()
	if ok && now.Sub(last) < time.Second {
		return
	}
	m.mu.Lock()
	if m.viewers[st] == nil {
		m.viewers[st] = map[string]time.Time{}
	}
	m.viewers[st][host] = now
	m.mu.Unlock()
}

// recorder notes the status and body bytes of a response. It keeps the fast paths of
// the writer it wraps: ReadFrom (sendfile), Flush and Push, and Unwrap for
// http.ResponseController.
type recorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
	parsed      layout.Parsed // the request's path (layout.ParseFor)
	now         time.Time     // the lean path's clock read for the request; zero elsewhere
}

// clockOf is the time for the request w answers: the lean path's clock read (an
// event loop's batch time, shared by its requests), else time.Now.
func clockOf(w http.ResponseWriter) time.Time {
	switch w := w.(type) {
	case *recorder:
		if !w.now.IsZero() {
			return w.now
		}
	case *h1Writer:
		return w.c.clock()
	}
	return time.Now()
}

// ParsedPath makes the recorder a layout.ParsedCarrier for the handlers within.
func (r *recorder) ParsedPath() *layout.Parsed { return &r.parsed }

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// ReadFrom passes src straight to the inner writer's ReadFrom, so an io.LimitedReader
// of a file reaches the connection and goes out with sendfile.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	r.wroteHeader = true
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.bytes += n
	return n, err
}

// sendFile keeps the inner writer's sendfile-at-an-offset path.
func (r *recorder) sendFile(f *os.File, n int64) (bool, error) {
	fs, ok := r.ResponseWriter.(fileSender)
	if !ok {
		return false, nil
	}
	r.wroteHeader = true
	done, err := fs.sendFile(f, n)
	if done {
		r.bytes += n
	}
	return done, err
}

// writeBuffers keeps the inner writer's one-writev path for a live segment's chunks.
func (r *recorder) writeBuffers(bufs [][]byte) (int64, error) {
	r.wroteHeader = true
	n, err := writeBuffers(r.ResponseWriter, bufs)
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := r.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
