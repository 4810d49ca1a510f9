package experiment

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Point is one plotted value with an optional spread (Lo..Hi).
type Point struct {
	X, Y, Lo, Hi float64
	Label        string // x label for categorical axes
}

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
	Hollow bool // published figures: markers only, no line
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// lineChart draws series as an inline SVG: lines through the medians, whiskers for
// the spread, hollow markers for published figures.
func lineChart(title, xLabel, yLabel string, series []Series) template.HTML {
	const w, h, ml, mr, mt, mb = 560.0, 300.0, 64.0, 150.0, 28.0, 44.0
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
			maxY = math.Max(maxY, math.Max(p.Y, p.Hi))
			minY = math.Min(minY, math.Min(p.Y, p.Lo))
		}
	}
	if math.IsInf(minX, 1) {
		return ""
	}
	if maxX == minX {
		minX, maxX = minX-1, maxX+1
	}
	if maxY <= minY {
		maxY = minY + 1
	}
	maxY = niceCeil(maxY)
	px := func(x float64) float64 { return ml + (x-minX)/(maxX-minX)*(w-ml-mr) }
	py := func(y float64) float64 { return h - mb - (y-minY)/(maxY-minY)*(h-mt-mb) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="system-ui,sans-serif" font-size="11">`, w, h, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13" font-weight="600">%s</text>`, ml, template.HTMLEscapeString(title))
	// Axes and grid.
	for i := 0; i <= 4; i++ {
		y := minY + (maxY-minY)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			ml, w-mr, py(y), py(y), ml-6, py(y)+4, fmtNum(y))
	}
	ticks := map[float64]string{}
	for _, s := range series {
		for _, p := range s.Points {
			ticks[p.X] = p.Label
		}
	}
	for x, label := range ticks {
		if label == "" {
			label = fmtNum(x)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(x), h-mb+16, template.HTMLEscapeString(label))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`, ml, w-mr, h-mb, h-mb)
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`, ml, ml, mt, h-mb)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (ml+w-mr)/2, h-8, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.0f) rotate(-90)" text-anchor="middle">%s</text>`, (mt+h-mb)/2, template.HTMLEscapeString(yLabel))
	for i, s := range series {
		c := palette[i%len(palette)]
		if !s.Hollow && len(s.Points) > 1 {
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		}
		for _, p := range s.Points {
			if p.Hi > p.Lo {
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, px(p.X), px(p.X), py(p.Lo), py(p.Hi), c)
			}
			if s.Hollow {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="white" stroke="%s" stroke-width="2"><title>%s: %s</title></rect>`, px(p.X)-4, py(p.Y)-4, c, template.HTMLEscapeString(s.Name), fmtNum(p.Y))
			} else {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s</title></circle>`, px(p.X), py(p.Y), c, template.HTMLEscapeString(s.Name), fmtNum(p.Y))
			}
		}
		ly := mt + 14 + float64(i)*16
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`, w-mr+12, ly-9, c, w-mr+26, ly, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from escaped parts
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*mag >= v {
			return m * mag
		}
	}
	return 10 * mag
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// LineChart is lineChart for other reports (the workload generator's): an inline SVG
// of series over x, medians joined, whiskers for the spread.
func LineChart(title, xLabel, yLabel string, series []Series) template.HTML {
	return lineChart(title, xLabel, yLabel, series)
}
