package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/cdn"
	"github.com/streambed/streambed/internal/lab/load/workload"
	"github.com/streambed/streambed/internal/lab/netem"
)

// CellResult is one cell's measurements.
type CellResult struct {
	Config     int     `json:"config"`
	ConfigName string  `json:"config_name"`
	Cache      string  `json:"cache,omitempty"` // configurations 2 and 3
	UseCase    string  `json:"use_case"`
	Rep        int     `json:"rep"`
	Workers    int     `json:"workers"`
	RampS      float64 `json:"ramp_s"`
	DurationS  float64 `json:"duration_s"`
	MeasuredS  float64 `json:"measured_s"` // the load window the servers' CPU is divided by

	// At the viewers (the load generator's report).
	Requests       uint64             `json:"viewer_requests"`
	ByKind         map[string]uint64  `json:"viewer_requests_by_kind"`
	Errors         map[string]uint64  `json:"viewer_errors_by_status"`
	ErrorCount     uint64             `json:"viewer_errors"`
	RequestsPerS   float64            `json:"viewer_requests_per_s"`
	ThroughputMbit float64            `json:"viewer_throughput_mbit_s"`
	Latency        map[string]Latency `json:"response_time_ms"` // per kind, and "all"
	Started        int                `json:"sessions_started"`
	Failed         int                `json:"sessions_failed"`
	TimeShifted    int                `json:"sessions_time_shifted"`
	Jumps          int                `json:"jumps_to_live_edge"`
	// LoadAvg is the machine's /proc/loadavg after the load: the other work on it.
	LoadAvg string `json:"loadavg_after"`

	Servers map[Role]*ServerResult `json:"servers"`
	// Links: each emulated link direction over the load window ("origin>edge": the
	// WAN toward viewers), as the emulator counted it.
	Links    map[string]LinkResult `json:"links,omitempty"`
	CacheLog *cacheLog             `json:"cache_log,omitempty"`

	// Origin load reduction: 1 − the origin's media requests ÷ the viewers' requests,
	// in percent (configuration 1 has no cache: about 0).
	OriginReductionPct float64 `json:"origin_request_reduction_pct"`
	// Configuration 3: the same for the edge origin behind the cache.
	EdgeOriginReductionPct float64 `json:"edge_origin_request_reduction_pct,omitempty"`
}

// LinkResult is one direction of an emulated link over the load window.
type LinkResult struct {
	Mbit         float64 `json:"mbit_s"`        // IP bytes that entered the link
	QueueDropped uint64  `json:"queue_dropped"` // drop-tail
	LateMeanMs   float64 `json:"late_mean_ms"`  // the forwarder's mean lateness against the model
	LateOver1ms  float64 `json:"late_over_1ms"` // share of packets handed over more than 1 ms late
}

// Latency is response time (request sent to last body byte) in milliseconds.
type Latency struct {
	P50, P90, P99, P999, Mean, StdDev, Max float64
}

// ServerResult is one server process (tree) over the load window.
type ServerResult struct {
	CPUCores       float64 `json:"cpu_cores"`        // CPU seconds ÷ load seconds
	IngestCPUCores float64 `json:"ingest_cpu_cores"` // the same before the load: the channel alone
	RSSMaxMiB      float64 `json:"rss_max_mib"`
	RSSMeanMiB     float64 `json:"rss_mean_mib"`
	// Origins only, from their /metrics over the load window.
	Requests      map[string]float64 `json:"requests_by_kind,omitempty"`
	MediaRequests float64            `json:"media_requests,omitempty"`
	MediaBytes    float64            `json:"media_bytes,omitempty"`
}

func latencyOf(h *workload.Hist) Latency {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Latency{P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)),
		Mean: ms(h.Mean()), StdDev: ms(h.StdDev()), Max: ms(h.Max())}
}

// fromLoad fills the viewers' side from the load generator's report.
func (c *CellResult) fromLoad(r *workload.Report) {
	t := r.Totals()
	c.Requests, c.ErrorCount, c.RequestsPerS, c.ThroughputMbit = t.Requests, t.Errors, t.RequestsPerS, t.ThroughputBps/1e6
	c.Errors = r.Errors
	c.ByKind = map[string]uint64{}
	c.Latency = map[string]Latency{}
	all := workload.NewHist()
	for _, k := range workload.Kinds {
		kr := r.Kinds[k]
		c.ByKind[string(k)] = kr.Requests
		c.Latency[string(k)] = latencyOf(kr.Latency)
		all.Merge(kr.Latency)
	}
	c.Latency["all"] = latencyOf(all)
	c.Started, c.Failed, c.TimeShifted, c.Jumps = r.Sessions.Started, r.Sessions.Failed, r.Sessions.TimeShifted, r.Sessions.Jumps
}

// reductions computes the origin load reduction from the servers' counters.
func (c *CellResult) reductions() {
	if c.Requests == 0 {
		return
	}
	red := func(origin float64) float64 { return 100 * (1 - origin/float64(c.Requests)) }
	if o := c.Servers[RoleOrigin]; o != nil {
		c.OriginReductionPct = red(o.MediaRequests)
	}
	if e := c.Servers[RoleEdgeOrigin]; e != nil {
		c.EdgeOriginReductionPct = red(e.MediaRequests)
	}
}

// Results is the whole run: settings, every cell, and the machine's note.
type Results struct {
	Command  string        `json:"command"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Commit   string        `json:"commit"`
	Settings ResultsConfig `json:"settings"`
	Note     string        `json:"note"`
	LoadAvg  [2]string     `json:"loadavg_start_end"` // /proc/loadavg
	Cells    []*CellResult `json:"cells"`
	Failed   []string      `json:"failed_cells,omitempty"`
}

// ResultsConfig records how the run was set up.
type ResultsConfig struct {
	WANDelayMs    float64 `json:"wan_one_way_delay_ms"`
	WANRate       string  `json:"wan_rate"`
	AccessDelayMs float64 `json:"access_one_way_delay_ms"`
	AccessRate    string  `json:"access_rate"`
	Workers       int     `json:"workers"`
	RampS         float64 `json:"ramp_s"`
	DurationS     float64 `json:"duration_s"`
	WarmupS       float64 `json:"warmup_s"`
	ShiftShare    float64 `json:"dvr_timeshift_share"`
	ShiftS        float64 `json:"dvr_timeshift_s"`
	Reps          int     `json:"reps"`
	ServerCPUs    string  `json:"server_cpus"`
	ClientCPUs    string  `json:"client_cpus"`
	Ladder        string  `json:"ladder"`
	Video         string  `json:"viewer_video"`
	Audio         string  `json:"viewer_audio"`
	// ManifestEveryS: the viewers' MPD reload interval (0: its minimumUpdatePeriod)
	ManifestEveryS float64 `json:"viewer_manifest_every_s,omitempty"`
	Encoder        string  `json:"encoder"`
	Backend        string  `json:"netem_backend"`
}

// spread is the median and range of values over repetitions.
type spread struct{ med, lo, hi float64 }

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{m, s[0], s[len(s)-1]}
}

func (s spread) format(f string) string {
	if s.lo == s.hi {
		return fmt.Sprintf(f, s.med)
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", s.med, s.lo, s.hi)
}

// group is one configuration × use case over its repetitions.
type group struct {
	config  int
	name    string
	useCase string
	cells   []*CellResult
}

func groups(cells []*CellResult) []group {
	var out []group
	idx := map[string]int{}
	for _, c := range cells {
		k := fmt.Sprintf("%s/%s", c.UseCase, c.ConfigName)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, group{config: c.Config, useCase: c.UseCase, name: c.ConfigName})
		}
		out[i].cells = append(out[i].cells, c)
	}
	order := map[string]int{"pure-live": 0, "archive": 1, "archive-dvr": 2}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].useCase != out[b].useCase {
			return order[out[a].useCase] < order[out[b].useCase]
		}
		if out[a].config != out[b].config {
			return out[a].config < out[b].config
		}
		return out[a].name < out[b].name
	})
	return out
}

func (g group) values(f func(*CellResult) float64) spread {
	var v []float64
	for _, c := range g.cells {
		v = append(v, f(c))
	}
	return spreadOf(v)
}

func server(c *CellResult, r Role) *ServerResult {
	if s := c.Servers[r]; s != nil {
		return s
	}
	return &ServerResult{}
}

// writeMarkdown writes the summary tables: medians over repetitions, with the range
// when there are several, and each configuration's p99 as a ratio to configuration
// 2's in the same run.
func writeMarkdown(w io.Writer, r *Results) {
	s := r.Settings
	fmt.Fprintf(w, "Command: `%s`\n\n", r.Command)
	fmt.Fprintf(w, "Run %s – %s, commit %s, %d repetition(s); %s. Each cell: 0 → %d workers of the DASH live loop over %.0f s, %.0f s in all; WAN %.0f ms one way at %s, access links %.0f ms at %s (%s); servers on CPU %s, encoder and load on CPU %s. %s\n\n",
		r.Started.UTC().Format("2006-01-02T15:04Z"), r.Finished.UTC().Format("15:04Z"), r.Commit, s.Reps, s.Encoder,
		s.Workers, s.RampS, s.DurationS, s.WANDelayMs, s.WANRate, s.AccessDelayMs, s.AccessRate, s.Backend, orAll(s.ServerCPUs), orAll(s.ClientCPUs), r.Note)
	mpd := "as the MPD's minimumUpdatePeriod says"
	if s.ManifestEveryS > 0 {
		mpd = fmt.Sprintf("every %.2f s", s.ManifestEveryS)
	}
	fmt.Fprintf(w, "Viewers fetch %s and %s of the %s and reload the MPD %s.\n\n", s.Video, s.Audio, s.Ladder, mpd)
	if r.LoadAvg[0] != "" {
		fmt.Fprintf(w, "Load average (1, 5, 15 min) at the start: %s; at the end: %s.\n\n", r.LoadAvg[0], r.LoadAvg[1])
	}
	gs := groups(r.Cells)
	p99c2 := map[string]float64{}
	for _, g := range gs {
		if g.config == 2 && g.cells[0].Cache != string(cdn.Varnish) {
			p99c2[g.useCase] = g.values(func(c *CellResult) float64 { return c.Latency["all"].P99 }).med
		}
	}
	fmt.Fprintln(w, "**Viewers** (the load generator's report): throughput, response time of all requests, errors.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| use case | configuration | requests/s | throughput (Mbit/s) | p50 (ms) | p99 (ms) | std. dev. (ms) | p99 ÷ config 2 (nginx)'s | video p99 (ms) | errors | time-shifted sessions |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, g := range gs {
		p99 := g.values(func(c *CellResult) float64 { return c.Latency["all"].P99 })
		ratio := "—"
		if b := p99c2[g.useCase]; b > 0 {
			ratio = fmt.Sprintf("%.2f", p99.med/b)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.useCase, g.cells[0].ConfigName,
			g.values(func(c *CellResult) float64 { return c.RequestsPerS }).format("%.0f"),
			g.values(func(c *CellResult) float64 { return c.ThroughputMbit }).format("%.0f"),
			g.values(func(c *CellResult) float64 { return c.Latency["all"].P50 }).format("%.1f"),
			p99.format("%.1f"),
			g.values(func(c *CellResult) float64 { return c.Latency["all"].StdDev }).format("%.1f"),
			ratio,
			g.values(func(c *CellResult) float64 { return c.Latency["video"].P99 }).format("%.1f"),
			g.values(func(c *CellResult) float64 { return float64(c.ErrorCount) }).format("%.0f"),
			g.values(func(c *CellResult) float64 { return float64(c.TimeShifted) }).format("%.0f"))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "**Origins and cache** over the load window: the origin that takes the ingest (central; on the edge in configuration 1), the edge origin of configuration 3, the cache (nginx or Varnish, with its children); CPU in cores (CPU seconds ÷ seconds), before the load (the channel alone) and under it; RSS maximum; origin media requests from the origin's own `/metrics`; upstream fetches per segment from nginx's log.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| use case | configuration | origin requests | origin out (Mbit/s) | origin load reduction | origin CPU alone → under load | origin RSS (MiB) | edge origin requests (reduction) | edge origin CPU, RSS | cache CPU, RSS | fetches per segment (max, nginx log) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, g := range gs {
		o := func(f func(*ServerResult) float64) spread {
			return g.values(func(c *CellResult) float64 { return f(server(c, RoleOrigin)) })
		}
		var edge string
		cache, fetch := "—", "—"
		if g.config == int(EdgeOriginCache) {
			e := func(f func(*ServerResult) float64) spread {
				return g.values(func(c *CellResult) float64 { return f(server(c, RoleEdgeOrigin)) })
			}
			edge = fmt.Sprintf("%s (%s%%) | %s cores, %s MiB",
				e(func(s *ServerResult) float64 { return s.MediaRequests }).format("%.0f"),
				g.values(func(c *CellResult) float64 { return c.EdgeOriginReductionPct }).format("%.2f"),
				e(func(s *ServerResult) float64 { return s.CPUCores }).format("%.3f"),
				e(func(s *ServerResult) float64 { return s.RSSMaxMiB }).format("%.0f"))
		} else {
			edge = "— | —"
		}
		if g.config != int(OriginAtEdge) {
			ca := func(f func(*ServerResult) float64) spread {
				return g.values(func(c *CellResult) float64 { return f(server(c, RoleCache)) })
			}
			cache = fmt.Sprintf("%s cores, %s MiB", ca(func(s *ServerResult) float64 { return s.CPUCores }).format("%.3f"),
				ca(func(s *ServerResult) float64 { return s.RSSMaxMiB }).format("%.0f"))
			if g.cells[0].CacheLog != nil {
				fetch = g.values(func(c *CellResult) float64 {
					if c.CacheLog == nil {
						return 0
					}
					return float64(c.CacheLog.MaxFetchesPerSegment)
				}).format("%.0f")
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s%% | %s → %s | %s | %s | %s | %s |\n", g.useCase, g.cells[0].ConfigName,
			o(func(s *ServerResult) float64 { return s.MediaRequests }).format("%.0f"),
			g.values(func(c *CellResult) float64 { return server(c, RoleOrigin).MediaBytes * 8 / max(c.MeasuredS, 1) / 1e6 }).format("%.1f"),
			g.values(func(c *CellResult) float64 { return c.OriginReductionPct }).format("%.2f"),
			o(func(s *ServerResult) float64 { return s.IngestCPUCores }).format("%.3f"),
			o(func(s *ServerResult) float64 { return s.CPUCores }).format("%.3f"),
			o(func(s *ServerResult) float64 { return s.RSSMaxMiB }).format("%.0f"),
			edge, cache, fetch)
	}
	writeLinks(w, gs)
	if len(r.Failed) > 0 {
		fmt.Fprintf(w, "\nCells that failed: %s.\n", strings.Join(r.Failed, "; "))
	}
}

func orAll(cpus string) string {
	if cpus == "" {
		return "any"
	}
	return cpus
}

// loadAvg is the first three fields of /proc/loadavg (1, 5, 15 minutes).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// writeLinks tables the WAN and access links' load and the emulator's own timing,
// when the run recorded them.
func writeLinks(w io.Writer, gs []group) {
	if len(gs) == 0 || gs[0].cells[0].Links == nil {
		return
	}
	dirs := []string{"ingest>origin", "origin>edge", "edge>origin", "edge>client"}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "**Links** over the load window, as the emulator counted them (IP Mbit/s; the WAN is origin ↔ edge), and the forwarder's lateness against its model on the viewers' link (a loaded machine hands packets over late).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| use case | configuration | "+strings.Join(dirs, " | ")+" | edge>client late, mean (ms) | > 1 ms late |")
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("---|", len(dirs)+2))
	for _, g := range gs {
		var cols []string
		for _, d := range dirs {
			cols = append(cols, g.values(func(c *CellResult) float64 { return c.Links[d].Mbit }).format("%.1f"))
		}
		cols = append(cols, g.values(func(c *CellResult) float64 { return c.Links["edge>client"].LateMeanMs }).format("%.2f"),
			g.values(func(c *CellResult) float64 { return 100 * c.Links["edge>client"].LateOver1ms }).format("%.1f")+"%")
		fmt.Fprintf(w, "| %s | %s | %s |\n", g.useCase, g.cells[0].ConfigName, strings.Join(cols, " | "))
	}
}

// linkDeltas is each link direction's traffic between two snapshots of the emulator.
func linkDeltas(before, after []netem.DirectionStats, seconds float64) map[string]LinkResult {
	prev := map[string]netem.DirectionStats{}
	for _, d := range before {
		prev[d.From+">"+d.To] = d
	}
	out := map[string]LinkResult{}
	for _, d := range after {
		k := d.From + ">" + d.To
		b := prev[k]
		lr := LinkResult{Mbit: float64(d.Bytes-b.Bytes) * 8 / max(seconds, 1e-9) / 1e6, QueueDropped: d.QueueDropped - b.QueueDropped}
		if n := d.Timed - b.Timed; n > 0 {
			lr.LateMeanMs = float64(d.LateSum-b.LateSum) / float64(n) / 1e6
			lr.LateOver1ms = float64(d.LateOver1ms-b.LateOver1ms) / float64(n)
		}
		out[k] = lr
	}
	return out
}
