// Package qoe records a playback session's quality of experience and reports it as a
// JSON object and a human summary. It knows nothing of transports or manifests: the
// player core feeds it events, at instants of the player's clock.
package qoe

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Report is the outcome of one session. JSON keys are part of the public surface
// (`streambed play --json`, lab reports): add keys, do not rename them.
type Report struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`          // --transport: http1, h2, h2c, ...
	Protocol  string `json:"protocol,omitempty"` // as negotiated: HTTP/1.1, HTTP/2.0
	ABR       string `json:"abr"`
	Live      bool   `json:"live"`
	EndReason string `json:"end_reason"` // ended, duration, canceled, error
	Error     string `json:"error,omitempty"`

	SessionS float64 `json:"session_s"` // from start (before the manifest request) to end
	PlayedS  float64 `json:"played_s"`  // media time played

	// StartupDelayMS is the time from the session start (before the first manifest
	// request) until playback began; null if it never began.
	StartupDelayMS *float64 `json:"startup_delay_ms"`
	StallCount     int      `json:"stall_count"` // rebuffering events after start-up
	StallMS        float64  `json:"stall_ms"`    // their total time (a stall still running at the end counts)

	Switches       int                `json:"switches"`         // changes of the played rendition (video, or audio when there is no video)
	AvgBitrateKbps float64            `json:"avg_bitrate_kbps"` // declared bandwidth of played renditions, time-weighted
	PerTrackS      map[string]float64 `json:"per_track_s"`      // media seconds played per rendition

	Requests        int    `json:"requests"`                   // requests sent (manifests, clock, init, media)
	MediaRequests   int    `json:"media_requests"`             // of which media segments
	Pushed          int    `json:"pushed"`                     // resources delivered without a request
	PayloadBytes    int64  `json:"payload_bytes"`              // response bodies (all kinds)
	MediaBytes      int64  `json:"media_bytes"`                // bodies of init and media segments
	OverheadBytes   int64  `json:"overhead_bytes"`             // protocol bytes: see OverheadSource
	WireBytes       int64  `json:"wire_bytes"`                 // bytes that crossed the sockets (0 when unknown)
	OverheadSource  string `json:"overhead_source"`            // "socket": wire − payload; "estimate": per-response estimates
	HeaderEstimateB int64  `json:"per_request_overhead_bytes"` // sum of per-response overhead (exact for HTTP/1.1)

	// ThroughputKbps is media bytes over the time spent downloading them.
	ThroughputKbps float64 `json:"throughput_kbps"`
	// Connections is the TCP connections per segment of ParS (--transport pars: the
	// last N used, also with --connections auto) or the segments in flight of
	// Parallel. With auto, CapacityKbps and CompetingFlows are the model's C and M
	// when its last estimate was valid, and EstimatorNote says how N was chosen or
	// why the model was not usable.
	Connections    *int     `json:"connections,omitempty"`
	CapacityKbps   *float64 `json:"capacity_kbps,omitempty"`
	CompetingFlows *float64 `json:"competing_flows,omitempty"`
	EstimatorNote  string   `json:"estimator_note,omitempty"`

	// LinkRateKbps is --link-rate; LinkUtilisation is media bits per second of session
	// over it. Both null when the link rate is unknown.
	LinkRateKbps    *float64 `json:"link_rate_kbps"`
	LinkUtilisation *float64 `json:"link_utilisation"`

	// LatencyMS is the mean live latency while playing: wall clock (synchronised with
	// the MPD's UTCTiming source when present) minus the wall time of the presentation
	// time being played. Null for on-demand streams.
	LatencyMS     *float64 `json:"latency_ms"`
	LatencyMinMS  *float64 `json:"latency_min_ms,omitempty"`
	LatencyMaxMS  *float64 `json:"latency_max_ms,omitempty"`
	LatencyEndMS  *float64 `json:"latency_end_ms,omitempty"`
	ClockOffsetMS float64  `json:"clock_offset_ms"` // server minus local clock, from UTCTiming
	// Low-latency live (chunk-level buffering): the latency the player steered to at the
	// end, where it came from (service-description, push-rule, live-delay), how many
	// chunks were appended before their segment was complete, and the playback rates
	// used while steering.
	TargetLatencyMS *float64 `json:"target_latency_ms,omitempty"`
	TargetSource    string   `json:"target_source,omitempty"`
	ChunkAppends    int      `json:"chunk_appends,omitempty"`
	PlaybackRateMin *float64 `json:"playback_rate_min,omitempty"`
	PlaybackRateMax *float64 `json:"playback_rate_max,omitempty"`
	ClockSource     string   `json:"clock_source,omitempty"`
	// ClockSlackMS is how far ClockOffsetMS may be from the truth: half the round trip
	// of the UTCTiming request (the server stamped its time somewhere inside it). Null
	// when the source was not a request.
	ClockSlackMS *float64 `json:"clock_offset_slack_ms,omitempty"`

	Errors       int           `json:"errors"` // failed requests (retried)
	StallEvents  []StallEvent  `json:"stalls"`
	SwitchEvents []SwitchEvent `json:"switch_events"`
	Samples      []Sample      `json:"samples"`
}

// StallEvent is one rebuffering.
type StallEvent struct {
	AtS        float64 `json:"at_s"` // session time when the buffer ran dry
	DurationMS float64 `json:"duration_ms"`
}

// SwitchEvent is one change of the played rendition.
type SwitchEvent struct {
	AtS  float64 `json:"at_s"`
	From string  `json:"from"`
	To   string  `json:"to"`
}

// Sample is one point of the time series, taken on a regular grid of session time.
type Sample struct {
	T           float64  `json:"t"`            // session seconds
	BufferS     float64  `json:"buffer_s"`     // media buffered ahead of the playhead
	BitrateKbps float64  `json:"bitrate_kbps"` // declared bandwidth of the rendition being played (0 when not playing)
	State       string   `json:"state"`        // startup, playing, stalled, ended
	LatencyMS   *float64 `json:"latency_ms,omitempty"`
}

// Options describe the session.
type Options struct {
	URL, Transport, ABR string
	LinkRate            float64 // bit/s of the bottleneck link, 0 when unknown
}

// Recorder accumulates a session's events. It is safe for concurrent use (the
// player's loop writes, a progress printer reads).
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	r     Report

	startedAt  time.Time // playback start, zero before
	stallStart time.Time // zero when not stalled
	bitTime    float64   // Σ bandwidth·seconds of the primary kind
	primaryS   float64
	lastPlayed string
	dlTime     time.Duration
	latSum     float64
	latN       int
	linkRate   float64
}

// NewRecorder starts recording a session at start.
func NewRecorder(start time.Time, o Options) *Recorder {
	return &Recorder{start: start, linkRate: o.LinkRate, r: Report{
		URL: o.URL, Transport: o.Transport, ABR: o.ABR,
		PerTrackS: map[string]float64{}, StallEvents: []StallEvent{}, SwitchEvents: []SwitchEvent{}, Samples: []Sample{},
	}}
}

func (r *Recorder) at(t time.Time) float64 { return t.Sub(r.start).Seconds() }

// Request records one completed exchange. pushed marks a delivery without a request;
// media marks init and media segments; dl is the download time (media only).
func (r *Recorder) Request(payload, overhead int64, media, pushed bool, dl time.Duration, protocol string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pushed {
		r.r.Pushed++
	} else {
		r.r.Requests++
	}
	r.r.PayloadBytes += payload
	r.r.HeaderEstimateB += overhead
	if media {
		r.r.MediaBytes += payload
		r.dlTime += dl
	}
	if protocol != "" {
		r.r.Protocol = protocol
	}
}

// MediaRequest counts a media segment request (in addition to Request).
func (r *Recorder) MediaRequest() {
	r.mu.Lock()
	r.r.MediaRequests++
	r.mu.Unlock()
}

// Error counts a failed request.
func (r *Recorder) Error() {
	r.mu.Lock()
	r.r.Errors++
	r.mu.Unlock()
}

// SetLive marks the session live or on demand.
func (r *Recorder) SetLive(live bool) {
	r.mu.Lock()
	r.r.Live = live
	r.mu.Unlock()
}

// ClockOffset records the server-minus-local clock offset, its source and how wrong
// it may be (slack; negative when unknown).
func (r *Recorder) ClockOffset(d, slack time.Duration, source string) {
	r.mu.Lock()
	r.r.ClockOffsetMS = ms(d)
	r.r.ClockSource = source
	r.r.ClockSlackMS = nil
	if slack >= 0 {
		r.r.ClockSlackMS = ptr(ms(slack))
	}
	r.mu.Unlock()
}

// Started records the start of playback.
func (r *Recorder) Started(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startedAt.IsZero() {
		r.startedAt = t
		d := ms(t.Sub(r.start))
		r.r.StartupDelayMS = &d
	}
}

// StallStarted records the buffer running dry after start-up.
func (r *Recorder) StallStarted(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stallStart.IsZero() {
		r.stallStart = t
		r.r.StallCount++
		r.r.StallEvents = append(r.r.StallEvents, StallEvent{AtS: r.at(t)})
	}
}

// StallEnded records playback resuming.
func (r *Recorder) StallEnded(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStall(t)
}

func (r *Recorder) endStall(t time.Time) {
	if r.stallStart.IsZero() {
		return
	}
	d := ms(t.Sub(r.stallStart))
	r.r.StallMS += d
	r.r.StallEvents[len(r.r.StallEvents)-1].DurationMS = d
	r.stallStart = time.Time{}
}

// Played records d of media of rendition id (declared bandwidth bps) played ending at
// t. primary marks the kind whose bitrate and switches are reported.
func (r *Recorder) Played(t time.Time, id string, bps int, d time.Duration, primary bool) {
	if d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.r.PerTrackS[id] += d.Seconds()
	if !primary {
		return
	}
	r.r.PlayedS += d.Seconds()
	r.primaryS += d.Seconds()
	r.bitTime += float64(bps) * d.Seconds()
	if r.lastPlayed != "" && r.lastPlayed != id {
		r.r.Switches++
		r.r.SwitchEvents = append(r.r.SwitchEvents, SwitchEvent{AtS: r.at(t.Add(-d)), From: r.lastPlayed, To: id})
	}
	r.lastPlayed = id
}

// Latency records the live latency observed at a sample instant.
func (r *Recorder) Latency(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := ms(d)
	r.latSum += v
	r.latN++
	if r.r.LatencyMinMS == nil || v < *r.r.LatencyMinMS {
		r.r.LatencyMinMS = ptr(v)
	}
	if r.r.LatencyMaxMS == nil || v > *r.r.LatencyMaxMS {
		r.r.LatencyMaxMS = ptr(v)
	}
	r.r.LatencyEndMS = ptr(v)
}

// LowLatency records the target latency the player steers to and where it came from.
func (r *Recorder) LowLatency(target time.Duration, source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.r.TargetLatencyMS = ptr(round3(ms(target)))
	r.r.TargetSource = source
}

// ChunkAppended counts media appended before its segment was complete.
func (r *Recorder) ChunkAppended() {
	r.mu.Lock()
	r.r.ChunkAppends++
	r.mu.Unlock()
}

// PlaybackRate records a playback rate used while steering the latency.
func (r *Recorder) PlaybackRate(rate float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.r.PlaybackRateMin == nil || rate < *r.r.PlaybackRateMin {
		r.r.PlaybackRateMin = ptr(round3(rate))
	}
	if r.r.PlaybackRateMax == nil || rate > *r.r.PlaybackRateMax {
		r.r.PlaybackRateMax = ptr(round3(rate))
	}
}

// Sample appends a time-series point taken at t.
func (r *Recorder) Sample(t time.Time, buffer time.Duration, bps int, state string, latency *time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Sample{T: round3(r.at(t)), BufferS: round3(buffer.Seconds()), BitrateKbps: float64(bps) / 1000, State: state}
	if latency != nil {
		s.LatencyMS = ptr(round3(ms(*latency)))
	}
	r.r.Samples = append(r.r.Samples, s)
}

// Snapshot returns the counters so far (for progress lines).
func (r *Recorder) Snapshot() (stalls int, stallMS float64, switches int, payload int64, requests int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.StallCount, r.r.StallMS, r.r.Switches, r.r.PayloadBytes, r.r.Requests + r.r.Pushed
}

// Finish closes the session at end and returns the report. wireRead and wireWritten
// are the socket byte counts when the transport measures them (wireKnown).
func (r *Recorder) Finish(end time.Time, reason string, err error, wireRead, wireWritten int64, wireKnown bool) Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStall(end)
	rep := r.r
	rep.EndReason = reason
	if err != nil {
		rep.Error = err.Error()
	}
	rep.SessionS = round3(end.Sub(r.start).Seconds())
	rep.PlayedS = round3(rep.PlayedS)
	rep.StallMS = round3(rep.StallMS)
	for k, v := range rep.PerTrackS {
		rep.PerTrackS[k] = round3(v)
	}
	if r.primaryS > 0 {
		rep.AvgBitrateKbps = round3(r.bitTime / r.primaryS / 1000)
	}
	if r.dlTime > 0 {
		rep.ThroughputKbps = round3(float64(rep.MediaBytes) * 8 / r.dlTime.Seconds() / 1000)
	}
	if wireKnown {
		rep.WireBytes = wireRead + wireWritten
		rep.OverheadBytes = max(rep.WireBytes-rep.PayloadBytes, 0)
		rep.OverheadSource = "socket"
	} else {
		rep.OverheadBytes = rep.HeaderEstimateB
		rep.OverheadSource = "estimate"
	}
	if r.linkRate > 0 {
		rep.LinkRateKbps = ptr(r.linkRate / 1000)
		if s := end.Sub(r.start).Seconds(); s > 0 {
			rep.LinkUtilisation = ptr(round3(float64(rep.MediaBytes) * 8 / s / r.linkRate))
		}
	}
	if r.latN > 0 {
		rep.LatencyMS = ptr(round3(r.latSum / float64(r.latN)))
	}
	return rep
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func ptr[T any](v T) *T { return &v }

// WriteSummary writes the report for people.
func (rep *Report) WriteSummary(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	kind := "on demand"
	if rep.Live {
		kind = "live"
	}
	p("%s (%s) over %s %s, abr %s — %s after %.1f s", rep.URL, kind, rep.Transport, rep.Protocol, rep.ABR, rep.EndReason, rep.SessionS)
	if rep.Error != "" {
		p("  error:        %s", rep.Error)
	}
	if rep.StartupDelayMS != nil {
		p("  start-up:     %.0f ms", *rep.StartupDelayMS)
	} else {
		p("  start-up:     never started")
	}
	p("  stalls:       %d, %.0f ms", rep.StallCount, rep.StallMS)
	p("  played:       %.1f s at %.0f kbit/s average, %d switches", rep.PlayedS, rep.AvgBitrateKbps, rep.Switches)
	if len(rep.PerTrackS) > 0 {
		ids := make([]string, 0, len(rep.PerTrackS))
		for id := range rep.PerTrackS {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s %.1f s", id, rep.PerTrackS[id]))
		}
		p("  per track:    %s", strings.Join(parts, ", "))
	}
	p("  requests:     %d (%d media, %d pushed, %d errors)", rep.Requests, rep.MediaRequests, rep.Pushed, rep.Errors)
	p("  bytes:        %d payload, %d overhead (%s)", rep.PayloadBytes, rep.OverheadBytes, rep.OverheadSource)
	p("  throughput:   %.0f kbit/s while downloading", rep.ThroughputKbps)
	if rep.Connections != nil {
		p("  connections:  %d%s", *rep.Connections, orEmpty(" — "+rep.EstimatorNote, rep.EstimatorNote != ""))
	}
	if rep.LinkUtilisation != nil {
		p("  link:         %.0f kbit/s, utilisation %.2f", *rep.LinkRateKbps, *rep.LinkUtilisation)
	}
	if rep.LatencyMS != nil {
		off := rep.ClockOffsetMS
		if math.Abs(off) < 0.5 {
			off = 0 // not "-0"
		}
		p("  latency:      %.0f ms mean (min %.0f, max %.0f, end %.0f); clock offset %.0f ms via %s",
			*rep.LatencyMS, deref(rep.LatencyMinMS), deref(rep.LatencyMaxMS), deref(rep.LatencyEndMS), off, orNone(rep.ClockSource))
		if rep.TargetLatencyMS != nil {
			p("  low latency:  target %.0f ms (%s), %d chunks appended, playback rate %.3f–%.3f",
				*rep.TargetLatencyMS, rep.TargetSource, rep.ChunkAppends, derefOr(rep.PlaybackRateMin, 1), derefOr(rep.PlaybackRateMax, 1))
		}
	}
}

func derefOr(v *float64, d float64) float64 {
	if v == nil {
		return d
	}
	return *v
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func orNone(s string) string {
	if s == "" {
		return "local clock"
	}
	return s
}

func orEmpty(s string, ok bool) string {
	if !ok {
		return ""
	}
	return s
}
