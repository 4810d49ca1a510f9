package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const (
	// studyPLRCut is the study's packet loss reduction against all-UDP ("over 75 %").
	studyPLRCut = 0.75
	// equalLatency: FDSP's median added latency counts as equal to SRT's up to
	// this ratio (the players' timer slack is a few ms; 5 % is 18 ms at 50 ms RTT).
	equalLatency = 1.05
)

// goalRow is issue 12's goal checked on one RTT and window of one run: FDSP with
// adaptive BP at or below SRT's rebuffering at no more added latency than SRT's
// (up to equalLatency),
// with the study's PLR reduction against all-UDP measured in the same run.
type goalRow struct {
	Run                 string
	RTTms               float64
	Multiplier          int
	Arm                 string // the adaptive peer: fdsp-auto (repair as its row says) or fdsp-auto-norepair
	SRT, Auto, UDP      row
	HaveUDP             bool
	UDPRepair           *row    // all-UDP with repair, when the run has it
	RebufferRatio       float64 // FDSP adaptive ÷ SRT
	LatencyRatio        float64 // median added latency, FDSP adaptive ÷ SRT
	PLRCut              float64 // 1 − adaptive's PLR ÷ all-UDP's
	RebufferMet, PLRMet bool
}

// goals pairs each SRT row with the adaptive (and all-UDP) row of the same RTT
// and window; rows without both are left out.
func goals(run string, rows []row) []goalRow {
	type key struct {
		rtt float64
		m   int
	}
	by := map[key]map[string]row{}
	var order []key
	for _, r := range rows {
		if r.Error != "" {
			continue
		}
		k := key{r.RTTms, r.Multiplier}
		if by[k] == nil {
			by[k] = map[string]row{}
			order = append(order, k)
		}
		by[k][r.Peer] = r
	}
	var gs []goalRow
	for _, k := range order {
		s, ok := by[k]["srt"]
		if !ok || s.RebufferMS <= 0 || s.LatencyMedianMS <= 0 {
			continue
		}
		for _, arm := range []string{"fdsp-auto", "fdsp-auto-norepair"} {
			a, ok := by[k][arm]
			if !ok {
				continue
			}
			g := goalRow{Run: run, RTTms: k.rtt, Multiplier: k.m, Arm: arm, SRT: s, Auto: a,
				RebufferRatio: a.RebufferMS / s.RebufferMS, LatencyRatio: a.LatencyMedianMS / s.LatencyMedianMS}
			g.RebufferMet = g.RebufferRatio <= 1 && g.LatencyRatio <= equalLatency
			if u, ok := by[k]["fdsp-udp"]; ok && u.PLR > 0 {
				g.UDP, g.HaveUDP = u, true
				g.PLRCut = 1 - a.PLR/u.PLR
				g.PLRMet = g.PLRCut >= studyPLRCut
			}
			if u, ok := by[k]["fdsp-udp-repair"]; ok {
				g.UDPRepair = &u
			}
			gs = append(gs, g)
		}
	}
	return gs
}

// summarize prints, for the result folders given, each run's table and the goal
// per row.
func summarize(w io.Writer, dirs []string) error {
	var all []goalRow
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "results.json"))
		if err != nil {
			return err
		}
		var rows []row
		if err := json.Unmarshal(b, &rows); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		fmt.Fprintf(w, "%s:\n\n", d)
		table(w, rows)
		fmt.Fprintln(w)
		all = append(all, goals(filepath.Base(d), rows)...)
	}
	goalTable(w, all)
	return nil
}

func goalTable(w io.Writer, gs []goalRow) {
	fmt.Fprintln(w, "| run | RTT ms | window | arm (repair) | SRT rebuffering ms | FDSP rebuffering ms | ratio | SRT added latency ms | FDSP added latency ms | ratio | rebuffering goal | all-UDP PLR % | all-UDP + repair PLR % | FDSP PLR % | PLR cut vs all-UDP | PLR goal (≥ 75 %) | both |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	yes := func(b bool) string {
		if b {
			return "met"
		}
		return "not met"
	}
	type count struct{ rows, reb, plr, both int }
	per := map[string]*count{}
	var arms []string
	for _, g := range gs {
		udp, udpRep, cut, plrGoal := "—", "—", "—", "—"
		if g.HaveUDP {
			udp, cut, plrGoal = fmt.Sprintf("%.3f", 100*g.UDP.PLR), fmt.Sprintf("%.0f %%", 100*g.PLRCut), yes(g.PLRMet)
		}
		if g.UDPRepair != nil {
			udpRep = fmt.Sprintf("%.3f", 100*g.UDPRepair.PLR)
		}
		arm := g.Arm
		if g.Auto.Repair {
			arm += " (repair)"
		}
		fmt.Fprintf(w, "| %s | %.0f | %d× | %s | %.0f (%d) | %.0f (%d) | %.2f | %.0f | %.0f | %.2f | %s | %s | %s | %.3f | %s | %s | %s |\n",
			g.Run, g.RTTms, g.Multiplier, arm, g.SRT.RebufferMS, g.SRT.RebufferCount, g.Auto.RebufferMS, g.Auto.RebufferCount, g.RebufferRatio,
			g.SRT.LatencyMedianMS, g.Auto.LatencyMedianMS, g.LatencyRatio, yes(g.RebufferMet), udp, udpRep, 100*g.Auto.PLR, cut, plrGoal, yes(g.RebufferMet && g.PLRMet))
		c := per[arm]
		if c == nil {
			c = &count{}
			per[arm] = c
			arms = append(arms, arm)
		}
		c.rows++
		if g.RebufferMet {
			c.reb++
		}
		if g.PLRMet {
			c.plr++
		}
		if g.RebufferMet && g.PLRMet {
			c.both++
		}
	}
	fmt.Fprintln(w)
	for _, a := range arms {
		c := per[a]
		fmt.Fprintf(w, "%s: rebuffering goal (at or below SRT's, at an added latency at most 5 %% above SRT's) met in %d of %d rows; the study's PLR cut in %d of %d; both in %d of %d.\n", a, c.reb, c.rows, c.plr, c.rows, c.both, c.rows)
	}
}

// summaryDirs splits the -summarize argument.
func summaryDirs(arg string) []string {
	var ds []string
	for _, d := range strings.Split(arg, ",") {
		if d = strings.TrimSpace(d); d != "" {
			ds = append(ds, d)
		}
	}
	return ds
}
