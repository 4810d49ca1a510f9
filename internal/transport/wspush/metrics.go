package wspush

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the handler's totals for /metrics, kept with atomics so a session's
// writer adds a message without a lock.
type counters struct {
	messages, chunks         atomic.Int64
	payloadBytes, overhead   atomic.Int64 // media and inits; framing, headers and texts
	switches, skips, lostMsg atomic.Int64
	handoffs                 atomic.Int64 // fan-out viewers handed to a drain goroutine

	mu    sync.Mutex
	ended map[int]int64 // sessions ended, by close code (0: the client vanished)
}

func (c *counters) sessionEnded(code int) {
	c.mu.Lock()
	if c.ended == nil {
		c.ended = map[int]int64{}
	}
	c.ended[code]++
	c.mu.Unlock()
}

var (
	descSessions = prometheus.NewDesc("streambed_ws_sessions",
		"WebSocket push sockets open, by state (waiting for start, streaming).", []string{"state"}, nil)
	descEnded = prometheus.NewDesc("streambed_ws_sessions_ended_total",
		"WebSocket push sessions ended, by close code (0: the client went away without one).", []string{"code"}, nil)
	descMessages = prometheus.NewDesc("streambed_ws_messages_total",
		"Messages pushed (binary chunks and inits, JSON texts).", nil, nil)
	descChunks = prometheus.NewDesc("streambed_ws_chunks_total",
		"Media chunks pushed.", nil, nil)
	descPayload = prometheus.NewDesc("streambed_ws_payload_bytes_total",
		"Media bytes pushed (init segments and chunks).", nil, nil)
	descOverhead = prometheus.NewDesc("streambed_ws_overhead_bytes_total",
		"Bytes pushed on top of the media: WebSocket frame headers, this protocol's headers, JSON messages.", nil, nil)
	descSwitches = prometheus.NewDesc("streambed_ws_switches_total",
		"Rendition switches decided by the server's adaptation policies.", nil, nil)
	descFanOut = prometheus.NewDesc("streambed_ws_fanout_viewers",
		"WebSocket push sessions served by a live channel's fan-out loop.", nil, nil)
	descHandoffs = prometheus.NewDesc("streambed_ws_fanout_handoffs_total",
		"Times a fan-out viewer's socket was full and its queue went to a goroutine of its own.", nil, nil)
	descSkips = prometheus.NewDesc("streambed_ws_skips_total",
		"Skips to the next keyframe (slow readers, policy holds), and the chunks they dropped.", []string{"what"}, nil)
)

// Describe and Collect make the handler a Prometheus collector.
func (h *Handler) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descEnded, descMessages, descChunks, descPayload, descOverhead, descSwitches, descSkips, descFanOut, descHandoffs} {
		ch <- d
	}
}

func (h *Handler) Collect(ch chan<- prometheus.Metric) {
	c := &h.ctr
	open, active := h.Sessions(), h.Active()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(max(open-active, 0)), "waiting")
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(active), "streaming")
	c.mu.Lock()
	for code, n := range c.ended {
		ch <- prometheus.MustNewConstMetric(descEnded, prometheus.CounterValue, float64(n), strconv.Itoa(code))
	}
	c.mu.Unlock()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descMessages, c.messages.Load())
	counter(descChunks, c.chunks.Load())
	counter(descPayload, c.payloadBytes.Load())
	counter(descOverhead, c.overhead.Load())
	counter(descSwitches, c.switches.Load())
	counter(descHandoffs, c.handoffs.Load())
	ch <- prometheus.MustNewConstMetric(descFanOut, prometheus.GaugeValue, float64(h.FanOutViewers()))
	counter(descSkips, c.skips.Load(), "skips")
	counter(descSkips, c.lostMsg.Load(), "chunks_dropped")
}
