package netem

import (
	"math"
	"testing"
	"time"
)

const msNs = int64(time.Millisecond)

// departures feeds count packets of size bytes arriving at the given times and
// returns the delivery time of each (-1 for dropped).
func departures(s *shaper, arrivals []int64, size int) []int64 {
	out := make([]int64, len(arrivals))
	for i, at := range arrivals {
		v := s.admit(at, size)
		out[i] = -1
		if v.n > 0 {
			out[i] = v.at[0]
		}
	}
	return out
}

func burstAt(t int64, n int) []int64 {
	a := make([]int64, n)
	for i := range a {
		a[i] = t
	}
	return a
}

func TestShaperConstantRate(t *testing.T) {
	// 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
	s := newShaper(Impairment{Rate: ConstantRate(12 * Mbit), Delay: ms(10)}, 1, 0)
	got := departures(s, burstAt(0, 10), 1500)
	for i, d := range got {
		if want := int64(i+1)*msNs + 10*msNs; d != want {
			t.Errorf("packet %d delivered at %v, want %v", i, time.Duration(d), time.Duration(want))
		}
	}
	// After an idle spell the next packet starts at once.
	if d := departures(s, []int64{100 * msNs}, 1500)[0]; d != 111*msNs {
		t.Errorf("after idle: %v", time.Duration(d))
	}
}

func TestShaperQueueLimits(t *testing.T) {
	cases := []struct {
		name string
		q    Queue
		want int // accepted of 20 back-to-back 1500-byte packets
	}{
		{"packets", Queue{Packets: 5}, 5},
		{"bytes", Queue{Bytes: 7500}, 5},
		{"latency", Queue{Latency: ms(4.5)}, 4}, // 1 ms each: departures 1..4 ms
		{"default", Queue{}, 20},
	}
	for _, c := range cases {
		s := newShaper(Impairment{Rate: ConstantRate(12 * Mbit), Queue: c.q}, 1, 0)
		got := departures(s, burstAt(0, 20), 1500)
		n := 0
		for _, d := range got {
			if d >= 0 {
				n++
			}
		}
		if n != c.want || s.stats.QueueDropped != uint64(20-c.want) {
			t.Errorf("%s: accepted %d (dropped %d), want %d", c.name, n, s.stats.QueueDropped, c.want)
		}
	}
	// The queue drains: after 10 ms there is room again.
	s := newShaper(Impairment{Rate: ConstantRate(12 * Mbit), Queue: Queue{Packets: 5}}, 1, 0)
	departures(s, burstAt(0, 10), 1500)
	if d := departures(s, []int64{10 * msNs}, 1500)[0]; d != 11*msNs {
		t.Errorf("after drain: %v", time.Duration(d))
	}
}

func TestShaperTokenBucket(t *testing.T) {
	// Bucket of two packets: the first two leave at once, then 1 ms apart.
	s := newShaper(Impairment{Rate: ConstantRate(12 * Mbit), Burst: 3000}, 1, 0)
	got := departures(s, burstAt(0, 4), 1500)
	want := []int64{0, 0, msNs, 2 * msNs}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("packet %d at %v, want %v", i, time.Duration(got[i]), time.Duration(want[i]))
		}
	}
	// The bucket refills while idle, up to its depth.
	got = departures(s, burstAt(100*msNs, 3), 1500)
	if got[0] != 100*msNs || got[1] != 100*msNs || got[2] != 101*msNs {
		t.Errorf("after refill: %v", got)
	}
}

func TestShaperSchedule(t *testing.T) {
	// 12 Mbit/s for 10 ms, then nothing for 10 ms: 10 packets per 20 ms.
	r := RateSpec{Steps: []RateStep{{Rate: 12 * Mbit, For: ms(10)}, {Rate: 0, For: ms(10)}}}
	s := newShaper(Impairment{Rate: r}, 1, 0)
	got := departures(s, burstAt(0, 30), 1500)
	for _, i := range []int{9, 10, 19, 29} {
		want := map[int]int64{9: 10 * msNs, 10: 21 * msNs, 19: 30 * msNs, 29: 50 * msNs}[i]
		if got[i] != want {
			t.Errorf("packet %d at %v, want %v", i, time.Duration(got[i]), time.Duration(want))
		}
	}
	// Oscillate: 1 s at 2 Mbit/s, 1 s at 1 Mbit/s; over 10 s the link carries
	// 15 Mbit.
	osc := newBottleneck(Oscillate(Mbit, 2*Mbit, 2*time.Second, 0.5), 0, 0)
	var last int64
	n := 0
	for ; n < 10_000 && last <= 10*int64(time.Second); n++ {
		last = osc.depart(last, 1250) // 10 kbit back to back
	}
	if bits := (n - 1) * 10000; bits < 14_990_000 || bits > 15_010_000 {
		t.Errorf("10 s of oscillation carried %d bits, want 15 Mbit", bits)
	}
	// A packet spanning a step boundary finishes at the low rate.
	b := newBottleneck(Oscillate(Mbit, 2*Mbit, 2*time.Second, 0.5), 0, 0)
	if d := b.depart(int64(time.Second)-500*int64(time.Microsecond), 250); d != int64(time.Second)+1000*int64(time.Microsecond) {
		// 1000 bits at 2 Mbit/s for 0.5 ms, the remaining 1000 bits at 1 Mbit/s take 1 ms
		t.Errorf("boundary: %v", time.Duration(d))
	}
}

func TestShaperTrace(t *testing.T) {
	// An opportunity every ms (12 Mbit/s), period 10 ms.
	tr := ConstantTrace(12*Mbit, 10)
	s := newShaper(Impairment{Rate: RateSpec{Trace: tr}}, 1, 0)
	got := departures(s, burstAt(0, 25), 1500)
	for i, d := range got {
		if want := int64(i+1) * msNs; d != want {
			t.Errorf("packet %d at %v, want %v", i, time.Duration(d), time.Duration(want))
		}
	}
	// Small packets share an opportunity: 30 × 50 bytes fit in one.
	s = newShaper(Impairment{Rate: RateSpec{Trace: tr}}, 1, 0)
	got = departures(s, burstAt(500*time.Microsecond.Nanoseconds(), 31), 50)
	if got[0] != msNs || got[29] != msNs || got[30] != 2*msNs {
		t.Errorf("shared opportunity: %v %v %v", got[0], got[29], got[30])
	}
	// An opportunity with nothing waiting is wasted: a packet arriving at 5.5 ms
	// leaves at 6 ms, not at once.
	if d := departures(s, []int64{5*msNs + msNs/2}, 1500)[0]; d != 6*msNs {
		t.Errorf("after idle: %v", time.Duration(d))
	}
	// The trace repeats: long after, the rate is still 12 Mbit/s.
	got = departures(s, burstAt(1000*msNs+msNs/2, 3), 1500)
	if got[0] != 1001*msNs || got[2] != 1003*msNs {
		t.Errorf("later cycle: %v", got)
	}
}

func TestShaperDelayOrder(t *testing.T) {
	arrivals := make([]int64, 20000)
	for i := range arrivals {
		arrivals[i] = int64(i) * 100_000 // every 0.1 ms
	}
	// No jitter: exactly the delay.
	s := newShaper(Impairment{Delay: ms(25)}, 1, 0)
	for i, d := range departures(s, arrivals, 100) {
		if d != arrivals[i]+25*msNs {
			t.Fatalf("packet %d delayed %v", i, time.Duration(d-arrivals[i]))
		}
	}
	for _, reorders := range []bool{false, true} {
		s := newShaper(Impairment{Delay: ms(25), Jitter: ms(5), JitterReorders: reorders}, 7, 0)
		got := departures(s, arrivals, 100)
		inv := 0
		var sum float64
		lo, hi := int64(math.MaxInt64), int64(0)
		for i, d := range got {
			if i > 0 && d < got[i-1] {
				inv++
			}
			dl := d - arrivals[i]
			sum += float64(dl)
			lo, hi = min(lo, dl), max(hi, dl)
		}
		mean := time.Duration(sum / float64(len(got)))
		t.Logf("jitter reorders=%v: %d inversions, delay mean %v, range %v..%v", reorders, inv, mean, time.Duration(lo), time.Duration(hi))
		if !reorders && (inv != 0 || mean < 24*time.Millisecond || mean > 26*time.Millisecond || lo < 20*msNs || hi > 30*msNs) {
			t.Errorf("in-order jitter: %d inversions, mean %v, range %v..%v", inv, mean, time.Duration(lo), time.Duration(hi))
		}
		if reorders {
			if inv == 0 {
				t.Error("jitter never reordered")
			}
			if mean < 24900*time.Microsecond || mean > 25100*time.Microsecond || lo < 20*msNs || hi > 30*msNs {
				t.Errorf("uniform jitter: mean %v, range %v..%v", mean, time.Duration(lo), time.Duration(hi))
			}
		}
	}
}

func TestShaperShares(t *testing.T) {
	const n = 1_000_000
	s := newShaper(Impairment{Loss: Bernoulli(2), Duplicate: 1, Corrupt: 0.5, Reorder: 3, Delay: ms(10)}, 3, 0)
	early := 0
	for i := range n {
		v := s.admit(int64(i), 100)
		if v.n > 0 && v.at[0] == int64(i) {
			early++
		}
	}
	st := s.stats
	check := func(name string, got uint64, base int, pct float64) {
		share := 100 * float64(got) / float64(base)
		sd := 100 * math.Sqrt(pct/100*(1-pct/100)/float64(base))
		if math.Abs(share-pct) > 5*sd {
			t.Errorf("%s: %.4f%%, want %v%% (sd %.4f)", name, share, pct, sd)
		}
	}
	check("loss", st.Lost, n, 2)
	kept := n - int(st.Lost)
	check("duplicate", st.Duplicated, kept, 1)
	check("corrupt", st.Corrupted, kept, 0.5)
	check("reorder", st.Reordered, kept+int(st.Duplicated), 3)
	if early == 0 {
		t.Error("reordered packets were not sent early")
	}
}

func TestShaperGilbertElliott(t *testing.T) {
	const n = 2_000_000
	s := newShaper(Impairment{Loss: GilbertElliott(1, 4)}, 5, 0)
	lost, bursts, run := 0, 0, 0
	for i := range n {
		if s.admit(int64(i), 100).n == 0 {
			lost++
			run++
		} else if run > 0 {
			bursts++
			run = 0
		}
	}
	mean := 100 * float64(lost) / n
	avgBurst := float64(lost) / float64(bursts)
	t.Logf("GE mean 1%% burst 4: measured %.3f%% loss, mean burst %.2f packets", mean, avgBurst)
	if mean < 0.9 || mean > 1.1 {
		t.Errorf("mean loss %.3f%%, want 1%%", mean)
	}
	if avgBurst < 3.6 || avgBurst > 4.4 {
		t.Errorf("mean burst %.2f, want 4", avgBurst)
	}
}

func TestShaperApplyKeepsOrder(t *testing.T) {
	s := newShaper(Impairment{Delay: ms(50)}, 1, 0)
	a := s.admit(0, 100).at[0]
	s.apply(Impairment{Delay: ms(10)}, msNs)
	b := s.admit(msNs, 100).at[0]
	if b < a {
		t.Errorf("after lowering the delay a packet overtook: %v < %v", b, a)
	}
	s.apply(Impairment{Delay: ms(10), JitterReorders: true, Jitter: ms(1)}, 2*msNs)
	if c := s.admit(100*msNs, 100).at[0]; c < 109*msNs || c > 111*msNs {
		t.Errorf("new delay not applied: %v", time.Duration(c))
	}
}

func TestCorrupt(t *testing.T) {
	for r := range uint64(2000) {
		pkt := make([]byte, 60)
		pkt[0] = 0x45 // IPv4, 20-byte header
		orig := append([]byte(nil), pkt...)
		corrupt(pkt, r*7919)
		diff := 0
		for i := range pkt {
			if pkt[i] != orig[i] {
				if i < 20 {
					t.Fatalf("flipped a header byte %d", i)
				}
				diff += popcount(pkt[i] ^ orig[i])
			}
		}
		if diff != 1 {
			t.Fatalf("flipped %d bits", diff)
		}
	}
}

func popcount(b byte) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

func TestPktHeap(t *testing.T) {
	var h pktHeap
	vals := []int64{5, 3, 9, 3, 1, 7, 3}
	for i, v := range vals {
		h.push(pktItem{at: v, seq: uint64(i)})
	}
	var prev pktItem
	for i := 0; h.len() > 0; i++ {
		it := h.pop()
		if i > 0 && (it.at < prev.at || it.at == prev.at && it.seq < prev.seq) {
			t.Fatalf("heap order: %+v after %+v", it, prev)
		}
		prev = it
	}
}
