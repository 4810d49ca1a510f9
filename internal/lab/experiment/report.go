package experiment

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
)

// Write saves results.json, results.csv and report.html in dir, each atomically.
func (r *Results) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return err
	}
	var csvBuf bytes.Buffer
	if err := r.writeCSV(&csvBuf); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "results.csv"), csvBuf.Bytes(), 0o644); err != nil {
		return err
	}
	html, err := r.HTML()
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, "report.html"), html, 0o644)
}

// writeCSV writes one row per run: parameters, repetition, metrics, error.
func (r *Results) writeCSV(buf *bytes.Buffer) error {
	w := csv.NewWriter(buf)
	head := []string{}
	for _, p := range r.Scenario.Matrix {
		head = append(head, p.Name)
	}
	head = append(head, "rep")
	head = append(head, r.Scenario.Metrics...)
	head = append(head, "error")
	if err := w.Write(head); err != nil {
		return err
	}
	for _, run := range r.Runs {
		row := []string{}
		for _, p := range r.Scenario.Matrix {
			row = append(row, run.Cell[p.Name])
		}
		row = append(row, strconv.Itoa(run.Rep))
		for _, m := range r.Scenario.Metrics {
			if f, ok := number(run.Metrics[m]); ok {
				row = append(row, strconv.FormatFloat(f, 'f', -1, 64))
			} else {
				row = append(row, "")
			}
		}
		if run.Skipped != "" {
			row = append(row, run.Skipped)
		} else {
			row = append(row, run.Error)
		}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// axisValue reads a parameter value as a number for the x axis: durations in ms,
// plain numbers as they are; ok is false for categorical values.
func axisValue(v string) (float64, bool) {
	if d, err := time.ParseDuration(v); err == nil {
		return float64(d) / float64(time.Millisecond), true
	}
	if f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64); err == nil {
		return f, true
	}
	return 0, false
}

type tableRow struct {
	Key       string
	S         Summary
	Published string
	Ratio     string
}

type metricSection struct {
	Metric string
	Rows   []tableRow
	Charts []template.HTML
}

type timeSeries struct {
	Key   string
	Chart template.HTML
}

// HTML renders the self-contained report.
func (r *Results) HTML() ([]byte, error) {
	sums := r.CellSummaries()
	s := r.Scenario
	cells := s.Cells()
	var sections []metricSection
	for _, m := range s.Metrics {
		sec := metricSection{Metric: m}
		for _, c := range cells {
			key := s.Key(c)
			sum, ok := sums[key][m]
			if !ok {
				continue
			}
			row := tableRow{Key: key, S: sum}
			if p, ok := r.published(m, c); ok {
				row.Published = fmt.Sprintf("%s (%s)", fmtNum(p.Value), p.Source)
				if p.Value != 0 && sum.N > 0 {
					row.Ratio = fmt.Sprintf("%.2f", sum.Median/p.Value)
				}
			}
			sec.Rows = append(sec.Rows, row)
		}
		sec.Charts = r.charts(m, sums)
		sections = append(sections, sec)
	}
	ok, failed := 0, 0
	var failures, skipped []Run
	seenSkip := map[string]bool{}
	for _, run := range r.Runs {
		if run.Skipped != "" {
			if !seenSkip[run.Key] {
				seenSkip[run.Key] = true
				skipped = append(skipped, run)
			}
			continue
		}
		if run.Error == "" {
			ok++
		} else {
			failed++
			failures = append(failures, run)
		}
	}
	var buf bytes.Buffer
	err := reportTmpl.Execute(&buf, map[string]any{
		"R": r, "S": s, "Sections": sections, "OK": ok, "Failed": failed, "Failures": failures, "Skipped": skipped,
		"Series": r.timeSeries(), "Duration": r.Finished.Sub(r.Started).Round(time.Second),
	})
	return buf.Bytes(), err
}

// published finds the published figure for metric m in cell c.
func (r *Results) published(m string, c Cell) (Published, bool) {
	for _, p := range r.Scenario.Published {
		if p.Metric != m {
			continue
		}
		match := true
		for k, v := range p.Where {
			if c[k] != v {
				match = false
			}
		}
		if match {
			return p, true
		}
	}
	return Published{}, false
}

// charts draws metric m against plot.x, one line per plot.series value, one chart per
// combination of the other parameters.
func (r *Results) charts(m string, sums map[string]map[string]Summary) []template.HTML {
	s := r.Scenario
	if s.Plot.X == "" {
		return nil
	}
	groups := map[string][]Cell{}
	var order []string
	for _, c := range s.Cells() {
		var rest []string
		for _, p := range s.Matrix {
			if p.Name != s.Plot.X && p.Name != s.Plot.Series {
				rest = append(rest, p.Name+"="+c[p.Name])
			}
		}
		g := strings.Join(rest, " ")
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], c)
	}
	var out []template.HTML
	for _, g := range order {
		bySeries := map[string]*Series{}
		pub := &Series{Name: "published", Hollow: true}
		var names []string
		for i, c := range groups[g] {
			name := c[s.Plot.Series]
			if name == "" {
				name = m
			}
			sum, ok := sums[s.Key(c)][m]
			if !ok || sum.N == 0 {
				continue
			}
			x, numeric := axisValue(c[s.Plot.X])
			if !numeric {
				x = float64(i)
			}
			if bySeries[name] == nil {
				bySeries[name] = &Series{Name: name}
				names = append(names, name)
			}
			bySeries[name].Points = append(bySeries[name].Points, Point{X: x, Y: sum.Median, Lo: sum.Min, Hi: sum.Max, Label: c[s.Plot.X]})
			if p, ok := r.published(m, c); ok {
				pub.Name = "published (" + name + ")"
				pub.Points = append(pub.Points, Point{X: x, Y: p.Value, Label: c[s.Plot.X]})
			}
		}
		var series []Series
		for _, n := range names {
			sort.Slice(bySeries[n].Points, func(i, j int) bool { return bySeries[n].Points[i].X < bySeries[n].Points[j].X })
			series = append(series, *bySeries[n])
		}
		if len(pub.Points) > 0 {
			series = append(series, *pub)
		}
		title := m
		if g != "" {
			title += " — " + g
		}
		out = append(out, lineChart(title, s.Plot.X, m+" (median, min–max)", series))
	}
	return out
}

// timeSeries draws buffer level and bitrate over time for the first repetition of
// each cell, when the player reported samples.
func (r *Results) timeSeries() []timeSeries {
	var out []timeSeries
	seen := map[string]bool{}
	for _, run := range r.Runs {
		if seen[run.Key] || run.Error != "" {
			continue
		}
		samples, _ := run.Metrics["samples"].([]any)
		if len(samples) == 0 {
			continue
		}
		seen[run.Key] = true
		buf := Series{Name: "buffer (s)"}
		rate := Series{Name: "bitrate (Mbit/s)"}
		for _, x := range samples {
			smp, _ := x.(map[string]any)
			t, ok1 := number(firstOf(smp, "t", "t_s"))
			b, ok2 := number(firstOf(smp, "buffer_s"))
			k, ok3 := number(firstOf(smp, "bitrate_kbps"))
			if ok1 && ok2 {
				buf.Points = append(buf.Points, Point{X: t, Y: b})
			}
			if ok1 && ok3 {
				rate.Points = append(rate.Points, Point{X: t, Y: k / 1000})
			}
		}
		out = append(out, timeSeries{Key: run.Key, Chart: lineChart(run.Key, "time (s)", "", []Series{buf, rate})})
	}
	return out
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"num": fmtNum,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.S.Title}} — Streambed lab</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,-apple-system,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}th,td{padding:.25rem .6rem;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}.meta{color:#555;font-size:.9rem}
.charts{display:flex;flex-wrap:wrap;gap:1rem}.err{color:#a00;font-family:monospace;font-size:.8rem;white-space:pre-wrap}
code{background:#f3f3f3;padding:0 .2rem}
</style></head><body>
<h1>{{.S.Title}}</h1>
<p class="meta">Scenario <code>{{.S.Name}}</code>{{if .S.Reference}} · reproduces {{.S.Reference}}{{end}}<br>
{{.R.Started.Format "2006-01-02 15:04 UTC"}} · {{.Duration}} · {{.OK}} runs ok, {{.Failed}} failed{{if .Skipped}}, {{len .Skipped}} cell(s) not played{{end}} ·{{if .S.Play.Client}} client <code>{{.S.Play.Client}}</code> ·{{end}} netem backend <code>{{.R.Backend}}</code> · host {{.R.Host}}<br>
Command: <code>{{.R.Command}}</code></p>
{{if .S.Description}}<p>{{.S.Description}}</p>{{end}}
<p class="meta">Each cell ran {{.S.Repetitions}} time(s). Tables give the median, mean ± standard deviation and min–max; plots show medians with min–max whiskers. Published figures, where the scenario lists them, appear beside ours with the ratio ours ÷ published.</p>
{{range .Sections}}
<h2>{{.Metric}}</h2>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
<table><tr><th>cell</th><th>n</th><th>median</th><th>mean ± sd</th><th>min–max</th><th>published</th><th>ours ÷ published</th></tr>
{{range .Rows}}<tr><td>{{.Key}}</td><td>{{.S.N}}{{if .S.Failed}} ({{.S.Failed}} failed){{end}}</td><td>{{num .S.Median}}</td><td>{{num .S.Mean}} ± {{num .S.Stddev}}</td><td>{{num .S.Min}}–{{num .S.Max}}</td><td>{{.Published}}</td><td>{{.Ratio}}</td></tr>
{{end}}</table>
{{end}}
{{if .Series}}<h2>Buffer and bitrate over time (first repetition of each cell)</h2>
<div class="charts">{{range .Series}}{{.Chart}}{{end}}</div>{{end}}
{{if .Skipped}}<h2>Not played</h2>
<table><tr><th>cell</th><th>why</th></tr>
{{range .Skipped}}<tr><td>{{.Key}}</td><td style="text-align:left">{{.Skipped}}</td></tr>
{{end}}</table>{{end}}
{{if .Failures}}<h2>Failed runs</h2>
{{range .Failures}}<p><b>{{.Key}}</b> rep {{.Rep}}</p><div class="err">{{.Error}}</div>{{end}}{{end}}
</body></html>
`))

// LoadResults reads a results.json written by Write.
func LoadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Scenario == nil {
		return nil, fmt.Errorf("%s: no scenario in results", path)
	}
	return &r, nil
}
