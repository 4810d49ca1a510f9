package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/experiment"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/transport/httppull"
	"github.com/streambed/streambed/internal/transport/pars"
)

func names(cs []condition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func itoas(ns []int) []string {
	var out []string
	for _, n := range ns {
		out = append(out, strconv.Itoa(n))
	}
	return out
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// steadyRate is Σbytes·8/Σtime of the samples with n connections (0 if none).
func steadyRate(samples []pars.Sample, n int) float64 {
	var b, s float64
	for _, x := range samples {
		if x.N == n {
			b += float64(x.Bytes)
			s += x.D.Seconds()
		}
	}
	if s == 0 {
		return 0
	}
	return b * 8 / s
}

// goodput is the TCP payload rate of a link that carries 1500-byte IP packets (1448
// bytes of payload with TCP timestamps): the true C of the model.
func goodput(rate float64) float64 { return rate * 1448 / 1500 }

// parsCell plays the segments back to back as a player would ask for them (the media
// request with its number), with ParS over n connections, pipelined or one segment at
// a time (serial), fresh connections kept open across segments, until budget has passed.
// The ranges' traces go to traceFile (CSV) unless it is "".
func parsCell(ctx context.Context, l *lab, urls []string, nums []uint64, n int, budget time.Duration, rate float64, v parsVariant, traceFile string) (m map[string]any, samples []pars.Sample, count int, err error) {
	tr := &traces{}
	serial := v.serial
	c, err := pars.New(pars.Options{Connections: n, NoPipeline: v.serial, RangesPerConnection: v.ranges, ConnOptions: laneOptions(l, v.streams, v.proto), Trace: tr.add})
	if err != nil {
		return nil, nil, 0, err
	}
	defer c.Close()
	start := time.Now()
	arrived := sampleAt(start, budget, c.BodyBytes)
	var bytes int64
	for time.Since(start) < budget {
		i := count % len(urls)
		resp, err := c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestMedia, URL: urls[i], Number: nums[i]})
		if err != nil {
			return nil, nil, count, err
		}
		bytes += resp.PayloadBytes
		count++
	}
	end := time.Now()
	el := end.Sub(start)
	wire, _ := c.WireBytes()
	st := c.Stats()
	thr := float64(bytes) * 8 / el.Seconds()
	tr.mu.Lock()
	ts := slices.Clone(tr.all)
	tr.mu.Unlock()
	if traceFile != "" {
		if err := writeTraces(traceFile, ts, start); err != nil {
			return nil, nil, count, err
		}
	}
	m = map[string]any{
		// Segments handed to the player over the time to the last one (the completed
		// figure; the link share is delivered.metrics').
		"throughput_kbps": round(thr/1000, 1),
		"completed_kbps":  round(thr/1000, 1),
		"completed_share": round(thr/rate, 3),
		"steady_kbps":     round(steadyRate(st.Samples, n)/1000, 1),
		"segments":        count,
		"mbytes":          round(float64(bytes)/1e6, 3),
		"retries":         st.Retries,
		"prefetched":      st.Prefetched,
		"wasted":          st.Wasted,
		// Everything the connections received over the same time, segments fetched
		// ahead and not yet asked for included: how busy the link was.
		"wire_kbps": round(float64(wire)*8/el.Seconds()/1000, 1),
	}
	if !serial {
		maps.Copy(m, gapMetrics(ts, n, start, end))
	}
	maps.Copy(m, arrived().metrics(rate)) // the loop ran past the budget: read
	return m, st.Samples, count, nil
}

// parsVariant is one way of running ParS in the throughput cells.
type parsVariant struct {
	name    string
	serial  bool // one segment at a time (no pipelining)
	streams int  // requests per connection at once (0: the client's default)
	proto   httppull.Protocol
	ranges  int // ranges per connection and segment (0: the client's default)
}

// parsVariants: ParS as the client does it by default (pars: pipelined HTTP/1.1, two
// ranges per connection and segment since 2026-11-24) and as it did before
// (pars-nopipe: one request and one range per connection at a time,
// `--pars-pipeline=false`); with -streams S each connection carrying S requests and
// one range each, pipelined over HTTP/1.1 (pars-h1xS) and over h2c (pars-h2xS); with
// -ranges-per-conn R, R ranges per connection and segment (pars-rR with one request
// at a time, and pars-h1xS-rR with -streams); -clients keeps some of these; with
// -serial one segment at a time as before pipelining (pars-serial).
func parsVariants(o options) []parsVariant {
	vs := []parsVariant{{name: "pars"}, {name: "pars-nopipe", streams: 1, ranges: 1}}
	if o.streams > 1 {
		vs = append(vs, parsVariant{name: fmt.Sprintf("pars-h1x%d", o.streams), streams: o.streams, proto: httppull.HTTP1, ranges: 1},
			parsVariant{name: fmt.Sprintf("pars-h2x%d", o.streams), streams: o.streams, proto: httppull.H2C, ranges: 1})
	}
	if o.rangesPerConn > 1 {
		vs = append(vs, parsVariant{name: fmt.Sprintf("pars-r%d", o.rangesPerConn), streams: 1, ranges: o.rangesPerConn})
		if o.streams > 1 {
			vs = append(vs, parsVariant{name: fmt.Sprintf("pars-h1x%d-r%d", o.streams, o.rangesPerConn), streams: o.streams, proto: httppull.HTTP1, ranges: o.rangesPerConn})
		}
	}
	if o.clients != "" { // only the variants asked for
		keep := vs[:0]
		for _, v := range vs {
			if slices.Contains(strings.Split(o.clients, ","), v.name) {
				keep = append(keep, v)
			}
		}
		vs = keep
	}
	if o.serial {
		vs = append(vs, parsVariant{name: "pars-serial", serial: true, streams: 1, ranges: 1})
	}
	return vs
}

// laneOptions are ParS's connections in the lab: dialled from the client host, with
// h2c on each connection when it carries more than one request at once.
func laneOptions(l *lab, streams int, proto httppull.Protocol) pars.ConnOptions {
	return pars.ConnOptions{DialContext: l.dial, Streams: streams, LaneProtocol: proto}
}

// ariaCell downloads the first count segments (cycled) with aria2c within budget.
func ariaCell(ctx context.Context, l *lab, urls []string, sizes []int64, count, n int, budget time.Duration, rate float64) (map[string]any, error) {
	var us []string
	var ss []int64
	for i := 0; i < max(count, 1); i++ {
		us = append(us, urls[i%len(urls)])
		ss = append(ss, sizes[i%len(sizes)])
	}
	r, err := l.runAria(ctx, us, ss, n, budget)
	if err != nil {
		return nil, err
	}
	thr := float64(r.Bytes) * 8 / r.Elapsed.Seconds()
	m := map[string]any{
		// Completed files over the time to the last one (the completed figure).
		"throughput_kbps": round(thr/1000, 1),
		"completed_kbps":  round(thr/1000, 1),
		"completed_share": round(thr/rate, 3),
		"segments":        r.Files,
		"mbytes":          round(float64(r.Bytes)/1e6, 3),
		"command":         r.Args,
	}
	maps.Copy(m, r.Delivered.metrics(rate))
	return m, nil
}

// autoResult is what one auto run did: its last estimate, the N of every segment,
// every estimate on the way and the client's throughput samples.
type autoResult struct {
	est       pars.Estimate
	ns        []int
	decisions []pars.Estimate
	samples   []pars.Sample
}

// autoRun lets ParS choose N with the model for budget. wholeSegment selects
// whole-segment throughput samples.
func autoRun(ctx context.Context, l *lab, urls []string, nums []uint64, budget time.Duration, wholeSegment bool) (autoResult, error) {
	c, err := pars.New(pars.Options{Auto: true, WholeSegmentSamples: wholeSegment, ConnOptions: pars.ConnOptions{DialContext: l.dial}})
	if err != nil {
		return autoResult{}, err
	}
	defer c.Close()
	var r autoResult
	start := time.Now()
	for i := 0; time.Since(start) < budget; i++ {
		if _, err := c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestMedia, URL: urls[i%len(urls)], Number: nums[i%len(nums)]}); err != nil {
			return r, err
		}
		r.ns = append(r.ns, c.Connections())
	}
	r.est, _ = c.Estimate()
	r.decisions = c.Decisions()
	r.samples = c.Stats().Samples
	return r, nil
}

// decisionRows is the estimator's history for results.json: per estimate the N, why,
// and the probe samples as "2w:8467@712" (N, w: whole segment or s: after slow
// start, kbit/s, @ its duration in ms).
func decisionRows(ds []pars.Estimate) []map[string]any {
	var rows []map[string]any
	for _, d := range ds {
		var probes []string
		for _, p := range d.Probes {
			kind := "s"
			if p.Whole {
				kind = "w"
			}
			probes = append(probes, fmt.Sprintf("%d%s:%.0f@%d", p.N, kind, p.Bps/1000, p.D.Milliseconds()))
		}
		rows = append(rows, map[string]any{"n": d.Connections, "reason": d.Reason, "probes": probes,
			"x1_kbps": round(d.X1/1000, 1), "x2_kbps": round(d.X2/1000, 1),
			"whole_x1_kbps": round(d.WholeX1/1000, 1), "whole_x2_kbps": round(d.WholeX2/1000, 1)})
	}
	return rows
}

// sampleRows is the client's samples as "N:kbit/s" ("m" marks a mixed one).
func sampleRows(ss []pars.Sample) []string {
	var out []string
	for _, s := range ss {
		m := ""
		if s.Mixed {
			m = "m"
		}
		out = append(out, fmt.Sprintf("%d%s:%.0f", s.N, m, s.Bps/1000))
	}
	return out
}

// throughputAndModel runs the throughput cells (ParS and aria2c) and the model per
// condition; save is called after every condition with the results so far.
func throughputAndModel(ctx context.Context, l *lab, o options, meta func(string) *experiment.Results, save func(thr, model *experiment.Results) error) (*experiment.Results, *experiment.Results, error) {
	conds := conditions(o.quick)
	if o.only != "" {
		var keep []condition
		for _, c := range conds {
			if slices.Contains(strings.Split(o.only, ","), c.Name) {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			return nil, nil, fmt.Errorf("-conditions %q matches none of %v", o.only, names(conds))
		}
		conds = keep
	}
	urls, sizes, nums, err := l.segmentURLs(2 * time.Second)
	if err != nil {
		return nil, nil, err
	}
	variants := parsVariants(o)
	if !o.parts["throughput"] {
		variants = variants[:1] // the model needs ParS as it is
	}
	var clientNames []string
	for _, v := range variants {
		clientNames = append(clientNames, v.name)
	}
	clientNames = append(clientNames, "aria2c", "tcp-bulk")
	var total int64
	for _, s := range sizes {
		total += s
	}
	fmt.Fprintf(o.progress, "segments: %d of 2 s, mean %.0f kB\n", len(sizes), float64(total)/float64(len(sizes))/1000)
	thr := meta("throughput")
	thr.Scenario = &experiment.Scenario{
		Name:  "pars-throughput",
		Title: "ParS — aggregate throughput against connections per segment, with aria2c",
		Description: fmt.Sprintf("Each cell downloads the 2 s video segments (720p, 3 Mbit/s) back to back for %s: ParS with N ranges over N connections per segment, "+
			"pipelined (pars: a connection that finished its range starts one of the next segment) and, as pars-serial, one segment at a time; "+
			"and aria2c (%s) on the same files; tcp-bulk is N long-lived TCP downloads from the same origin (the ceiling of N flows on this link). Default link 10 Mbit/s, RTT 50 ms, 1%% random loss each way; one parameter varied per condition; "+
			"competing=M adds M long-lived TCP downloads on the same link. Origin sends with %q; bottleneck queue %s.", o.budget, ariaArgs(0)[0]+" -x N -s N -k 1M -j 1", o.cc, o.queue),
		Reference:   "ParS: parallel range requests per segment (issue #6)",
		Matrix:      experiment.Matrix{{Name: "condition", Values: names(conds)}, {Name: "client", Values: clientNames}, {Name: "connections", Values: itoas(o.conns)}},
		Repetitions: o.reps,
		Metrics:     []string{"link_share", "delivered_kbps", "completed_share", "completed_kbps", "throughput_kbps", "steady_kbps", "segments", "retries", "prefetched", "wasted"},
		Plot:        experiment.Plot{X: "connections", Series: "client"},
		Published: []experiment.Published{
			{Metric: "link_share", Where: map[string]string{"condition": "rtt=150ms", "client": "pars", "connections": "1"}, Value: 0.13, Source: "study: one connection, 150 ms, 1% loss"},
		},
	}
	model := meta("model")
	model.Scenario = &experiment.Scenario{
		Name:  "pars-model",
		Title: "ParS — the model's C and M against the truth",
		Description: "Per condition, ParS downloads the 2 s segments back to back with N = 1, 2, 4, 8 for " + o.budget.String() + " each. " +
			"x1/x2 are its throughput after slow start (each connection from 4 RTTs after its first byte to its end, summed), agg_x1/agg_x2 its whole-run throughput " +
			"(all bytes over all the time: requests, slow start and the wait for the slowest range included). C and M follow from X_N = N·C/(N+M) for each; " +
			"the true C is the link's TCP payload rate (1448 of 1500 bytes), the true M the competing flows. *_pred compare the model's X4 and X8 with the measured ones; " +
			"best_n is the N with the highest whole-run throughput, agg_chosen_n the N the model fitted to whole-run throughput would choose (80% of C, at most 8). " +
			"auto_* is ParS --connections auto (samples after slow start) left to run for " + o.autoBudget.String() + ", autoseg_* the same with whole-segment samples.",
		Matrix:      experiment.Matrix{{Name: "condition", Values: names(conds)}},
		Repetitions: o.reps,
		Metrics: []string{"x1_kbps", "x2_kbps", "valid", "capacity_kbps", "capacity_true_kbps", "competing_flows", "competing_true",
			"x4_pred_kbps", "x4_kbps", "x8_pred_kbps", "x8_kbps",
			"agg_x1_kbps", "agg_x2_kbps", "agg_valid", "agg_capacity_kbps", "agg_competing_flows", "agg_x4_pred_kbps", "agg_x4_kbps", "agg_x8_pred_kbps", "agg_x8_kbps",
			"best_n", "agg_chosen_n", "auto_connections", "auto_capacity_kbps", "auto_competing_flows", "autoseg_connections", "autoseg_capacity_kbps", "autoseg_competing_flows",
			"competitors_kbps"},
	}
	cells := len(conds) * (len(o.conns)*len(variants) + 2*len(o.ariaN)) * o.reps
	done := 0
	for rep := 1; rep <= o.reps; rep++ {
		for _, c := range conds {
			if err := l.nw.SetLink("client", "server", c.profile(o.queue)); err != nil {
				return nil, nil, err
			}
			comp := (*competitors)(nil)
			if c.Competing > 0 {
				comp = l.startCompetitors(ctx, c.Competing)
				if err := sleepCtx(ctx, 3*time.Second); err != nil { // let them reach their share
					return nil, nil, err
				}
			}
			measured, whole := map[int]float64{}, map[int]float64{}
			for _, n := range o.conns {
				count := 0
				for _, v := range variants {
					if err := ctx.Err(); err != nil {
						return nil, nil, err
					}
					client, serial := v.name, v.serial
					traceFile := ""
					if o.parts["throughput"] && !serial {
						traceFile = filepath.Join(o.out, "pars-throughput", "traces", fmt.Sprintf("rep%d-%s-%s-n%d.csv", rep, c.Name, client, n))
					}
					cell := experiment.Cell{"condition": c.Name, "client": client, "connections": strconv.Itoa(n)}
					run := experiment.Run{Key: thr.Scenario.Key(cell), Cell: cell, Rep: rep}
					t0 := time.Now()
					m, s, k, err := parsCell(ctx, l, urls, nums, n, o.budget, float64(c.Rate), v, traceFile)
					run.Seconds = time.Since(t0).Seconds()
					if err != nil {
						run.Error = err.Error()
					} else {
						run.Metrics = m
						if client == "pars" {
							measured[n] = steadyRate(s, n)
							whole[n] = m["throughput_kbps"].(float64) * 1000
							count = k
						}
					}
					thr.Runs = append(thr.Runs, run)
					done++
					fmt.Fprintf(o.progress, "[%d/%d] rep %d %s %s N=%d: %v kbit/s delivered, %v completed (%.0f s) %s\n", done, cells, rep, c.Name, client, n, m["delivered_kbps"], m["completed_kbps"], run.Seconds, run.Error)
				}
				if !o.parts["throughput"] || !o.ariaN[n] {
					continue
				}

				cell := experiment.Cell{"condition": c.Name, "client": "aria2c", "connections": strconv.Itoa(n)}
				run := experiment.Run{Key: thr.Scenario.Key(cell), Cell: cell, Rep: rep}
				t0 := time.Now()
				am, err := ariaCell(ctx, l, urls, sizes, count, n, o.budget, float64(c.Rate))
				run.Seconds = time.Since(t0).Seconds()
				if err != nil {
					run.Error = err.Error()
				} else {
					run.Metrics = am
				}
				thr.Runs = append(thr.Runs, run)
				done++
				fmt.Fprintf(o.progress, "[%d/%d] rep %d %s aria2c -x %d: %v kbit/s delivered, %v completed (%.0f s) %s\n", done, cells, rep, c.Name, n, am["delivered_kbps"], am["completed_kbps"], run.Seconds, run.Error)

				// The ceiling: n long-lived TCP downloads (no requests, no segments) on the
				// same link, the same sender.
				cell = experiment.Cell{"condition": c.Name, "client": "tcp-bulk", "connections": strconv.Itoa(n)}
				run = experiment.Run{Key: thr.Scenario.Key(cell), Cell: cell, Rep: rep}
				t0 = time.Now()
				bulk := l.startCompetitors(ctx, n)
				arrived := sampleAt(bulk.start, o.budget, bulk.bytes.Load)
				if err := sleepCtx(ctx, o.budget); err != nil {
					bulk.stop()
					return nil, nil, err
				}
				d := arrived()
				whole := bulk.stop() // over the time to the flows' end, as before
				run.Seconds = time.Since(t0).Seconds()
				// No segments, no completions: the delivered figure is the only one.
				run.Metrics = d.metrics(float64(c.Rate))
				run.Metrics["throughput_kbps"] = round(whole/1000, 1)
				thr.Runs = append(thr.Runs, run)
				done++
				fmt.Fprintf(o.progress, "[%d/%d] rep %d %s tcp-bulk ×%d: %v kbit/s delivered\n", done, cells, rep, c.Name, n, run.Metrics["delivered_kbps"])
			}
			mm := modelMetrics(c, measured, whole, o.conns)
			if o.parts["model"] {
				for _, mode := range []string{"auto", "autoseg"} {
					ar, err := autoRun(ctx, l, urls, nums, o.autoBudget, mode == "autoseg")
					if err != nil {
						mm[mode+"_error"] = err.Error()
						continue
					}
					est := ar.est
					mm[mode+"_connections"] = est.Connections
					mm[mode+"_sequence"] = ar.ns
					mm[mode+"_decisions"] = decisionRows(ar.decisions)
					mm[mode+"_samples"] = sampleRows(ar.samples)
					mm[mode+"_note"] = est.Reason
					// The probes the decision came from: X1, X2 as the mode samples them, and
					// as whole-segment throughput (the "one connection fills the link" check).
					mm[mode+"_x1_kbps"], mm[mode+"_x2_kbps"] = round(est.X1/1000, 1), round(est.X2/1000, 1)
					mm[mode+"_whole_x1_kbps"], mm[mode+"_whole_x2_kbps"] = round(est.WholeX1/1000, 1), round(est.WholeX2/1000, 1)
					if est.Valid {
						mm[mode+"_capacity_kbps"] = round(est.Capacity/1000, 1)
						mm[mode+"_competing_flows"] = round(est.Competing, 2)
					}
				}
				fmt.Fprintf(o.progress, "      rep %d %s model: %v | whole-run: %v; auto: %v; autoseg: %v\n", rep, c.Name, mm["note"], mm["agg_note"], mm["auto_note"], mm["autoseg_note"])
			}
			if comp != nil {
				mm["competitors_kbps"] = round(comp.stop()/1000, 1)
			}
			cell := experiment.Cell{"condition": c.Name}
			model.Runs = append(model.Runs, experiment.Run{Key: model.Scenario.Key(cell), Cell: cell, Rep: rep, Metrics: mm})
			now := time.Now().UTC()
			thr.Finished, model.Finished = now, now
			if err := save(thr, model); err != nil {
				return nil, nil, err
			}
		}
	}
	now := time.Now().UTC()
	thr.Finished, model.Finished = now, now
	return thr, model, nil
}

// modelMetrics solves the model from the throughput measured with 1 and 2
// connections, after slow start (x) and whole-run (agg), and compares each with the
// truth and with N = 4 and 8.
func modelMetrics(c condition, x, agg map[int]float64, conns []int) map[string]any {
	m := map[string]any{"capacity_true_kbps": round(goodput(float64(c.Rate))/1000, 1), "competing_true": c.Competing}
	best := 0
	for _, n := range conns {
		if best == 0 || agg[n] > agg[best] {
			best = n
		}
	}
	m["best_n"] = best
	for prefix, x := range map[string]map[int]float64{"": x, "agg_": agg} {
		m[prefix+"x1_kbps"], m[prefix+"x2_kbps"] = round(x[1]/1000, 1), round(x[2]/1000, 1)
		m[prefix+"x4_kbps"], m[prefix+"x8_kbps"] = round(x[4]/1000, 1), round(x[8]/1000, 1)
		cap, comp, err := pars.Solve(x[1], x[2])
		if err != nil {
			m[prefix+"valid"] = 0
			m[prefix+"note"] = err.Error()
			continue
		}
		m[prefix+"valid"] = 1
		m[prefix+"capacity_kbps"] = round(cap/1000, 1)
		m[prefix+"competing_flows"] = round(comp, 2)
		m[prefix+"x4_pred_kbps"] = round(pars.Throughput(4, cap, comp)/1000, 1)
		m[prefix+"x8_pred_kbps"] = round(pars.Throughput(8, cap, comp)/1000, 1)
		m[prefix+"chosen_n"] = pars.Choose(comp, 0.8, 8)
		m[prefix+"note"] = fmt.Sprintf("C %.0f kbit/s (true %.0f), M %.2f (true %d)", cap/1000, goodput(float64(c.Rate))/1000, comp, c.Competing)
	}
	return m
}

// segmentSizes times the download of single segments from scratch (new connections
// each time, as at start-up or after a pause) against their size.
func segmentSizes(ctx context.Context, l *lab, o options, r *experiment.Results) (*experiment.Results, error) {
	durs := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	var dv []string
	for _, d := range durs {
		dv = append(dv, d.String())
	}
	r.Scenario = &experiment.Scenario{
		Name:  "pars-segsize",
		Title: "ParS — segment download time against segment size, with aria2c",
		Description: "On the default link (10 Mbit/s, 50 ms, 1% loss), segments 2–4 of the 720p 3 Mbit/s rendition packaged with 1, 2, 4 and 8 s segments " +
			"are each downloaded from scratch (new connections; aria2c: one process per segment, " + ariaArgs(0)[0] + " -x N -s N -k 1M). " +
			"download_ms is the mean time per segment, segment_kb its mean size.",
		Matrix:      experiment.Matrix{{Name: "client", Values: []string{"pars", "aria2c"}}, {Name: "segment_duration", Values: dv}, {Name: "connections", Values: itoas(connections)}},
		Repetitions: o.reps,
		Metrics:     []string{"download_ms", "segment_kb", "throughput_kbps"},
		Plot:        experiment.Plot{X: "segment_duration", Series: "connections"},
	}
	if err := l.nw.SetLink("client", "server", defaultCond.profile(o.queue)); err != nil {
		return nil, err
	}
	for rep := 1; rep <= o.reps; rep++ {
		for _, d := range durs {
			urls, sizes, _, err := l.segmentURLs(d)
			if err != nil {
				return nil, err
			}
			pick := []int{1, 2, 3}
			for _, n := range connections {
				for _, client := range []string{"pars", "aria2c"} {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					cell := experiment.Cell{"client": client, "segment_duration": d.String(), "connections": strconv.Itoa(n)}
					run := experiment.Run{Key: r.Scenario.Key(cell), Cell: cell, Rep: rep}
					var total time.Duration
					var bytes int64
					t0 := time.Now()
					for _, i := range pick {
						i = min(i, len(urls)-1)
						var el time.Duration
						if client == "pars" {
							c, err := pars.New(pars.Options{Connections: n, ConnOptions: pars.ConnOptions{DialContext: l.dial}})
							if err != nil {
								return nil, err
							}
							resp, ferr := c.FetchURL(ctx, urls[i], n)
							c.Close()
							if ferr != nil {
								run.Error = ferr.Error()
								break
							}
							el = resp.Duration()
						} else {
							ar, aerr := l.runAria(ctx, urls[i:i+1], sizes[i:i+1], n, 0)
							if aerr != nil {
								run.Error = aerr.Error()
								break
							}
							el = ar.Elapsed
						}
						total += el
						bytes += sizes[i]
					}
					run.Seconds = time.Since(t0).Seconds()
					if run.Error == "" {
						k := float64(len(pick))
						run.Metrics = map[string]any{
							"download_ms":     round(total.Seconds()*1000/k, 1),
							"segment_kb":      round(float64(bytes)/1000/k, 1),
							"throughput_kbps": round(float64(bytes)*8/total.Seconds()/1000, 1),
						}
					}
					r.Runs = append(r.Runs, run)
					fmt.Fprintf(o.progress, "segsize rep %d %s %s N=%d: %v ms %s\n", rep, client, d, n, run.Metrics["download_ms"], run.Error)
				}
			}
		}
	}
	r.Finished = time.Now().UTC()
	return r, nil
}

// startup plays the 2 s asset (and the small one) with the player over ParS
// (pipelined and, with -serial, one segment at a time) and over Parallel and records
// the start-up delay (manifest, init segments and the first segment of video and audio).
func startup(ctx context.Context, l *lab, o options, r *experiment.Results) (*experiment.Results, error) {
	type content struct {
		name string
		a    *hub.Asset
	}
	contents := []content{{"720p-2s", l.assets[2*time.Second]}}
	if a := l.named[smallContent]; a != nil {
		contents = append(contents, content{smallContent, a})
	}
	var cnames []string
	for _, c := range contents {
		cnames = append(cnames, c.name)
	}
	var modes []string
	streams := map[string]parsVariant{}
	for _, v := range parsVariants(o) {
		modes = append(modes, v.name)
		streams[v.name] = v
	}
	modes = append(modes, "parallel")
	r.Scenario = &experiment.Scenario{
		Name:  "pars-startup",
		Title: "ParS against Parallel — time to start playback",
		Description: "The headless player plays an asset (720p-2s: 720p 3 Mbit/s in 2 s segments, about 760 kB each; 360p-1s: 360p 800 kbit/s in 1 s segments, about 100 kB; " +
			"each with 128k audio, fixed rendition) on the default link (10 Mbit/s, 50 ms, 1% loss) " +
			"for 5 s with fresh connections: ParS fetches each segment as N ranges over N connections (pars pipelined, pars-h2xS with S requests per connection over h2c, pars-serial one segment at a time); Parallel fetches N different segments at once " +
			"(the requested one and the next N−1). startup_delay_ms runs from before the manifest request to playback start (one segment of video and audio buffered).",
		Matrix:      experiment.Matrix{{Name: "content", Values: cnames}, {Name: "mode", Values: modes}, {Name: "connections", Values: itoas(o.startupN)}},
		Repetitions: o.reps + 1,
		Metrics:     []string{"startup_delay_ms", "throughput_kbps"},
		Plot:        experiment.Plot{X: "connections", Series: "mode"},
	}
	if err := l.nw.SetLink("client", "server", defaultCond.profile(o.queue)); err != nil {
		return nil, err
	}
	for rep := 1; rep <= r.Scenario.Repetitions; rep++ {
		for _, ct := range contents {
			a := ct.a.Descriptor()
			url := fmt.Sprintf("%s/vod/%s/manifest.mpd", l.base, ct.a.Info().Name)
			for _, n := range o.startupN {
				for _, mode := range modes {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					cell := experiment.Cell{"content": ct.name, "mode": mode, "connections": strconv.Itoa(n)}
					run := experiment.Run{Key: r.Scenario.Key(cell), Cell: cell, Rep: rep}
					var f player.Fetcher
					var closeF func() error
					if mode == "parallel" {
						p, err := pars.NewParallel(n, pars.ConnOptions{DialContext: l.dial})
						if err != nil {
							return nil, err
						}
						f, closeF = p, p.Close
					} else {
						c, err := pars.New(pars.Options{Connections: n, NoPipeline: mode == "pars-serial", RangesPerConnection: streams[mode].ranges, ConnOptions: laneOptions(l, streams[mode].streams, streams[mode].proto)})
						if err != nil {
							return nil, err
						}
						f, closeF = c, c.Close
					}
					p, err := player.New(player.Config{URL: url, Fetcher: f, Load: dash.Load, ABR: abr.Fixed{TrackID: a.Tracks[0].ID},
						Duration: 5 * time.Second, RequestTimeout: 30 * time.Second, Transport: mode})
					if err != nil {
						return nil, err
					}
					t0 := time.Now()
					rep2, err := p.Run(ctx)
					closeF()
					run.Seconds = time.Since(t0).Seconds()
					if err != nil || rep2.StartupDelayMS == nil {
						run.Error = fmt.Sprintf("no start-up: %v", err)
					} else {
						run.Metrics = map[string]any{"startup_delay_ms": *rep2.StartupDelayMS, "throughput_kbps": rep2.ThroughputKbps}
					}
					r.Runs = append(r.Runs, run)
					fmt.Fprintf(o.progress, "startup rep %d %s %s N=%d: %v ms %s\n", rep, ct.name, mode, n, run.Metrics["startup_delay_ms"], run.Error)
				}
			}
		}
	}
	r.Finished = time.Now().UTC()
	return r, nil
}
