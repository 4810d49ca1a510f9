package experiment

import (
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

func TestLinkRuns(t *testing.T) {
	before := []netem.DirectionStats{
		{From: "client", To: "server", Packets: 100, Lost: 1, QueueDropped: 2, Delivered: 97, Timed: 97, LateSum: 97 * time.Millisecond, LateMax: 5 * time.Millisecond, LateOver1ms: 3},
		{From: "server", To: "client", Packets: 10, Delivered: 10, Timed: 10, LateSum: 10 * time.Millisecond, LateMax: 9 * time.Millisecond},
	}
	after := []netem.DirectionStats{
		{From: "client", To: "server", Packets: 300, Lost: 3, QueueDropped: 12, Delivered: 285, Timed: 285, LateSum: 97*time.Millisecond + 188*2*time.Millisecond, LateMax: 40 * time.Millisecond, LateOver1ms: 50},
		{From: "server", To: "client", Packets: 20, Delivered: 20, Timed: 20, LateSum: 10*time.Millisecond + 10*500*time.Microsecond, LateMax: 9 * time.Millisecond},
	}
	got := linkRuns(before, after)
	up := got["client>server"]
	if up.Packets != 200 || up.Lost != 2 || up.QueueDropped != 10 || up.Delivered != 188 || up.LateOver1ms != 47 {
		t.Errorf("client>server counters: %+v", up)
	}
	if up.LateMeanMs != 2 {
		t.Errorf("client>server mean lateness %v ms, want 2", up.LateMeanMs)
	}
	if up.LateMaxMs == nil || *up.LateMaxMs != 40 {
		t.Errorf("client>server: a new maximum (40 ms) in the run is its maximum: %v", up.LateMaxMs)
	}
	down := got["server>client"]
	if down.LateMaxMs != nil || down.LateMaxSoFarMs != 9 || down.LateMeanMs != 0.5 {
		t.Errorf("server>client: no new maximum, so only the bound (9 ms): %+v", down)
	}
	if linkRuns(before, nil) != nil {
		t.Error("no counters (kernel backend): want nil")
	}
	// The first run: nothing before.
	if first := linkRuns(nil, after)["client>server"]; first.Packets != 300 || first.LateMaxMs == nil {
		t.Errorf("first run: %+v", first)
	}
}

func TestLinkDrops(t *testing.T) {
	got := linkDrops(map[string][]netem.Drop{
		"client>server": {{MS: 5, Why: "loss", Proto: 6, SrcPort: 41000, DstPort: 8080, Flags: "AP", Payload: 300, Seq: 9}},
		"server>client": nil,
	})
	if len(got) != 2 || len(got["server>client"]) != 0 {
		t.Fatalf("drops = %v, want both directions, one empty", got)
	}
	if row := got["client>server"][0]; row != [7]any{int64(5), "loss", uint16(41000), uint16(8080), "AP", 300, uint32(9)} {
		t.Errorf("row = %v", row)
	}
	if linkDrops(nil) != nil {
		t.Error("no link (kernel backend) must give no drops")
	}
}
