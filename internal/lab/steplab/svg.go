package steplab

import (
	"fmt"
	"math"
	"strings"

	"github.com/streambed/streambed/internal/lab/netem"
)

// SVG plots, per policy, the declared bitrate of each video segment as it
// completed beside the link rate, and the playout slack (below 0: a stall).
func SVG(tls []Timeline, phases []Phase) []byte {
	const w, ph, ml, mr, mt = 720.0, 150.0, 56.0, 16.0, 24.0
	total := 0.0
	for _, p := range phases {
		total += p.For.Seconds()
	}
	h := mt + float64(len(tls))*(2*ph+40)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="system-ui,sans-serif" font-size="11">`, w, h, w, h)
	px := func(t float64) float64 { return ml + t/total*(w-ml-mr) }
	top := mt
	for _, tl := range tls {
		// Bitrate panel: 0 to the highest link rate or rung.
		ceil := 0.0
		for _, p := range phases {
			r, _ := netem.ParseRate(p.Rate)
			ceil = max(ceil, float64(r)/1000)
		}
		for _, sg := range tl.Segments {
			ceil = max(ceil, sg.Kbps)
		}
		ceil = math.Ceil(ceil/1000) * 1000
		py := func(v float64) float64 { return top + ph - min(v, ceil)/ceil*(ph-20) }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="600">policy %s: video rung (blue) and link rate (grey), kbit/s</text>`, ml, top+10, tl.Policy)
		for _, v := range []float64{0, ceil / 4, ceil / 2, ceil} {
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`, ml, w-mr, py(v), py(v), ml-4, py(v)+4, v)
		}
		var link strings.Builder
		t0 := 0.0
		for _, p := range phases {
			r, _ := netem.ParseRate(p.Rate)
			k := float64(r) / 1000
			fmt.Fprintf(&link, "%.1f,%.1f %.1f,%.1f ", px(t0), py(k), px(t0+p.For.Seconds()), py(k))
			t0 += p.For.Seconds()
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#999" stroke-width="2" points="%s"/>`, link.String())
		var rung strings.Builder
		for _, sg := range tl.Segments {
			fmt.Fprintf(&rung, "%.1f,%.1f ", px(sg.T), py(sg.Kbps))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`, rung.String())
		for _, e := range tl.Events {
			if e.Type == "skip" {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#d62728"><title>%s</title></circle>`, px(e.T), py(0), e.Reason)
			}
		}
		top += ph + 10
		// Buffer (green) and stall time so far (red) panel: 0 to at least 6 s.
		smax := 6.0
		for _, sg := range tl.Segments {
			smax = max(smax, math.Ceil(sg.Stall/2)*2, math.Ceil(sg.Buffer/2)*2)
		}
		sy := func(v float64) float64 { return top + ph - max(min(v, smax), 0)/smax*(ph-20) }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">buffer of a segment-level player after each segment (green) and its stall time so far (red), s</text>`, ml, top+10)
		for _, v := range []float64{0, smax / 3, 2 * smax / 3, smax} {
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`, ml, w-mr, sy(v), sy(v), ml-4, sy(v)+4, v)
		}
		var bufL, stallL strings.Builder
		for _, sg := range tl.Segments {
			fmt.Fprintf(&bufL, "%.1f,%.1f ", px(sg.T), sy(sg.Buffer))
			fmt.Fprintf(&stallL, "%.1f,%.1f ", px(sg.T), sy(sg.Stall))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#2ca02c" stroke-width="2" points="%s"/>`, bufL.String())
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#d62728" stroke-width="2" points="%s"/>`, stallL.String())
		for t := 0.0; t <= total; t += 5 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0fs</text>`, px(t), top+ph+4, t)
		}
		top += ph + 30
	}
	b.WriteString(`</svg>`)
	return []byte(b.String())
}
