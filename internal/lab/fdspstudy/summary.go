package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// summarize prints Markdown tables over every results.json given: per clip (or
// asset and link), RTT and variant, the median over repetitions and the range. It
// also draws each folder's SVG plots again from its results.json. The adaptive
// rows of the files in fixedOnly are left out of the tables (another controller's
// runs beside the fixed BPs of the same invocation).
func summarize(w io.Writer, files []string, fixedOnly ...string) error {
	contentTable(w, files)
	var rows []Row
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var rs []Row
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, r := range rs {
			if r.Variant != "auto" || !slices.Contains(fixedOnly, f) {
				rows = append(rows, r)
			}
		}
		// The folder's plots again, from its data (the same code as at run time).
		if err := bpTrace(filepath.Dir(f), rs); err != nil {
			return err
		}
		var t2 []Row
		for _, r := range rs {
			if r.Table == 2 {
				t2 = append(t2, r)
			}
		}
		if len(t2) > 0 {
			if err := plots(filepath.Dir(f), t2); err != nil {
				return err
			}
		}
	}
	var t1, t2 []Row
	for _, r := range rows {
		if r.Table == 2 {
			t2 = append(t2, r)
		} else {
			t1 = append(t1, r)
		}
	}
	if len(t1) > 0 {
		summary1(w, t1)
	}
	if len(t2) > 0 {
		summary2(w, t2)
	}
	return nil
}

type group struct {
	key  string
	rows []Row
}

// groupBy keeps first-seen order.
func groupBy(rows []Row, key func(Row) string) []*group {
	var gs []*group
	idx := map[string]*group{}
	for _, r := range rows {
		k := key(r)
		g, ok := idx[k]
		if !ok {
			g = &group{key: k}
			idx[k] = g
			gs = append(gs, g)
		}
		g.rows = append(g.rows, r)
	}
	return gs
}

// med is the median of f over rows and its range, as "m" or "m (lo–hi)".
func med(rows []Row, f func(Row) float64, format string) (float64, string) {
	var v []float64
	for _, r := range rows {
		v = append(v, f(r))
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	s := fmt.Sprintf(format, m)
	if len(v) > 1 && v[0] != v[len(v)-1] {
		s += fmt.Sprintf(" ("+format+"–"+format+")", v[0], v[len(v)-1])
	}
	return m, s
}

func label(v string) string {
	switch v {
	case "tcp":
		return "all-TCP"
	case "udp":
		return "all-UDP"
	}
	return "FDSP " + strings.TrimPrefix(v, "bp")
}

// optimalSlack is how far above the lowest PLR of the fixed BPs that kept up a BP may
// be and still count as optimal (one repetition's PLR varies by about this much).
const optimalSlack = 1.5

// optimalRange reads the fixed-BP rows of one clip and RTT: among the BPs whose TCP
// part kept up (no rebuffering after start-up, median), those whose median PLR (by
// plr) is within optimalSlack of the lowest of them. In order; nil without any.
func optimalRange(vs []*group, plr func(Row) float64) []int {
	type fixed struct {
		bp  int
		plr float64
	}
	var fs []fixed
	best := -1.0
	for _, g := range vs {
		var bp int
		if _, err := fmt.Sscanf(g.key, "bp%d", &bp); err != nil {
			continue
		}
		if after, _ := med(g.rows, func(r Row) float64 { return r.RebufferMS - r.StartupMS }, "%f"); after > 0 {
			continue
		}
		p, _ := med(g.rows, plr, "%f")
		fs = append(fs, fixed{bp, p})
		if best < 0 || p < best {
			best = p
		}
	}
	var in []int
	for _, f := range fs {
		if f.plr <= optimalSlack*best {
			in = append(in, f.bp)
		}
	}
	slices.Sort(in)
	return in
}

// linkPLR is PLR without the datagrams the client's kernel dropped for a full
// receive buffer: the loss the emulated link made (the study's condition), not
// the lab's CPU contention.
func linkPLR(r Row) float64 {
	if r.Stats.Packets == 0 || r.RcvbufErrors == nil {
		return r.PLR
	}
	return max(0, r.PLR-float64(*r.RcvbufErrors)/float64(r.Stats.Packets))
}

func summary1(w io.Writer, rows []Row) {
	rows = byClipAndRTT(rows)
	defer ranges(w, rows)
	fmt.Fprintln(w, "| clip | RTT ms | variant | n | rebuffering ms | instances | after start-up ms | cut vs all-TCP | PLR % | cut vs all-UDP | receive-buffer drops | decodable | PSNR dB | BPs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, byRTT := range groupBy(rows, func(r Row) string { return fmt.Sprintf("%s %d", r.Clip, r.RTTms) }) {
		vs := groupBy(byRTT.rows, func(r Row) string { return r.Variant })
		var tcpRebuf, udpPLR float64 = -1, -1
		for _, g := range vs {
			switch g.key {
			case "tcp":
				tcpRebuf, _ = med(g.rows, func(r Row) float64 { return r.RebufferMS }, "%.0f")
			case "udp":
				udpPLR, _ = med(g.rows, func(r Row) float64 { return r.PLR }, "%.3f")
			}
		}
		for _, g := range vs {
			r0 := g.rows[0]
			rb, rbs := med(g.rows, func(r Row) float64 { return r.RebufferMS }, "%.0f")
			_, ins := med(g.rows, func(r Row) float64 { return float64(r.RebufferCount) }, "%.0f")
			_, after := med(g.rows, func(r Row) float64 { return r.RebufferMS - r.StartupMS }, "%.0f")
			plr, plrs := med(g.rows, func(r Row) float64 { return 100 * r.PLR }, "%.2f")
			_, dec := med(g.rows, func(r Row) float64 { return r.Decodable }, "%.3f")
			drops := "—" // not recorded
			var counted []Row
			for _, r := range g.rows {
				if r.RcvbufErrors != nil {
					counted = append(counted, r)
				}
			}
			if len(counted) > 0 {
				_, drops = med(counted, func(r Row) float64 { return float64(*r.RcvbufErrors) }, "%.0f")
			}
			cutT, cutU := "", ""
			if g.key != "tcp" && tcpRebuf > 0 {
				cutT = fmt.Sprintf("%.0f %%", 100*(1-rb/tcpRebuf))
			}
			if g.key != "udp" && g.key != "tcp" && udpPLR > 0 {
				cutU = fmt.Sprintf("%.0f %%", 100*(1-plr/(100*udpPLR)))
			}
			var ps []Row
			for _, r := range g.rows {
				if r.PSNR != nil {
					ps = append(ps, r)
				}
			}
			psnrs := "—"
			if len(ps) > 0 {
				_, psnrs = med(ps, func(r Row) float64 { return *r.PSNR }, "%.2f")
			}
			var bps []string
			if g.key == "auto" {
				for _, r := range g.rows {
					bps = append(bps, strings.Trim(strings.ReplaceAll(fmt.Sprint(r.Stats.BPs), " ", ","), "[]"))
				}
			}
			fmt.Fprintf(w, "| %s | %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r0.Clip, r0.RTTms, label(g.key), len(g.rows),
				rbs, ins, after, cutT, plrs, cutU, drops, dec, psnrs, strings.Join(bps, " / "))
		}
	}
	fmt.Fprintln(w)
}

// byClipAndRTT orders Table 1's rows by clip (as first seen) and RTT, keeping the
// order within each, so folders of several rounds make one table in RTT order.
func byClipAndRTT(rows []Row) []Row {
	clip := map[string]int{}
	for _, r := range rows {
		if _, ok := clip[r.Clip]; !ok {
			clip[r.Clip] = len(clip)
		}
	}
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b Row) int {
		if c := clip[a.Clip] - clip[b.Clip]; c != 0 {
			return c
		}
		return a.RTTms - b.RTTms
	})
	return out
}

// ranges prints, per clip and RTT, the optimal BP range of the fixed sweep (by PLR
// as measured and by the link's PLR) and where each adaptive run's last substream
// landed.
func ranges(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "| clip | RTT ms | optimal BPs by PLR | optimal BPs by link PLR (receive-buffer drops left out) | adaptive: last substream's BP per run | in range (PLR / link PLR) |\n")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, byRTT := range groupBy(rows, func(r Row) string { return fmt.Sprintf("%s %d", r.Clip, r.RTTms) }) {
		vs := groupBy(byRTT.rows, func(r Row) string { return r.Variant })
		opt := optimalRange(vs, func(r Row) float64 { return r.PLR })
		optL := optimalRange(vs, linkPLR)
		var last []string
		in, inL, n := 0, 0, 0
		for _, g := range vs {
			if g.key != "auto" {
				continue
			}
			for _, r := range g.rows {
				if len(r.Stats.BPs) == 0 {
					continue
				}
				b := r.Stats.BPs[len(r.Stats.BPs)-1]
				last = append(last, fmt.Sprint(b))
				n++
				if slices.Contains(opt, b) {
					in++
				}
				if slices.Contains(optL, b) {
					inL++
				}
			}
		}
		r0 := byRTT.rows[0]
		list := func(bs []int) string { return strings.Trim(strings.ReplaceAll(fmt.Sprint(bs), " ", ", "), "[]") }
		inS := ""
		if n > 0 && (opt != nil || optL != nil) {
			inS = fmt.Sprintf("%d of %d / %d of %d", in, n, inL, n)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", r0.Clip, r0.RTTms, list(opt), list(optL), strings.Join(last, ", "), inS)
	}
	fmt.Fprintln(w)
}

func summary2(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| asset | link | variant | n | mean Mbit/s received | rebuffering ms (instances) | buffer mean ± sd s | buffer min s | PLR % | BPs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, g := range groupBy(rows, func(r Row) string { return r.Asset + " " + r.Link + " " + r.Variant }) {
		r0 := g.rows[0]
		_, mb := med(g.rows, func(r Row) float64 { return r.MeanMbps }, "%.2f")
		_, rb := med(g.rows, func(r Row) float64 { return r.RebufferMS }, "%.0f")
		_, ins := med(g.rows, func(r Row) float64 { return float64(r.RebufferCount) }, "%.0f")
		_, bm := med(g.rows, func(r Row) float64 { m, _, _ := bufferStats(r.Stats); return m }, "%.1f")
		_, bsd := med(g.rows, func(r Row) float64 { _, s, _ := bufferStats(r.Stats); return s }, "%.1f")
		_, blo := med(g.rows, func(r Row) float64 { _, _, l := bufferStats(r.Stats); return l }, "%.1f")
		_, plr := med(g.rows, func(r Row) float64 { return 100 * r.PLR }, "%.2f")
		bps := ""
		if r0.Variant != "tcp" {
			bps = strings.Trim(strings.ReplaceAll(fmt.Sprint(r0.Stats.BPs), " ", ","), "[]")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s (%s) | %s ± %s | %s | %s | %s |\n", r0.Asset, r0.Link, label(r0.Variant), len(g.rows), mb, rb, ins, bm, bsd, blo, plr, bps)
	}
	fmt.Fprintln(w)
}

// contentTable prints the clips of every content.json beside the result files, once each.
func contentTable(w io.Writer, files []string) {
	seen := map[string]bool{}
	fmt.Fprintln(w, "| asset | clip | seconds | keyframe every | frames | I-frames | video Mbit/s | I-frame share of the bytes | x264 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(f), "content.json"))
		if err != nil {
			continue
		}
		var cs []Content
		if json.Unmarshal(b, &cs) != nil {
			continue
		}
		for _, c := range cs {
			if seen[c.Name] {
				continue
			}
			seen[c.Name] = true
			fmt.Fprintf(w, "| %s | %s | %.0f | %d ms | %d | %d | %.2f | %.1f %% | %s |\n", c.Name, c.Clip, c.Seconds, c.GOPms, c.Frames, c.IFrames, c.VideoMbps, 100*c.IShare, c.Params)
		}
	}
	fmt.Fprintln(w)
}

// summaryFiles expands the -summarize argument: comma-separated result folders or files.
func summaryFiles(arg string) []string {
	var fs []string
	for _, p := range strings.Split(arg, ",") {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = filepath.Join(p, "results.json")
		}
		fs = append(fs, p)
	}
	return fs
}
