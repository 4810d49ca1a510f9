package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/lab/experiment"
)

// Published is the request mix of the live load tests this generator reproduces:
// about 3% MPD requests and 48.5% each of audio and video segments.
var Published = map[Kind]float64{KindManifest: 0.03, KindAudio: 0.485, KindVideo: 0.485}

// Write saves report.json and report.html in dir, each atomically.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.Marshal(r) // compact: interval histograms make an indented file several times larger
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	html, err := r.HTML()
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, "report.html"), html, 0o644)
}

type kindRow struct {
	Kind                Kind
	Requests, Errors    uint64
	Share, NoInit       string
	Published           string
	MB                  string
	P50, P90, P99, P999 string
	Mean, Max           string
}

// HTML renders the self-contained report: headline figures, a table per kind and
// plots over time (the lab's own SVG charts).
func (r *Report) HTML() ([]byte, error) {
	t := r.Totals()
	var rows []kindRow
	for _, k := range Kinds {
		kr := r.Kinds[k]
		row := kindRow{Kind: k, Requests: kr.Requests, Errors: kr.Errors, Share: pct(t.Share[k]), NoInit: pct(t.ShareNoInit[k]),
			MB: fmt.Sprintf("%.1f", float64(kr.Bytes)/1e6)}
		if p, ok := Published[k]; ok {
			row.Published = pct(p)
		}
		ps := t.Percentiles[k]
		row.P50, row.P90, row.P99, row.P999 = msStr(ps[0]), msStr(ps[1]), msStr(ps[2]), msStr(ps[3])
		row.Mean, row.Max = msStr(ms(kr.Latency.Mean())), msStr(ms(kr.Latency.Max()))
		rows = append(rows, row)
	}
	var errs []string
	for _, k := range r.errorKeys() {
		errs = append(errs, fmt.Sprintf("%s × %d", k, r.Errors[k]))
	}
	var buf bytes.Buffer
	err := reportTmpl.Execute(&buf, map[string]any{
		"R": r, "T": t, "Rows": rows, "Errors": errs, "Charts": r.charts(),
		"Mbps": fmt.Sprintf("%.2f", t.ThroughputBps/1e6), "RPS": fmt.Sprintf("%.1f", t.RequestsPerS),
	})
	return buf.Bytes(), err
}

func pct(v float64) string   { return fmt.Sprintf("%.1f%%", 100*v) }
func msStr(v float64) string { return fmt.Sprintf("%.2f", v) }

// maxPoints bounds a chart's points: longer runs are plotted in groups of intervals.
const maxPoints = 40

// charts plots the intervals: requests per second per kind, throughput, sessions,
// response time (p50 and p99 of all requests) and errors. Runs longer than
// maxPoints intervals are plotted in groups of g intervals (rates averaged over the
// group, percentiles from the group's merged histogram).
func (r *Report) charts() []template.HTML {
	n := len(r.Intervals)
	if n == 0 {
		return nil
	}
	g := (n + maxPoints - 1) / maxPoints
	var groups []*Interval
	for i := 0; i < n; i += g {
		sum := newInterval()
		for _, iv := range r.Intervals[i:min(i+g, n)] {
			for k, c := range iv.Requests {
				sum.Requests[k] += c
			}
			sum.Errors += iv.Errors
			sum.Bytes += iv.Bytes
			sum.Busy = iv.Busy // at the group's end
			sum.Latency.Merge(iv.Latency)
		}
		groups = append(groups, sum)
	}
	span := r.IntervalS * float64(g)
	x := func(i int) float64 { return float64(i) * span }
	var reqs []experiment.Series
	for _, k := range Kinds {
		s := experiment.Series{Name: string(k)}
		for i, iv := range groups {
			s.Points = append(s.Points, experiment.Point{X: x(i), Y: float64(iv.Requests[k]) / span})
		}
		reqs = append(reqs, s)
	}
	thr := experiment.Series{Name: "received"}
	busy := experiment.Series{Name: "sessions"}
	errs := experiment.Series{Name: "errors"}
	p50 := experiment.Series{Name: "p50"}
	p99 := experiment.Series{Name: "p99"}
	for i, iv := range groups {
		thr.Points = append(thr.Points, experiment.Point{X: x(i), Y: float64(iv.Bytes) * 8 / span / 1e6})
		busy.Points = append(busy.Points, experiment.Point{X: x(i), Y: float64(iv.Busy)})
		errs.Points = append(errs.Points, experiment.Point{X: x(i), Y: float64(iv.Errors) / span})
		if iv.Latency.Count() > 0 {
			p50.Points = append(p50.Points, experiment.Point{X: x(i), Y: ms(iv.Latency.Quantile(0.5))})
			p99.Points = append(p99.Points, experiment.Point{X: x(i), Y: ms(iv.Latency.Quantile(0.99))})
		}
	}
	xl := fmt.Sprintf("s (points every %g s)", span)
	return []template.HTML{
		experiment.LineChart("Requests per second", xl, "req/s", reqs),
		experiment.LineChart("Throughput (response bodies)", xl, "Mbit/s", []experiment.Series{thr}),
		experiment.LineChart("Sessions running", xl, "sessions", []experiment.Series{busy}),
		experiment.LineChart("Response time, all requests", xl, "ms", []experiment.Series{p50, p99}),
		experiment.LineChart("Errors per second", xl, "errors/s", []experiment.Series{errs}),
	}
}

var reportTmpl = template.Must(template.New("load").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Load {{.R.Mode}} — Streambed</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,-apple-system,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}th,td{padding:.25rem .6rem;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}.meta{color:#555;font-size:.9rem}
.charts{display:flex;flex-wrap:wrap;gap:1rem}code{background:#f3f3f3;padding:0 .2rem}
</style></head><body>
<h1>Workload generator: {{.R.Mode}}</h1>
<p class="meta"><code>{{.R.URL}}</code><br>
{{.R.Started.UTC.Format "2006-01-02 15:04:05 UTC"}} · {{printf "%.1f" .T.Seconds}} s · hosts {{range $i, $h := .R.Hosts}}{{if $i}}, {{end}}{{$h}}{{end}}</p>
<p><b>{{.RPS}}</b> requests/s · <b>{{.Mbps}}</b> Mbit/s received · {{.T.Requests}} requests · {{.T.Errors}} errors ·
sessions: {{.R.Sessions.Planned}} planned, {{.R.Sessions.Started}} started, {{.R.Sessions.Skipped}} skipped (all workers busy), {{.R.Sessions.Failed}} failed, peak {{.R.Sessions.PeakBusy}} at once{{if .R.Sessions.Switches}}, {{.R.Sessions.Switches}} rendition switches{{end}}{{if .R.Sessions.Jumps}}, {{.R.Sessions.Jumps}} jumps back to the live edge (a worker fell behind){{end}}{{if .R.Sessions.TimeShifted}}, {{.R.Sessions.TimeShifted}} time-shifted (played behind the live edge){{end}}</p>
<h2>Requests by kind</h2>
<p class="meta">Response time is from sending the request to the last byte of the body, in ms, from log-bucket histograms kept to 1/128 of each value (quantiles within 0.4%). The published request mix is that of the live load tests this generator reproduces (manifest, audio and video requests; init segments, two per session, are not part of it: compare the share without init).</p>
<table><tr><th>kind</th><th>requests</th><th>share</th><th>share without init</th><th>published</th><th>errors</th><th>MB</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>mean</th><th>max</th></tr>
{{range .Rows}}<tr><td>{{.Kind}}</td><td>{{.Requests}}</td><td>{{.Share}}</td><td>{{if ne .Kind "init"}}{{.NoInit}}{{end}}</td><td>{{.Published}}</td><td>{{.Errors}}</td><td>{{.MB}}</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P99}}</td><td>{{.P999}}</td><td>{{.Mean}}</td><td>{{.Max}}</td></tr>
{{end}}</table>
{{if .Errors}}<h2>Errors by status</h2><ul>{{range .Errors}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<h2>Over time ({{.R.IntervalS}} s intervals)</h2>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
<h2>Settings</h2>
<table><tr><th>host</th><th>mode</th><th>workers</th><th>ramp s</th><th>arrivals/s</th><th>session mean s</th><th>duration s</th><th>manifest every s</th><th>abr</th></tr>
{{range .R.Settings}}<tr><td>{{.Host}}</td><td>{{.Mode}}</td><td>{{.Workers}}</td><td>{{.RampS}}</td><td>{{.Rate}}</td><td>{{.SessionS}} {{.SessionDist}}</td><td>{{.DurationS}}</td><td>{{.MPDEveryS}}</td><td>{{.ABR}}</td></tr>
{{end}}</table>
</body></html>
`))
