package fdsp

import (
	"testing"
	"time"
)

// TestUDPPartsPlaceArrivalsAgainstDeadlines replays synthetic arrivals (no wall
// clock): packets that come before their access unit's deadline give the margin,
// packets after it are late by the playout clock of their substream's play-out,
// and datagrams naming substreams the client never played leave no state.
func TestUDPPartsPlaceArrivalsAgainstDeadlines(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	c := &client{opts: ClientOptions{PlayoutDelay: 50 * time.Millisecond}, anchor: t0, dts0: 90000, maxSeen: -1}
	// Substream 0: two access units, 3 and 2 packets, DTS 1 s and 1.1 s.
	aus := []AU{{DTS: 90000, FirstSeq: 0, UDPPackets: 3}, {DTS: 99000, FirstSeq: 3, UDPPackets: 2}}
	due0 := t0.Add(50 * time.Millisecond)
	due1 := t0.Add(150 * time.Millisecond)

	c.placeUDP(Fragment{Substream: 0, Seq: 1}, aus, false, due0.Add(-20*time.Millisecond))
	c.placeUDP(Fragment{Substream: 0, Seq: 4}, aus, false, due1.Add(-5*time.Millisecond))
	c.part(0).ShiftMS = 0
	c.keepPlayedAUs(0, aus)
	c.placeUDP(Fragment{Substream: 0, Seq: 2}, aus, true, due0.Add(30*time.Millisecond))
	// A rebuffering later (shift 200 ms) does not move substream 0's deadlines:
	// the late packet is late against the clock it was played by.
	c.shift = 200 * time.Millisecond
	c.placeUDP(Fragment{Substream: 0, Seq: 3}, aus, true, due1.Add(70*time.Millisecond))

	p := c.parts[0]
	if p.Late != 2 {
		t.Errorf("late = %d, want 2", p.Late)
	}
	if p.MinMarginMS != 5 {
		t.Errorf("min margin = %v ms, want 5", p.MinMarginMS)
	}
	if p.MaxLateMS != 70 {
		t.Errorf("max lateness = %v ms, want 70", p.MaxLateMS)
	}
	// On-time packets of a substream played after the rebuffering are placed
	// against the shifted clock.
	aus1 := []AU{{DTS: 90000 + 180000, FirstSeq: 0, UDPPackets: 1}}
	due := t0.Add(50*time.Millisecond + 2*time.Second + 200*time.Millisecond)
	c.placeUDP(Fragment{Substream: 1, Seq: 0}, aus1, false, due.Add(-100*time.Millisecond))
	if m := c.parts[1].MinMarginMS; m != 100 {
		t.Errorf("substream 1 margin = %v ms, want 100", m)
	}
	// A sequence number outside every access unit is not placed.
	c.placeUDP(Fragment{Substream: 1, Seq: 9}, aus1, false, due.Add(-time.Millisecond))
	if m := c.parts[1].MinMarginMS; m != 100 {
		t.Errorf("a packet outside the map moved the margin to %v ms", m)
	}
}

func TestUDPPartsKeepOnlyTheLastPlayedMaps(t *testing.T) {
	c := &client{}
	for k := uint32(0); k < 10; k++ {
		c.keepPlayedAUs(k, []AU{{}})
	}
	if len(c.playedAUs) != keepPlayed {
		t.Fatalf("kept %d played maps, want %d", len(c.playedAUs), keepPlayed)
	}
	for k := uint32(10 - keepPlayed); k < 10; k++ {
		if _, ok := c.playedAUs[k]; !ok {
			t.Errorf("substream %d's map was not kept", k)
		}
	}
}

func TestAUBySeq(t *testing.T) {
	aus := []AU{{DTS: 0, FirstSeq: 0, UDPPackets: 2}, {DTS: 1, FirstSeq: 2, UDPPackets: 0}, {DTS: 2, FirstSeq: 2, UDPPackets: 3}}
	for _, tc := range []struct {
		seq  uint16
		want int // index, -1: none
	}{{0, 0}, {1, 0}, {2, 2}, {4, 2}, {5, -1}} {
		a, ok := auBySeq(aus, tc.seq)
		switch {
		case tc.want < 0 && ok:
			t.Errorf("seq %d: found %+v, want none", tc.seq, a)
		case tc.want >= 0 && (!ok || a.DTS != aus[tc.want].DTS):
			t.Errorf("seq %d: got AU %d %v, want AU %d", tc.seq, a.DTS, ok, tc.want)
		}
	}
}
