package main

import "testing"

func TestGoalPerRow(t *testing.T) {
	mk := func(peer string, rtt, rebuf, lat, plr float64) row {
		r := row{RTTms: rtt, Multiplier: 3, Peer: peer, PLR: plr}
		r.RebufferMS, r.LatencyMedianMS = rebuf, lat
		return r
	}
	rows := []row{
		mk("srt", 50, 300, 350, 0), mk("fdsp-udp", 50, 250, 290, 0.004), mk("fdsp-auto", 50, 280, 360, 0.0008),
		mk("srt", 150, 800, 850, 0), mk("fdsp-udp", 150, 600, 650, 0.004), mk("fdsp-auto", 150, 700, 950, 0.002),
		mk("srt", 250, 1300, 1350, 0), mk("fdsp-auto", 250, 1400, 1300, 0.003), // no all-UDP row: no PLR verdict
		mk("fdsp-auto", 200, 100, 100, 0), // no SRT row: left out
	}
	gs := goals("run", rows)
	if len(gs) != 3 {
		t.Fatalf("%d goal rows, want 3 (one per RTT with both SRT and adaptive)", len(gs))
	}
	// 50 ms: less rebuffering at 3 % more latency (within 5 %), PLR cut 80 %.
	if g := gs[0]; !g.RebufferMet || !g.PLRMet || g.PLRCut < 0.79 || g.PLRCut > 0.81 {
		t.Errorf("50 ms: %+v, want both goals met with an 80 %% cut", g)
	}
	// 150 ms: less rebuffering but 12 % more latency: not at equal latency; cut 50 %.
	if g := gs[1]; g.RebufferMet || g.PLRMet {
		t.Errorf("150 ms: rebuffering met %v, PLR met %v: want neither", g.RebufferMet, g.PLRMet)
	}
	// 250 ms: more rebuffering: not met; no all-UDP: no PLR verdict.
	if g := gs[2]; g.RebufferMet || g.HaveUDP || g.PLRMet {
		t.Errorf("250 ms: %+v, want the rebuffering goal not met and no PLR verdict", g)
	}
}

// Both adaptive arms of one run get a row each against the same SRT and
// all-UDP rows; all-UDP with repair is carried along.
func TestGoalPerArm(t *testing.T) {
	mk := func(peer string, rebuf, lat, plr float64, repair bool) row {
		r := row{RTTms: 150, Multiplier: 3, Peer: peer, PLR: plr, Repair: repair}
		r.RebufferMS, r.LatencyMedianMS = rebuf, lat
		return r
	}
	rows := []row{
		mk("srt", 800, 850, 0, false), mk("fdsp-udp", 600, 650, 0.004, false), mk("fdsp-udp-repair", 600, 800, 0.0005, true),
		mk("fdsp-auto", 700, 840, 0.0004, true), mk("fdsp-auto-norepair", 1200, 1250, 0.003, false),
	}
	gs := goals("run", rows)
	if len(gs) != 2 || gs[0].Arm != "fdsp-auto" || gs[1].Arm != "fdsp-auto-norepair" {
		t.Fatalf("goal rows %+v: want fdsp-auto then fdsp-auto-norepair", gs)
	}
	if g := gs[0]; !g.RebufferMet || !g.PLRMet || g.UDPRepair == nil || g.UDPRepair.PLR != 0.0005 {
		t.Errorf("repair arm: %+v, want both met (90 %% cut) and the all-UDP repair row", g)
	}
	if g := gs[1]; g.RebufferMet || g.PLRMet {
		t.Errorf("no-repair arm: %+v, want neither met", g)
	}
}
