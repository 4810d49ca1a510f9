package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// series is one line of a time-series chart.
type series struct {
	Name string
	X, Y []float64
}

var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// timeChart draws series over time as a standalone SVG: lines only, ten x ticks
// (experiment.LineChart labels every x, which suits a few categories, not 60
// samples a run). yMax fixes the y axis' top (0: from the data).
func timeChart(title, xLabel, yLabel string, yMax float64, ss []series) []byte {
	const w, h, ml, mr, mt, mb = 640.0, 300.0, 56.0, 110.0, 28.0, 44.0
	maxX, maxY := 1.0, 0.0
	for _, s := range ss {
		for i := range s.X {
			maxX, maxY = math.Max(maxX, s.X[i]), math.Max(maxY, s.Y[i])
		}
	}
	maxX, maxY = nice(maxX), nice(math.Max(maxY, 1e-9))
	if yMax > 0 {
		maxY = yMax
	}
	px := func(x float64) float64 { return ml + x/maxX*(w-ml-mr) }
	py := func(y float64) float64 { return h - mb - y/maxY*(h-mt-mb) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="system-ui,sans-serif" font-size="11">`, w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="16" font-size="13" font-weight="600">%s</text>`, ml, html.EscapeString(title))
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, ml, w-mr, py(y), py(y), ml-6, py(y)+4, num(y))
	}
	for i := 0; i <= 10; i++ {
		x := maxX * float64(i) / 10
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(x), h-mb+16, num(x))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/><line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`, ml, w-mr, h-mb, h-mb, ml, ml, mt, h-mb)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (ml+w-mr)/2, h-8, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.0f) rotate(-90)" text-anchor="middle">%s</text>`, (mt+h-mb)/2, html.EscapeString(yLabel))
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for j := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Y[j])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, c, strings.Join(pts, " "))
		ly := mt + 14 + float64(i)*16
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`, w-mr+12, ly-9, c, w-mr+26, ly, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// nice rounds up to a round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten).
func nice(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func num(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
