package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// dynamicProfiles are the study's square-wave links (experiments/profiles), by the
// video bitrate they were made for: the rate alternates between low and high every
// 2 s, 25 ms ±5 ms one way, 0.2 % loss, duplication, corruption and reordering.
var dynamicProfiles = map[int]string{
	1_000_000: "experiments/profiles/fdsp-1-1.5mbit.yaml",
	2_000_000: "experiments/profiles/fdsp-2-2.5mbit.yaml",
	4_000_000: "experiments/profiles/fdsp-4-6mbit.yaml",
}

// table2Link is one of Table 2's links for a video bitrate b, all from the shipped
// dynamic profile: "dynamic" as it is; "static" at a constant 1.25 b; "open", its
// non-congested counterpart, without a rate limit (delay, jitter and the 0.2 %
// impairments stay).
func table2Link(name string, b int) (netem.Profile, error) {
	file, ok := dynamicProfiles[b]
	if !ok {
		return netem.Profile{}, fmt.Errorf("no study profile for %d bit/s (want 1000k, 2000k or 4000k)", b)
	}
	p, err := netem.LoadProfile(file)
	if err != nil {
		return p, err
	}
	for _, m := range []*netem.Impairment{&p.Forward, &p.Reverse} {
		switch name {
		case "static":
			m.Rate = netem.ConstantRate(netem.Rate(1.25 * float64(b)))
		case "open":
			m.Rate = netem.RateSpec{}
		}
	}
	return p, p.Validate()
}

var table2Links = []string{"open", "static", "dynamic"}

func table2(ctx context.Context, c config, bitrates []int) error {
	h, cs, err := contents(ctx, c, c.clips, bitrates)
	if err != nil {
		return err
	}
	fd := variant{Name: fmt.Sprintf("bp%d", c.bp), Mode: fdsp.ModeFDSP, BP: c.bp, Repair: repairFlag}
	if c.bp == fdsp.BPAuto {
		fd.Name = "auto"
	}
	var rows []Row
	for _, ct := range cs {
		for _, link := range table2Links {
			p, err := table2Link(link, ct.Bitrate)
			if err != nil {
				return err
			}
			l, err := newLab(ctx, h, p, c.cc, c.substream, c.serverLogger())
			if err != nil {
				return err
			}
			l.repair = c.repair
			for rep := 1; rep <= c.reps; rep++ {
				for _, v := range []variant{variants[0], fd} { // all-TCP, then FDSP
					log.Printf("%s over %s (%s), rep %d: %s", ct.Name, link, p.Forward.Rate, rep, v.Name)
					st, tp, err := l.play(ctx, "vod/"+ct.Name, v, nil, 500*time.Millisecond)
					row := newRow(st, err)
					row.Table, row.Clip, row.Asset, row.Link, row.RTTms, row.Rep, row.Variant = 2, ct.Clip, ct.Name, link, 50, rep, v.Name
					row.Repair = l.repairs(v)
					row.Throughput = tp
					drops, csum := l.rcvbufErrors, l.csumErrors
					row.RcvbufErrors, row.CsumErrors = &drops, &csum
					rows = append(rows, row)
					if err := write(c.out, rows); err != nil {
						l.Close()
						return err
					}
				}
			}
			l.Close()
		}
	}
	if err := plots(c.out, rows); err != nil {
		return err
	}
	table2Summary(os.Stdout, rows)
	return nil
}

// bufferStats are the mean, standard deviation and minimum of the buffer while
// playing (start-up excluded: both start from empty).
func bufferStats(st fdsp.Stats) (mean, sd, lo float64) {
	var n, s, s2 float64
	lo = math.Inf(1)
	for _, x := range st.Samples {
		if x.State == "startup" {
			continue
		}
		n++
		s += x.BufferS
		s2 += x.BufferS * x.BufferS
		lo = math.Min(lo, x.BufferS)
	}
	if n == 0 {
		return 0, 0, 0
	}
	mean = s / n
	return mean, math.Sqrt(math.Max(0, s2/n-mean*mean)), lo
}

func table2Summary(f *os.File, rows []Row) {
	fmt.Fprintln(f, "| asset | link | rep | variant | BP | mean Mbit/s | rebuffering ms (instances) | buffer mean ± sd s | buffer min s | PLR % |")
	fmt.Fprintln(f, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		m, sd, lo := bufferStats(r.Stats)
		fmt.Fprintf(f, "| %s | %s | %d | %s | %.0f %v | %.2f | %.0f (%d) | %.1f ± %.1f | %.1f | %.3f |\n", r.Asset, r.Link, r.Rep, r.Variant, r.BP, r.Stats.BPs, r.MeanMbps, r.RebufferMS, r.RebufferCount, m, sd, lo, 100*r.PLR)
	}
}

// plots writes, per asset and link, the buffer and the throughput over time of
// each variant (the first repetition) as SVG.
func plots(out string, rows []Row) error {
	type key struct{ asset, link string }
	buf := map[key][]series{}
	thr := map[key][]series{}
	var order []key
	for _, r := range rows {
		if r.Rep != 1 {
			continue
		}
		k := key{r.Asset, r.Link}
		if _, ok := buf[k]; !ok {
			order = append(order, k)
		}
		b := series{Name: r.Variant}
		for _, s := range r.Stats.Samples {
			b.X, b.Y = append(b.X, s.T), append(b.Y, s.BufferS)
		}
		t := series{Name: r.Variant}
		for _, s := range r.Throughput {
			t.X, t.Y = append(t.X, s.T), append(t.Y, s.Mbps)
		}
		buf[k] = append(buf[k], b)
		thr[k] = append(thr[k], t)
	}
	for _, k := range order {
		name := k.asset + "-" + k.link
		b := timeChart("buffer, "+k.asset+" over "+k.link, "session s", "buffer s", 0, buf[k])
		if err := fsutil.WriteFileAtomic(filepath.Join(out, "buffer-"+name+".svg"), b, 0o644); err != nil {
			return err
		}
		t := timeChart("throughput, "+k.asset+" over "+k.link, "session s", "Mbit/s received", 0, thr[k])
		if err := fsutil.WriteFileAtomic(filepath.Join(out, "throughput-"+name+".svg"), t, 0o644); err != nil {
			return err
		}
	}
	return nil
}
