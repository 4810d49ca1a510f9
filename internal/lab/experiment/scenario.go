// Package experiment runs lab scenarios: it prepares content, builds an emulated
// network, starts the origin in the server host and players in the client host for
// every cell of a parameter matrix, and writes the figures (JSON, CSV) and a
// self-contained HTML report with plots, beside any published figures to compare.
package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Scenario is one experiment file (experiments/*.yaml).
type Scenario struct {
	Name        string `yaml:"name"`  // file-safe identifier, used for the output folder
	Title       string `yaml:"title"` // shown in the report
	Description string `yaml:"description"`
	Reference   string `yaml:"reference"` // the publication being reproduced

	Content Content `yaml:"content"`
	// Network is the base link profile (netem profile YAML: rate, delay, loss, …);
	// matrix parameters override it per cell.
	Network yaml.Node `yaml:"network" json:"-"`
	// Matrix lists the parameters to vary, in order; every combination is a cell.
	Matrix      Matrix `yaml:"matrix"`
	Repetitions int    `yaml:"repetitions"`
	Play        Play   `yaml:"play"`
	// Origin holds more `streambed serve` flags for the scenario's one origin (an
	// origin setting under test, e.g. --tcp-rto-min 50ms).
	Origin Origin `yaml:"origin"`
	// Metrics are the player's JSON keys to tabulate and plot, in order.
	Metrics []string `yaml:"metrics"`
	// Plot says which parameter is the x axis and which one separates the series.
	Plot      Plot        `yaml:"plot"`
	Published []Published `yaml:"published"`
}

// Content describes what to package for the experiment.
type Content struct {
	Synthetic       string   `yaml:"synthetic"`        // duration of a synthetic clip, e.g. "91s"
	Input           string   `yaml:"input"`            // or a media file (relative to the scenario)
	SegmentDuration Duration `yaml:"segment_duration"` // unless the matrix varies segment_duration
	Ladder          string   `yaml:"ladder"`           // e.g. "360p:400k,540p:800k,720p:1500k"
	AudioBitrate    string   `yaml:"audio_bitrate"`    // e.g. "128k"
	Preset          string   `yaml:"preset"`           // x264 preset
	// KeepDuration packages the full duration instead of a loopable one (on-demand
	// experiments whose content length matters); live play needs loopable content.
	KeepDuration bool `yaml:"keep_duration"`
}

// Play sets how each player runs.
type Play struct {
	Duration Duration `yaml:"duration"` // how long to play; 0: the whole asset (VOD)
	Live     bool     `yaml:"live"`     // play the looped live channel instead of the asset
	// Chunk cuts the live channel's segments into chunks of this duration (low-latency
	// DASH on its $Number$ MPD, push chunk by chunk); 0: one chunk per segment.
	Chunk Duration `yaml:"chunk"`
	ABR   string   `yaml:"abr"`  // throughput, bba, bola, fixed:TRACK
	Args  []string `yaml:"args"` // more `streambed play` flags
	// Client is what plays: headless (`streambed play`, the default) or browser
	// (headless Chromium with the player page: dash.js, hls.js or WebSocket push, by
	// transport — BrowserCanPlay). A browser uses its player's own ABR; abr and args
	// are the headless player's.
	Client string `yaml:"client"`
	// PageQuery adds query parameters to the player page's URL (browser clients), e.g.
	// "hlsdebug=abr" for hls.js's rendition decisions in the run's page_events.
	PageQuery string `yaml:"page_query"`
	// Timeout bounds one run (default: duration + 2 min).
	Timeout Duration `yaml:"timeout"`
}

// Origin sets how the origin runs.
type Origin struct {
	Args []string `yaml:"args"` // more `streambed serve` flags
}

// Plot picks the axes of the metric plots.
type Plot struct {
	X      string `yaml:"x"`      // a matrix parameter with numeric values (e.g. rtt)
	Series string `yaml:"series"` // a matrix parameter, one line per value (e.g. transport)
}

// Published is a figure from the reproduced publication, shown beside ours.
type Published struct {
	Metric string            `yaml:"metric"`
	Where  map[string]string `yaml:"where"` // matrix parameter → value of the cell it belongs to
	Value  float64           `yaml:"value"`
	Source string            `yaml:"source"` // table or figure
	Note   string            `yaml:"note"`
}

// Param is one matrix dimension.
type Param struct {
	Name   string
	Values []string
}

// Matrix keeps the parameters in file order.
type Matrix []Param

// UnmarshalYAML reads a mapping of parameter → list of values, keeping the order.
func (m *Matrix) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: matrix must map parameter names to lists of values", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		var vals []string
		if err := n.Content[i+1].Decode(&vals); err != nil {
			return fmt.Errorf("line %d: matrix %q: %w", n.Content[i+1].Line, n.Content[i].Value, err)
		}
		*m = append(*m, Param{Name: n.Content[i].Value, Values: vals})
	}
	return nil
}

// Duration is a time.Duration written as "2s", "100ms".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 2s, 100ms)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Known matrix parameters and what they change.
var knownParams = map[string]string{
	"transport":        "the player's --transport (http1, h2, h2c, …)",
	"segment_duration": "the content's segment duration (packaged once per value)",
	"rtt":              "round-trip time: one-way delay rtt/2 in each direction",
	"delay":            "one-way delay in each direction",
	"jitter":           "delay jitter in each direction",
	"loss":             "random loss in percent, each direction",
	"rate":             "link rate in each direction (e.g. 2mbit)",
	"abr":              "the player's ABR rule",
	"connections":      "the player's --connections (pars: N or auto; parallel: N)",
	"page_query":       "more query parameters of the player page (browser clients; added to play.page_query)",
}

// LoadScenario reads and checks a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Content.Input != "" && !filepath.IsAbs(s.Content.Input) {
		s.Content.Input = filepath.Join(filepath.Dir(path), s.Content.Input)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Validate checks the scenario for mistakes a person can fix.
func (s *Scenario) Validate() error {
	if s.Name == "" || strings.ContainsAny(s.Name, "/\\ ") {
		return fmt.Errorf("name %q: give a file-safe name (letters, digits, -)", s.Name)
	}
	if (s.Content.Synthetic == "") == (s.Content.Input == "") {
		return fmt.Errorf("content: set exactly one of synthetic (a duration) or input (a file)")
	}
	if s.Repetitions <= 0 {
		s.Repetitions = 1
	}
	seen := map[string]bool{}
	for _, p := range s.Matrix {
		if _, ok := knownParams[p.Name]; !ok {
			var names []string
			for k := range knownParams {
				names = append(names, k)
			}
			sort.Strings(names)
			return fmt.Errorf("matrix: unknown parameter %q (known: %s)", p.Name, strings.Join(names, ", "))
		}
		if seen[p.Name] || len(p.Values) == 0 {
			return fmt.Errorf("matrix: %q is repeated or has no values", p.Name)
		}
		seen[p.Name] = true
	}
	switch s.Play.Client {
	case "", ClientHeadless, ClientBrowser:
	default:
		return fmt.Errorf("play.client %q: want %s or %s", s.Play.Client, ClientHeadless, ClientBrowser)
	}
	if s.Play.Client == ClientBrowser && (s.Play.ABR != "" || len(s.Play.Args) > 0 || seen["abr"] || seen["connections"]) {
		return fmt.Errorf("play.client browser: abr, connections and args are the headless player's; the browser's players choose renditions themselves")
	}
	if seen["page_query"] && s.Play.Client != ClientBrowser {
		return fmt.Errorf("matrix: page_query is the player page's (play.client: browser)")
	}
	if s.Content.KeepDuration && s.Play.Live {
		return fmt.Errorf("content.keep_duration cannot be combined with play.live: a live channel loops its content")
	}
	if !seen["segment_duration"] && s.Content.SegmentDuration == 0 {
		s.Content.SegmentDuration = Duration(2 * time.Second)
	}
	if s.Plot.X != "" && !seen[s.Plot.X] {
		return fmt.Errorf("plot.x %q is not a matrix parameter", s.Plot.X)
	}
	if s.Plot.Series != "" && !seen[s.Plot.Series] {
		return fmt.Errorf("plot.series %q is not a matrix parameter", s.Plot.Series)
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []string{"startup_delay_ms", "stall_count", "avg_bitrate_kbps", "requests"}
	}
	for _, p := range s.Published {
		for k := range p.Where {
			if !seen[k] {
				return fmt.Errorf("published %s: where %q is not a matrix parameter", p.Metric, k)
			}
		}
	}
	return nil
}

// Cell is one combination of matrix values.
type Cell map[string]string

// Key names the cell stably, in matrix order: "transport=h2 rtt=100ms".
func (s *Scenario) Key(c Cell) string {
	parts := make([]string, 0, len(s.Matrix))
	for _, p := range s.Matrix {
		parts = append(parts, p.Name+"="+c[p.Name])
	}
	return strings.Join(parts, " ")
}

// Cells enumerates the matrix, the last parameter varying fastest.
func (s *Scenario) Cells() []Cell {
	cells := []Cell{{}}
	for _, p := range s.Matrix {
		var next []Cell
		for _, c := range cells {
			for _, v := range p.Values {
				n := Cell{}
				for k, x := range c {
					n[k] = x
				}
				n[p.Name] = v
				next = append(next, n)
			}
		}
		cells = next
	}
	return cells
}

// SegmentDurations lists the content variants to package.
func (s *Scenario) SegmentDurations() ([]time.Duration, error) {
	for _, p := range s.Matrix {
		if p.Name == "segment_duration" {
			var out []time.Duration
			for _, v := range p.Values {
				d, err := time.ParseDuration(v)
				if err != nil {
					return nil, fmt.Errorf("segment_duration %q: %w", v, err)
				}
				out = append(out, d)
			}
			return out, nil
		}
	}
	return []time.Duration{s.Content.SegmentDuration.D()}, nil
}
